-- wrk script of bench/import.py: BENCH_METHOD (POST) with BENCH_BODY, authenticated by
-- BENCH_API_KEY.
wrk.method = os.getenv("BENCH_METHOD") or "POST"
wrk.headers["Content-Type"] = "application/json"
local a = os.getenv("BENCH_API_KEY")
if a then wrk.headers["SVC-API-KEY"] = a end
if wrk.method ~= "GET" then wrk.body = os.getenv("BENCH_BODY") end
