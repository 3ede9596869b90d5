"""Conformance of Basis Theory's Python SDK `basistheory` 1.8.0 (the generation with token
children and associations) against a live Tessera. Environment as in python3_sdk.py.
"""

import uuid

import basistheory
from basistheory.api.tokens_api import TokensApi
from basistheory.exceptions import NotFoundException, UnauthorizedException
from basistheory.model.create_token_request import CreateTokenRequest
from basistheory.model.search_tokens_request import SearchTokensRequest
from basistheory.request_options import RequestOptions

from sdk_common import Run, eq, expect_error, need, plain

SDK = "python-1.8.0"
r = Run(SDK)


def client(key):
    return basistheory.ApiClient(configuration=basistheory.Configuration(host=r.url, api_key=key))


tokens = TokensApi(client(r.token_key))
state = {}


def token_create_get():
    tok = tokens.create(create_token_request=CreateTokenRequest(
        type="token", data={"name": "parent"}, metadata={"run": r.run_id, "role": "parent"}))
    got = tokens.get_by_id(tok.id)
    eq(plain(got.data), {"name": "parent"}, "data read back")
    eq(dict(got.metadata), {"run": r.run_id, "role": "parent"}, "metadata")
    state["parent"] = tok


def children():
    parent = need(state.get("parent"), "tokens create")
    child = tokens.create_child(parent.id, create_token_request=CreateTokenRequest(
        type="token", data="child-data", metadata={"run": r.run_id, "role": "child"}))
    eq(tokens.get_by_id(child.id).data, "child-data", "child data read back")
    listed = tokens.get_children(parent.id)
    eq([t.id for t in listed.data], [child.id], "children of the parent")
    state["child"] = child


def associations():
    parent = need(state.get("parent"), "tokens create")
    other = tokens.create(create_token_request=CreateTokenRequest(
        type="token", data="other", metadata={"run": r.run_id, "role": "other"}))
    tokens.create_association(parent.id, other.id)
    ids = {t.id for t in tokens.get_children(parent.id).data}
    eq(other.id in ids, True, "the associated token is a child")
    tokens.delete_association(parent.id, other.id)
    ids = {t.id for t in tokens.get_children(parent.id).data}
    eq(other.id in ids, False, "the association is gone")
    expect_error(lambda: tokens.delete_association(parent.id, other.id), NotFoundException, 404)


def search_query():
    need(state.get("child"), "children")
    page = tokens.search(search_tokens_request=SearchTokensRequest(
        query=f"metadata.run:{r.run_id} AND metadata.role:child", page=1, size=10))
    eq([t.id for t in page.data], [state["child"].id], "tokens found")
    eq(page.pagination.total_items, 1, "total_items")


def trace_id():
    # The SDK's correlation id goes out as bt-trace-id; the call must work with it.
    api = TokensApi(client(r.token_key))
    parent = need(state.get("parent"), "tokens create")
    got = api.get_by_id(parent.id, request_options=RequestOptions(correlation_id=f"trace-{r.run_id}"))
    eq(got.id, parent.id, "id")


def errors():
    expect_error(lambda: TokensApi(client("key_" + "y" * 32)).get_by_id(str(uuid.uuid4())),
                 UnauthorizedException, 401)
    expect_error(lambda: tokens.get_by_id(str(uuid.uuid4())), NotFoundException, 404)


def token_delete():
    parent = need(state.get("parent"), "tokens create")
    tokens.delete(parent.id)
    expect_error(lambda: tokens.get_by_id(parent.id), NotFoundException, 404)
    child = need(state.get("child"), "children")
    eq(tokens.get_by_id(child.id).id, child.id, "the child outlives its parent")


r.op("tokens create/get", token_create_get)
r.op("tokens children create/list", children)
r.op("tokens associations create/delete", associations)
r.op("tokens search v1 (query)", search_query)
r.op("trace id (bt-trace-id)", trace_id)
r.op("errors 401/404", errors)
r.op("tokens delete (parent)", token_delete)
r.finish()
