"""Bench set-up through the real API: an application, a pool of tokens and the proxies the
load targets use, for each destination given. Prints one JSON object.

Usage: setup.py API_BASE ADMIN_KEY PEERS_DIR POOL [NAME=DESTINATION_URL ...]

Without destinations, the proxies forward to the peers' upstream (http://127.0.0.1:18081/) and
are named `plain`, `detok` and `xform`; each NAME=URL adds `plain-NAME`, `detok-NAME` and
`xform-NAME` forwarding to URL."""
import http.client, json, sys

base, admin, peers, pool = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
destinations = [("", "http://127.0.0.1:18081/")]
for spec in sys.argv[5:]:
    name, url = spec.split("=", 1)
    destinations.append(("-" + name, url))
host, port = base.replace("http://", "").split(":")
conn = http.client.HTTPConnection(host, int(port))


def call(method, path, key, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"SVC-API-KEY": key, "Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    if res.status >= 300:
        sys.exit(f"{method} {path}: {res.status} {data!r}")
    return json.loads(data)


app = call("POST", "/applications", admin, {"name": "bench", "type": "private",
                                            "permissions": ["token:create", "token:use"]})["key"]
tokens = [call("POST", "/tokens", app, {"type": "token", "data": "4242424242424242" if i % 2 == 0 else "123"})["id"]
          for i in range(max(pool, 2))]
proxy = lambda spec: call("POST", "/proxies", admin, spec)["key"]
out = {"app_key": app, "tokens": tokens}
for suffix, upstream in destinations:
    out["plain" + suffix] = proxy({"name": "plain" + suffix, "destination_url": upstream, "require_auth": False})
    out["detok" + suffix] = proxy({"name": "detok" + suffix, "destination_url": upstream})
    out["xform" + suffix] = proxy({
        "name": "transforms" + suffix, "destination_url": upstream,
        "configuration": {"MERCHANT_ID": "m_123", "API_SECRET": "sk_test_abc"},
        "request_transform": {"code": open(peers + "/transform_request.js").read()},
        "response_transform": {"code": open(peers + "/transform_response.js").read()}})
print(json.dumps(out))
