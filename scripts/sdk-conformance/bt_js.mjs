// Conformance of `@basis-theory/basis-theory-js` 4.30.2 against a live Tessera (started by
// run.sh with --header-prefix BT): its CRUD services call `POST /tokens/`, `/applications/`,
// `/proxies/` and `/tokenize/` with a trailing slash, and its proxy helper invokes `/proxy`.
// Environment: TESSERA_URL, TESSERA_KEY, ECHO_URL, SDK_NODE_DIR.
import dns from 'node:dns';
import {
  CARD, ECHO_TRANSFORM, check, eq, expectError, future, harness, need, sameInstant, sdkRequire, uuid,
} from './harness.mjs';

const { BasisTheory } = sdkRequire('@basis-theory/basis-theory-js');
const { BasisTheoryApiError } = sdkRequire('@basis-theory/basis-theory-js/common');

const run = harness('basis-theory-js-4.30.2');
// basis-theory-js forces https on any host but `localhost`; the api listens on 127.0.0.1.
dns.setDefaultResultOrder('ipv4first');
const base = run.url.replace('://127.0.0.1', '://localhost');
const init = (key) => new BasisTheory().init(key, { apiBaseUrl: base, disableTelemetry: true });
const bt = await init(run.key);
// Tokens through a private application whose rule on / reveals (docs/migrating.md).
const btt = await init(run.tokenKey);
const state = {};
const TOKEN_PERMS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'];

// ------------------------------------------------------------------ applications

await run.op('applications create (POST /applications/)', async () => {
  const app = await bt.applications.create({
    name: `sdk-btjs-${run.runId}`, type: 'private', permissions: TOKEN_PERMS,
  });
  eq(app.name, `sdk-btjs-${run.runId}`, 'name');
  check(app.key, 'no key in the create response');
  state.app = app;
});

await run.op('applications list (GET /applications/)', async () => {
  const app = need(state.app, 'applications create');
  const page = await bt.applications.list({ size: 100 });
  check(page.data.some((a) => a.id === app.id), 'the new application is not listed');
});

await run.op('applications retrieve/update (without type)', async () => {
  const app = need(state.app, 'applications create');
  eq((await bt.applications.retrieve(app.id)).id, app.id, 'id');
  const got = await bt.applications.update(app.id, { name: `sdk-btjs-upd-${run.runId}`, permissions: TOKEN_PERMS });
  eq(got.name, `sdk-btjs-upd-${run.runId}`, 'name');
  eq(got.type, 'private', 'type kept');
});

await run.op('applications retrieveByKey', async () => {
  const app = need(state.app, 'applications create');
  const got = await (await init(app.key)).applications.retrieveByKey();
  eq(got.id, app.id, 'id of the calling application');
});

await run.op('applications regenerateKey', async () => {
  const app = need(state.app, 'applications create');
  const got = await bt.applications.regenerateKey(app.id);
  check(got.key && got.key !== app.key, 'no new key');
  state.app = got;
});

await run.op('applicationKeys create/get/getById/delete', async () => {
  const app = need(state.app, 'applications create');
  const created = await bt.applicationKeys.create(app.id);
  check(created.id && created.key, 'no id or key');
  const listed = await bt.applicationKeys.get(app.id);
  check(listed.some((k) => k.id === created.id), 'the new key is not listed');
  eq((await bt.applicationKeys.getById(app.id, created.id)).id, created.id, 'key id');
  await bt.applicationKeys.delete(app.id, created.id);
  await expectError(() => bt.applicationKeys.getById(app.id, created.id), BasisTheoryApiError, 404);
});

// ------------------------------------------------------------------ tokens

await run.op('tokens create (POST /tokens/)', async () => {
  const expiresAt = future(30);
  const tok = await btt.tokens.create({
    type: 'card', data: CARD, containers: ['/pci/btjs/'], expiresAt,
    metadata: { run: run.runId, sdk: 'btjs' }, deduplicateToken: true,
  });
  eq(tok.type, 'card', 'type');
  eq(tok.containers, ['/pci/btjs/'], 'containers');
  eq(tok.metadata, { run: run.runId, sdk: 'btjs' }, 'metadata');
  check(sameInstant(tok.expiresAt, expiresAt), `expiresAt ${tok.expiresAt} != ${expiresAt}`);
  state.token = tok;
});

await run.op('tokens retrieve (data read back)', async () => {
  const tok = need(state.token, 'tokens create');
  eq((await btt.tokens.retrieve(tok.id)).data, CARD, 'data');
});

await run.op('tokens update (PATCH merge-patch)', async () => {
  const tok = need(state.token, 'tokens create');
  const got = await btt.tokens.update(tok.id, { metadata: { run: run.runId, sdk: 'btjs', updated: 'yes' } });
  eq(got.metadata.updated, 'yes', 'metadata');
});

await run.op('tokens list (GET /tokens/?metadata.run=…)', async () => {
  const tok = need(state.token, 'tokens create');
  const page = await btt.tokens.list({ metadata: { run: run.runId } });
  eq(page.data.map((t) => t.id), [tok.id], 'listed ids');
});

await run.op('tokenize (POST /tokenize/, array)', async () => {
  const arr = await btt.tokenize([{ type: 'token', data: 'a' }, { type: 'card', data: CARD }]);
  check(Array.isArray(arr) && arr.length === 2 && arr.every((t) => t.id), `array form: ${JSON.stringify(arr)}`);
  eq((await btt.tokens.retrieve(arr[0].id)).data, 'a', 'array form data read back');
});

await run.op('tokenize (POST /tokenize/, object)', async () => {
  const obj = await btt.tokenize({ first: { type: 'token', data: 'x' }, card: { type: 'card', data: CARD } });
  check(obj?.first?.id && obj?.card?.id, `object form: ${JSON.stringify(obj)}`);
  eq((await btt.tokens.retrieve(obj.first.id)).data, 'x', 'object form data read back');
});

await run.op('idempotency (bt-idempotency-key replay)', async () => {
  const idempotencyKey = uuid();
  const body = { type: 'token', data: `idem-${run.runId}`, metadata: { idem: run.runId } };
  const first = await btt.tokens.create(body, { idempotencyKey });
  const second = await btt.tokens.create(body, { idempotencyKey });
  eq(second.id, first.id, 'the replayed token id');
  const page = await btt.tokens.list({ metadata: { idem: run.runId } });
  eq(page.data.length, 1, 'tokens created with one idempotency key');
});

// ------------------------------------------------------------------ proxies

await run.op('proxies create/list/retrieve/update/patch (trailing slash on create, list)', async () => {
  const dest = need(run.echo || undefined, 'ECHO_URL');
  const created = await bt.proxies.create({
    name: `sdk-btjs-${run.runId}`, destinationUrl: dest,
    requestTransform: { type: 'code', code: ECHO_TRANSFORM }, requireAuth: true,
  });
  check(created.key, 'no proxy key');
  const listed = await bt.proxies.list({ name: `sdk-btjs-${run.runId}` });
  eq(listed.data.map((p) => p.id), [created.id], 'list by name');
  eq((await bt.proxies.retrieve(created.id)).destinationUrl, dest, 'destinationUrl');
  const upd = await bt.proxies.update(created.id, {
    name: `sdk-btjs-${run.runId}`, destinationUrl: dest,
    requestTransform: { type: 'code', code: ECHO_TRANSFORM }, configuration: { A: '1' }, requireAuth: true,
  });
  eq(upd.configuration, { A: '1' }, 'configuration after update');
  await bt.proxies.patch(created.id, { configuration: { B: '2' } });
  eq((await bt.proxies.retrieve(created.id)).configuration, { A: '1', B: '2' }, 'configuration after patch');
  state.proxy = created;
});

await run.op('proxy invocation (bt.proxy.post: BT-PROXY-KEY, transform, sub-path, query, detokenize)', async () => {
  const px = need(state.proxy, 'proxies create');
  const tok = need(state.token, 'tokens create');
  const echoed = await bt.proxy.post({
    path: '/charges/1',
    query: { a: '1', b: 'x y' },
    headers: { 'BT-PROXY-KEY': px.key, 'X-Custom': 'kept' },
    body: { card: `{{ ${tok.id} | json: '$.number' }}`, amount: 10 },
  });
  eq(echoed.method, 'POST', 'method at the destination');
  eq(echoed.path, `${new URL(run.echo).pathname}/charges/1`, 'path at the destination');
  eq(echoed.query, { a: ['1'], b: ['x y'] }, 'query at the destination');
  eq(echoed.body, { card: CARD.number, amount: 10 }, 'detokenized body at the destination');
  eq(echoed.headers['x-transformed'], 'yes', 'header set by the request transform');
  eq(echoed.headers['x-custom'], 'kept', 'caller header');
  const leaked = Object.keys(echoed.headers).filter((h) => h.startsWith('bt-') || h.startsWith('svc-'));
  eq(leaked, [], 'prefixed headers forwarded');
});

await run.op('proxy invocation (filters: slice, pad_left, card_exp, reveal_last; a chosen id)', async () => {
  const px = need(state.proxy, 'proxies create');
  const card = await btt.tokens.create({
    id: `card_${run.runId}`, type: 'card',
    data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2031 },
  });
  eq(card.id, `card_${run.runId}`, 'the chosen id');
  const ssn = await btt.tokens.create({ type: 'token', data: '123-45-6789' });
  const echoed = await bt.proxy.post({
    headers: { 'BT-PROXY-KEY': px.key },
    body: {
      month: `{{ token: ${card.id} | json: '$.data.expiration_month' | pad_left: 2, '0' }}`,
      year: `{{ token: ${card.id} | json: '$.data.expiration_year' | to_string | slice: -2, 2 }}`,
      exp: `{{ ${card.id} | card_exp: 'MM/YY' }}`,
      ssn: `{{ ${ssn.id} | reveal_last: 4 }}`,
    },
  });
  eq(echoed.body, { month: '03', year: '31', exp: '03/31', ssn: 'XXX-XX-6789' }, 'filtered values at the destination');
  await btt.tokens.delete(card.id);
  await btt.tokens.delete(ssn.id);
});

await run.op('proxy invocation (bt-proxy-key query parameter)', async () => {
  const px = need(state.proxy, 'proxies create');
  const echoed = await bt.proxy.get({ path: '/q', query: { 'bt-proxy-key': px.key, keep: '1' } });
  eq(echoed.method, 'GET', 'method');
  eq(echoed.query, { keep: ['1'] }, 'query without the proxy key');
});

await run.op('proxies delete', async () => {
  const px = need(state.proxy, 'proxies create');
  await bt.proxies.delete(px.id);
  await expectError(() => bt.proxies.retrieve(px.id), BasisTheoryApiError, 404);
});

await run.op('tokens delete', async () => {
  const tok = need(state.token, 'tokens create');
  await btt.tokens.delete(tok.id);
  await expectError(() => btt.tokens.retrieve(tok.id), BasisTheoryApiError, 404);
});

// ------------------------------------------------------------------ errors

await run.op('errors 401/403/404/409 (BasisTheoryApiError)', async () => {
  const stranger = await init(`key_${'w'.repeat(32)}`);
  await expectError(() => stranger.tokens.list(), BasisTheoryApiError, 401);
  const reader = await bt.applications.create({
    name: `sdk-btjs-reader-${run.runId}`, type: 'private', permissions: ['token:read'],
  });
  await expectError(async () => (await init(reader.key)).applications.list(), BasisTheoryApiError, 403);
  await expectError(() => btt.tokens.retrieve(uuid()), BasisTheoryApiError, 404);
  const px = await bt.proxies.create({
    name: `sdk-btjs-409-${run.runId}`, destinationUrl: need(run.echo || undefined, 'ECHO_URL'),
    application: { id: reader.id }, requireAuth: true,
  });
  await expectError(() => bt.applications.delete(reader.id), BasisTheoryApiError, 409);
  await bt.proxies.delete(px.id);
  await bt.applications.delete(reader.id);
});

await run.op('applications delete', async () => {
  const app = need(state.app, 'applications create');
  await bt.applications.delete(app.id);
  await expectError(() => bt.applications.retrieve(app.id), BasisTheoryApiError, 404);
});

run.finish();
