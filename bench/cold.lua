-- wrk script for cold-token loads: each request names two tokens drawn at random from
-- BENCH_TOKENS (comma-separated ids), in the payment-like body of ../shared/bench-peers/post.lua.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local k = os.getenv("BENCH_PROXY_KEY")
if k then wrk.headers["SVC-PROXY-KEY"] = k end
local a = os.getenv("BENCH_API_KEY")
if a then wrk.headers["SVC-API-KEY"] = a end
local tokens = {}
for id in string.gmatch(os.getenv("BENCH_TOKENS") or "", "[^,]+") do
  tokens[#tokens + 1] = id
end
math.randomseed(os.time())
request = function()
  local first = tokens[math.random(#tokens)]
  local second = tokens[math.random(#tokens)]
  return wrk.format(nil, nil, nil,
    '{"card":{"number":"{{' .. first .. '}}","cvc":"{{' .. second .. '}}"},"amount":1000,"currency":"usd"}')
end
