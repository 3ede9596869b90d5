"""Conformance of Basis Theory's Python SDK `basistheory` 3.0.0 against a live Tessera.

Run by run.sh with the SDK's virtualenv: TESSERA_URL (the api, started with --header-prefix BT),
TESSERA_KEY (a management key holding every permission) and ECHO_URL (a local echo server) in
the environment. Every call goes through the SDK method a user would call; results are checked.
"""

import datetime
import json
import time
import uuid

import basistheory
from basistheory.api.application_keys_api import ApplicationKeysApi
from basistheory.api.applications_api import ApplicationsApi
from basistheory.api.detokenize_api import DetokenizeApi
from basistheory.api.proxies_api import ProxiesApi
from basistheory.api.tokenize_api import TokenizeApi
from basistheory.api.tokens_api import TokensApi
from basistheory.exceptions import (
    ApiException,
    ForbiddenException,
    NotFoundException,
    UnauthorizedException,
)
from basistheory.model.access_rule import AccessRule
from basistheory.model.application import Application
from basistheory.model.create_application_request import CreateApplicationRequest
from basistheory.model.create_proxy_request import CreateProxyRequest
from basistheory.model.create_token_request import CreateTokenRequest
from basistheory.model.patch_proxy_request import PatchProxyRequest
from basistheory.model.proxy_transform import ProxyTransform
from basistheory.model.search_tokens_request import SearchTokensRequest
from basistheory.model.search_tokens_request_v2 import SearchTokensRequestV2
from basistheory.model.update_application_request import UpdateApplicationRequest
from basistheory.model.update_proxy_request import UpdateProxyRequest
from basistheory.model.update_token_request import UpdateTokenRequest
from basistheory.request_options import RequestOptions

from sdk_common import Run, check, eq, expect_error, future, need, plain, same_instant

SDK = "python-3.0.0"
r = Run(SDK)

CARD = {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cvc": "123"}
TOKEN_PERMS = ["token:create", "token:read", "token:update", "token:delete", "token:use"]


def client(key):
    """A fresh ApiClient per key: the SDK's RequestOptions stick to the client they were used on
    (set_default_header), so calls that use them get a client of their own."""
    return basistheory.ApiClient(configuration=basistheory.Configuration(host=r.url, api_key=key))


admin = client(r.key)
apps = ApplicationsApi(admin)
app_keys = ApplicationKeysApi(admin)
token_client = client(r.token_key)
tokens = TokensApi(token_client)
proxies = ProxiesApi(admin)
state = {}


# ---------------------------------------------------------------- applications


def app_create():
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-{r.run_id}", type="private", permissions=TOKEN_PERMS))
    eq(app.name, f"sdk-py3-{r.run_id}", "name")
    eq(app.type, "private", "type")
    eq(sorted(app.permissions), sorted(TOKEN_PERMS), "permissions")
    check(getattr(app, "key", None), "no key in the create response")
    state["app"] = app


def app_get():
    app = need(state.get("app"), "applications create")
    got = apps.get_by_id(app.id)
    eq(got.id, app.id, "id")
    eq(got.name, app.name, "name")
    eq(got.type, "private", "type")


def app_list():
    app = need(state.get("app"), "applications create")
    page = apps.get(size=100)
    check(any(a.id == app.id for a in page.data), "the new application is not in the list")
    check(page.pagination.page_size is not None, "no pagination.page_size")


def app_list_filtered():
    app = need(state.get("app"), "applications create")
    page = apps.get(id=[app.id], type=["private"])
    eq([a.id for a in page.data], [app.id], "ids listed with id= and type= filters")


def app_update():
    app = need(state.get("app"), "applications create")
    new_name = f"sdk-py3-renamed-{r.run_id}"
    got = apps.update(app.id, UpdateApplicationRequest(name=new_name, permissions=TOKEN_PERMS))
    eq(got.name, new_name, "name")
    eq(got.type, "private", "type kept")
    eq(apps.get_by_id(app.id).name, new_name, "name read back")


def app_get_by_key():
    app = need(state.get("app"), "applications create")
    got = ApplicationsApi(client(app.key)).get_by_key()
    eq(got.id, app.id, "id of the calling application")


def app_regenerate():
    app = need(state.get("app"), "applications create")
    got = apps.regenerate_key(app.id)
    check(got.key and got.key != app.key, "no new key")
    TokensApi(client(got.key)).get(size=1)
    expect_error(lambda: TokensApi(client(app.key)).get(size=1), UnauthorizedException, 401)
    state["app"] = got


def app_keys_crud():
    app = need(state.get("app"), "applications create")
    created = app_keys.create(app.id)
    check(created.id and created.key, "no id or key in the created key")
    listed = app_keys.get(app.id)
    ids = [k.id for k in listed]
    check(created.id in ids, "the new key is not listed")
    check(all(not getattr(k, "key", None) for k in listed), "a listed key shows its secret")
    one = app_keys.get_by_id(app.id, created.id)
    eq(one.id, created.id, "key id")
    TokensApi(client(created.key)).get(size=1)  # the new key works
    app_keys.delete(app.id, created.id)
    expect_error(lambda: app_keys.get_by_id(app.id, created.id), NotFoundException, 404)
    expect_error(lambda: TokensApi(client(created.key)).get(size=1), UnauthorizedException, 401)


def app_create_expires():
    expires = future(10)
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-exp-{r.run_id}", type="private", permissions=["token:read"],
        expires_at=expires))
    check(app.key, "no key")
    check(same_instant(app.expires_at, expires), f"expires_at {app.expires_at!r} != {expires}")
    check(same_instant(apps.get_by_id(app.id).expires_at, expires), "expires_at read back")
    TokensApi(client(app.key)).get(size=1)  # usable before it expires
    apps.delete(app.id)


def app_expiry_enforced():
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=3)
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-soon-{r.run_id}", type="private", permissions=["token:read"],
        expires_at=soon.isoformat().replace("+00:00", "Z")))
    TokensApi(client(app.key)).get(size=1)
    time.sleep(max(0.0, (soon - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1.5)
    expect_error(lambda: TokensApi(client(app.key)).get(size=1), UnauthorizedException, 401)
    apps.delete(app.id)


def app_regenerate_revokes_keys():
    app = need(state.get("app"), "applications create")
    extra = app_keys.create(app.id)
    TokensApi(client(extra.key)).get(size=1)
    fresh = apps.regenerate_key(app.id)
    expect_error(lambda: TokensApi(client(extra.key)).get(size=1), UnauthorizedException, 401)
    TokensApi(client(fresh.key)).get(size=1)
    eq(len(app_keys.get(app.id)), 1, "keys after regenerate")
    state["app"] = fresh


def app_create_no_key():
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-nokey-{r.run_id}", type="private", permissions=["token:read"],
        create_key=False))
    check(not getattr(app, "key", None), f"a key was created: {getattr(app, 'key', None)!r}")
    eq(app_keys.get(app.id), [], "keys of an application created without one")
    apps.delete(app.id)


def app_delete():
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-del-{r.run_id}", type="private", permissions=["token:read"]))
    apps.delete(app.id)
    expect_error(lambda: apps.get_by_id(app.id), NotFoundException, 404)


# ---------------------------------------------------------------- tokens


def token_create():
    expires = future(30)
    tok = tokens.create(CreateTokenRequest(
        type="card", data=CARD, containers=["/pci/sdk/"], expires_at=expires,
        metadata={"run": r.run_id, "sdk": "py3"}, deduplicate_token=True))
    eq(tok.type, "card", "type")
    eq(tok.containers, ["/pci/sdk/"], "containers")
    eq(dict(tok.metadata), {"run": r.run_id, "sdk": "py3"}, "metadata")
    check(same_instant(tok.expires_at, expires), f"expires_at {tok.expires_at!r} != {expires}")
    again = tokens.create(CreateTokenRequest(
        type="card", data=CARD, containers=["/pci/sdk/"], deduplicate_token=True))
    eq(again.id, tok.id, "deduplicated id")
    state["token"] = tok


def token_get():
    tok = need(state.get("token"), "tokens create")
    got = tokens.get_by_id(tok.id)
    eq(plain(got.data), CARD, "data read back")
    eq(dict(got.metadata), {"run": r.run_id, "sdk": "py3"}, "metadata")
    eq(got.containers, ["/pci/sdk/"], "containers")


MASKED = {"number": "XXXXXXXXXXXX4242", "expiration_month": 12, "expiration_year": 2030}


def rules_with_transforms():
    """Access rules with a transform, created through the SDK's own models (as Terraform and
    SDK users write them), decide what each application reads."""
    tok = need(state.get("token"), "tokens create")
    shown = {}
    for transform in ("reveal", "mask", "redact"):
        app = apps.create(CreateApplicationRequest(
            name=f"sdk-py3-{transform}-{r.run_id}", type="private",
            rules=[AccessRule(description=f"cards, {transform}", priority=1, container="/pci/",
                              transform=transform, permissions=["token:read"])]))
        eq(app.rules[0].transform, transform, "the rule's transform")
        got = TokensApi(client(app.key)).get_by_id(tok.id)
        shown[transform] = plain(getattr(got, "data", None))
        apps.delete(app.id)
    eq(shown["reveal"], CARD, "reveal: the plaintext")
    eq(shown["mask"], MASKED, "mask: the card's mask, without its CVC")
    eq(shown["redact"], None, "redact: no data")


def implicit_mask():
    """Under --implicit-transform mask, plain token:read reads a card as Basis Theory shows it."""
    tok = need(state.get("token"), "tokens create")
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-plain-{r.run_id}", type="private", permissions=["token:read"]))
    got = TokensApi(client(app.key)).get_by_id(tok.id)
    eq(plain(got.data), MASKED, "a plain token:read key reads the mask")
    apps.delete(app.id)


def own_mask():
    """A token created through the SDK with its own mask reads back as that mask to a mask
    reader, and as the plaintext (with the mask as stored) to a revealer."""
    mask = {"last4": "{{ data.number | last4 }}", "brand": "visa"}
    tok = tokens.create(CreateTokenRequest(
        type="card", data=CARD, mask=mask, containers=["/pci/mask/"],
        metadata={"mask_run": r.run_id}))
    eq(plain(tokens.get_by_id(tok.id).mask), mask, "the mask as stored, to a revealer")
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-mask-{r.run_id}", type="private",
        rules=[AccessRule(priority=1, container="/pci/", transform="mask",
                          permissions=["token:read"])]))
    got = TokensApi(client(app.key)).get_by_id(tok.id)
    eq(plain(got.data), {"last4": "4242", "brand": "visa"}, "a mask reader reads the mask")
    eq(getattr(got, "mask", None), None, "and not the mask itself")
    apps.delete(app.id)


def token_search_permission():
    tok = need(state.get("token"), "tokens create")
    app = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-search-{r.run_id}", type="private", permissions=["token:search"]))
    eq(list(app.permissions), ["token:search"], "permissions")
    searcher = TokensApi(client(app.key))
    found = searcher.search_v2(search_tokens_request_v2=SearchTokensRequestV2(
        query=f"type:card AND metadata.run:{r.run_id}", size=10))
    eq([t.id for t in found.data], [tok.id], "found with token:search")
    eq(plain(found.data[0].data), MASKED, "and shown masked (implicit transform)")
    expect_error(lambda: searcher.get_by_id(tok.id), ForbiddenException, 403)
    apps.delete(app.id)


def token_update():
    tok = need(state.get("token"), "tokens create")
    got = tokens.update(tok.id, UpdateTokenRequest(
        metadata={"run": r.run_id, "sdk": "py3", "updated": "yes"}, deduplicate_token=False))
    eq(dict(got.metadata)["updated"], "yes", "metadata after update")
    eq(dict(tokens.get_by_id(tok.id).metadata)["updated"], "yes", "metadata read back")


def token_list():
    tok = need(state.get("token"), "tokens create")
    by_id = tokens.get(id=[tok.id])
    eq([t.id for t in by_id.data], [tok.id], "list by id")
    by_meta = tokens.get(metadata={"run": r.run_id, "sdk": "py3"})
    check(tok.id in [t.id for t in by_meta.data], "list by metadata (deepObject) misses the token")


def tokenize_array():
    arr = TokenizeApi(token_client).tokenize(body=[
        {"type": "token", "data": "a", "metadata": {"run": r.run_id}},
        {"type": "card", "data": CARD},
    ])
    check(isinstance(arr, list) and len(arr) == 2, f"array form answered {arr!r}")
    check(all(t.get("id") for t in arr), "array form: a token without id")
    eq(tokens.get_by_id(arr[0]["id"]).data, "a", "array form data read back")


def tokenize_object():
    obj = TokenizeApi(token_client).tokenize(body={
        "first": {"type": "token", "data": "x"},
        "card": {"type": "card", "data": CARD},
    })
    check(isinstance(obj, dict) and set(obj) == {"first", "card"}, f"object form answered {obj!r}")
    eq(obj["card"]["type"], "card", "object form card type")
    eq(tokens.get_by_id(obj["first"]["id"]).data, "x", "object form data read back")


def tokenize_single():
    single = TokenizeApi(token_client).tokenize(body={"type": "token", "data": {"k": "v"}})
    check(isinstance(single, dict) and single.get("id"), f"single form answered {single!r}")
    eq(plain(tokens.get_by_id(single["id"]).data), {"k": "v"}, "single form data read back")


def detokenize():
    tok = need(state.get("token"), "tokens create")
    # The SDK's model has no response type for detokenize (it returns None); a user reads the
    # answer with _preload_content=False, the generated client's raw-response switch.
    resp = DetokenizeApi(token_client).detokenize(
        body={"n": f"{{{{ {tok.id} | json: '$.number' }}}}", "whole": f"{{{{ {tok.id} }}}}"},
        _preload_content=False)
    got = json.loads(resp.data)
    eq(got, {"n": CARD["number"], "whole": CARD}, "detokenized body")


def cursor_walk():
    created = set()
    for i in range(7):
        t = tokens.create(CreateTokenRequest(
            type="token", data=f"walk-{i}", metadata={"walk": r.run_id}))
        created.add(t.id)
    state["walk"] = created
    seen = []
    start = None
    pages = 0
    for _ in range(1000):
        page = tokens.get_v2(size=3, **({"start": start} if start else {}))
        check(len(page.data) <= 3, f"a page of {len(page.data)} tokens with size=3")
        seen.extend(t.id for t in page.data)
        pages += 1
        if pages == 1:
            # Tokens created during the walk must not shift it: no repeats, nothing skipped.
            for i in range(2):
                tokens.create(CreateTokenRequest(type="token", data=f"during-{i}"))
        start = getattr(page.pagination, "next", None)
        if not start:
            break
    check(pages >= 3, f"7 tokens at size 3 came in {pages} page(s)")
    dups = {i for i in seen if seen.count(i) > 1}
    check(not dups, f"tokens returned twice: {sorted(dups)}")
    missing = created - set(seen)
    check(not missing, f"tokens never returned: {sorted(missing)}")


def search_v2():
    walk = need(state.get("walk"), "the cursor walk's tokens")
    seen = []
    start = None
    for _ in range(100):
        req = SearchTokensRequestV2(query=f"metadata.walk:{r.run_id}", size=3)
        if start:
            req = SearchTokensRequestV2(query=f"metadata.walk:{r.run_id}", size=3, start=start)
        page = tokens.search_v2(search_tokens_request_v2=req)
        seen.extend(t.id for t in page.data)
        start = getattr(page.pagination, "next", None)
        if not start:
            break
    eq(sorted(seen), sorted(walk), "tokens found by metadata.walk")
    cards = tokens.search_v2(search_tokens_request_v2=SearchTokensRequestV2(
        query=f"type:card AND metadata.run:{r.run_id}", size=100))
    tok = need(state.get("token"), "tokens create")
    eq([t.id for t in cards.data], [tok.id], "type:card AND metadata.run")


def search_v1():
    walk = need(state.get("walk"), "the cursor walk's tokens")
    page = tokens.search(search_tokens_request=SearchTokensRequest(
        query=f"metadata.walk:{r.run_id}", page=1, size=5))
    eq(page.pagination.total_items, 7, "total_items")
    eq(len(page.data), 5, "page size")
    check({t.id for t in page.data} <= walk, "a token outside the query")


def idempotency():
    key = str(uuid.uuid4())
    body = dict(type="token", data=f"idem-{r.run_id}", metadata={"idem": r.run_id})
    opts = RequestOptions(idempotency_key=key)
    # A client of its own: the SDK keeps the header on the client after the call.
    first = TokensApi(client(r.token_key)).create(CreateTokenRequest(**body), request_options=opts)
    second = TokensApi(client(r.token_key)).create(CreateTokenRequest(**body), request_options=opts)
    eq(second.id, first.id, "the replayed token id")
    found = tokens.get(metadata={"idem": r.run_id})
    eq(len(found.data), 1, "tokens created with one idempotency key")


def token_delete():
    tok = need(state.get("token"), "tokens create")
    tokens.delete(tok.id)
    expect_error(lambda: tokens.get_by_id(tok.id), NotFoundException, 404)


# ---------------------------------------------------------------- proxies

ECHO_TRANSFORM = (
    "module.exports = async function (req) {\n"
    "  const { body, headers } = req.args;\n"
    "  return { body, headers: { ...headers, 'x-transformed': 'yes' } };\n"
    "};"
)


# The SDK's proxy models accept only `https://` destinations (a client-side check), so these
# proxies name an https host that is never called; invocation is checked with basis-theory-js.
DEST = "https://destination.example/v1"


def proxy_crud():
    dest = DEST
    created = proxies.create(CreateProxyRequest(
        name=f"sdk-py3-{r.run_id}", destination_url=dest,
        request_transform=ProxyTransform(type="code", code=ECHO_TRANSFORM),
        configuration={"A": "1"}, require_auth=True))
    check(created.key, "no proxy key")
    eq(created.name, f"sdk-py3-{r.run_id}", "name")
    got = proxies.get_by_id(created.id)
    eq(got.destination_url, dest, "destination_url")
    eq(dict(got.configuration), {"A": "1"}, "configuration")
    listed = proxies.get(name=f"sdk-py3-{r.run_id}")
    eq([p.id for p in listed.data], [created.id], "list by name")
    upd = proxies.update(created.id, UpdateProxyRequest(
        name=f"sdk-py3-upd-{r.run_id}", destination_url=dest, configuration={"A": "2"}))
    eq(upd.name, f"sdk-py3-upd-{r.run_id}", "name after update")
    eq(dict(upd.configuration), {"A": "2"}, "configuration after update")
    proxies.patch(created.id, PatchProxyRequest(configuration={"B": "3"}))
    after = proxies.get_by_id(created.id)
    eq(dict(after.configuration), {"A": "2", "B": "3"}, "configuration after patch (merged)")
    eq(after.name, f"sdk-py3-upd-{r.run_id}", "name kept by patch")
    proxies.delete(created.id)
    expect_error(lambda: proxies.get_by_id(created.id), NotFoundException, 404)


# ---------------------------------------------------------------- errors


def errors():
    expect_error(lambda: ApplicationsApi(client("key_" + "x" * 32)).get(), UnauthorizedException, 401)
    reader = apps.create(CreateApplicationRequest(
        name=f"sdk-py3-reader-{r.run_id}", type="private", permissions=["token:read"]))
    expect_error(lambda: ApplicationsApi(client(reader.key)).get(), ForbiddenException, 403)
    expect_error(lambda: tokens.get_by_id(str(uuid.uuid4())), NotFoundException, 404)
    # 409: an application that a proxy acts as cannot be deleted.
    px = proxies.create(CreateProxyRequest(
        name=f"sdk-py3-409-{r.run_id}", destination_url=DEST,
        application=Application(id=reader.id), require_auth=True))
    expect_error(lambda: apps.delete(reader.id), ApiException, 409)
    proxies.delete(px.id)
    apps.delete(reader.id)


def token_alias_id():
    tok = tokens.create(CreateTokenRequest(
        id="{{ data.number | alias_card: true, true }}", type="card",
        data={"number": "4242424242424242", "expiration_month": 3, "expiration_year": 2031}))
    check(tok.id.startswith("42424242") and tok.id.endswith("4242") and len(tok.id) == 16,
          f"alias id {tok.id}")
    check(tok.id != "4242424242424242", "the alias is the card number")
    got = tokens.get_by_id(tok.id)
    eq(plain(got.data)["number"], "4242424242424242", "data read back by the alias")
    tokens.delete(tok.id)


def token_search_indexes():
    last4 = str(int(time.time() * 1000))[-4:]
    tok = tokens.create(CreateTokenRequest(
        type="token", data=f"py-{r.run_id}-{last4}", search_indexes=["{{ data | last4 }}"],
        metadata={"run": r.run_id}))
    eq(tok.search_indexes, ["{{ data | last4 }}"], "search_indexes answered")
    found = tokens.search_v2(search_tokens_request_v2=SearchTokensRequestV2(
        query=f"data:{last4} AND metadata.run:{r.run_id}"))
    eq([t.id for t in found.data], [tok.id], "found by data:")


def token_ssn():
    tok = tokens.create(CreateTokenRequest(type="social_security_number", data="876-54-3210"))
    eq(tok.type, "social_security_number", "type")
    eq(tok.containers, ["/pii/high/"], "default container")
    expect_error(lambda: tokens.create(CreateTokenRequest(type="social_security_number", data="8765")),
                 ApiException, 400)


r.op("applications create", app_create)
r.op("applications get", app_get)
r.op("applications list", app_list)
r.op("applications list (id, type filters)", app_list_filtered)
r.op("applications update (without type)", app_update)
r.op("applications getByKey", app_get_by_key)
r.op("applications regenerate", app_regenerate)
r.op("application keys create/list/get/delete", app_keys_crud)
r.op("applications create (expires_at)", app_create_expires)
r.op("applications create (create_key false)", app_create_no_key)
r.op("applications expires_at enforced (key refused after it)", app_expiry_enforced)
r.op("applications regenerate revokes every key", app_regenerate_revokes_keys)
r.op("applications delete", app_delete)
r.op("tokens create (card, containers, expiry, metadata, dedup)", token_create)
r.op("tokens get (data read back)", token_get)
r.op("applications with rules carrying transforms (reveal, mask, redact)", rules_with_transforms)
r.op("implicit transform mask (plain token:read reads the mask)", implicit_mask)
r.op("token:search (searchV2, no read by id)", token_search_permission)
r.op("tokens create with its own mask, read back by a mask reader", own_mask)
r.op("tokens update (metadata, deduplicate_token)", token_update)
r.op("tokens list (id, metadata deepObject)", token_list)
r.op("tokenize (array)", tokenize_array)
r.op("tokenize (object of token requests)", tokenize_object)
r.op("tokenize (single token request)", tokenize_single)
r.op("detokenize", detokenize)
r.op("tokens listV2 cursor walk (7 tokens, size 3)", cursor_walk)
r.op("tokens searchV2 (query)", search_v2)
r.op("tokens search v1 (query)", search_v1)
r.op("idempotency (BT-IDEMPOTENCY-KEY replay)", idempotency)
r.op("tokens delete", token_delete)
r.op("proxies create/get/list/update/patch/delete", proxy_crud)
r.op("errors 401/403/404/409", errors)
r.op("tokens create with an alias id (read back by it)", token_alias_id)
r.op("tokens create with search_indexes, found by a data: term", token_search_indexes)
r.op("tokens create an SSN (social_security_number)", token_ssn)
r.finish()
