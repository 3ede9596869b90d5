// Conformance of Basis Theory's Node SDK `@basis-theory/node-sdk` 5.7.0 against a live Tessera
// (started by run.sh with --header-prefix BT). Environment: TESSERA_URL, TESSERA_KEY (a
// management key holding every permission), ECHO_URL, SDK_NODE_DIR.
import {
  CARD, ECHO_TRANSFORM, check, eq, expectError, future, harness, need, sameInstant, sdkRequire, uuid,
} from './harness.mjs';
import { startReceiver } from './webhook_receiver.mjs';

const { BasisTheoryClient, BasisTheory, BasisTheoryError } = sdkRequire('@basis-theory/node-sdk');

const run = harness('node-sdk-5.7.0');
const client = (apiKey) => new BasisTheoryClient({ apiKey, baseUrl: run.url, maxRetries: 0 });
const admin = client(run.key);
// Tokens through a private application whose rule on / reveals (docs/migrating.md).
const tokens = client(run.tokenKey).tokens;
const state = {};
const TOKEN_PERMS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'];

async function collect(pageable) {
  const items = [];
  for await (const item of pageable) items.push(item);
  return items;
}

// ------------------------------------------------------------------ applications

await run.op('applications create', async () => {
  const app = await admin.applications.create({
    name: `sdk-node-${run.runId}`, type: 'private', permissions: TOKEN_PERMS,
  });
  eq(app.name, `sdk-node-${run.runId}`, 'name');
  eq(app.type, 'private', 'type');
  eq([...app.permissions].sort(), [...TOKEN_PERMS].sort(), 'permissions');
  check(app.key, 'no key in the create response');
  state.app = app;
});

await run.op('applications get', async () => {
  const app = need(state.app, 'applications create');
  const got = await admin.applications.get(app.id);
  eq(got.id, app.id, 'id');
  eq(got.name, app.name, 'name');
});

await run.op('applications list (for await over pages)', async () => {
  const app = need(state.app, 'applications create');
  const all = await collect(await admin.applications.list({ size: 2 }));
  const ids = all.map((a) => a.id);
  check(ids.includes(app.id), 'the new application is not listed');
  check(new Set(ids).size === ids.length, 'an application listed twice');
});

await run.op('applications list (id, type filters)', async () => {
  const app = need(state.app, 'applications create');
  const page = await admin.applications.list({ id: [app.id], type: 'private' });
  eq(page.data.map((a) => a.id), [app.id], 'filtered list');
});

await run.op('applications update (without type)', async () => {
  const app = need(state.app, 'applications create');
  const name = `sdk-node-renamed-${run.runId}`;
  const got = await admin.applications.update(app.id, { name, permissions: TOKEN_PERMS });
  eq(got.name, name, 'name');
  eq(got.type, 'private', 'type kept');
});

await run.op('applications getByKey', async () => {
  const app = need(state.app, 'applications create');
  const got = await client(app.key).applications.getByKey();
  eq(got.id, app.id, 'id of the calling application');
});

await run.op('applicationKeys create/list/get/delete', async () => {
  const app = need(state.app, 'applications create');
  const created = await admin.applicationKeys.create(app.id);
  check(created.id && created.key, 'no id or key in the created key');
  const listed = await admin.applicationKeys.list(app.id);
  check(Array.isArray(listed), `list answered ${JSON.stringify(listed)}`);
  check(listed.some((k) => k.id === created.id), 'the new key is not listed');
  check(listed.every((k) => !k.key), 'a listed key shows its secret');
  const one = await admin.applicationKeys.get(app.id, created.id);
  eq(one.id, created.id, 'key id');
  await client(created.key).tokens.detokenize({ a: 1 }); // the new key works
  await admin.applicationKeys.delete(app.id, created.id);
  await expectError(() => admin.applicationKeys.get(app.id, created.id), BasisTheory.NotFoundError, 404);
  await expectError(() => client(created.key).tokens.detokenize({ a: 1 }), BasisTheory.UnauthorizedError, 401);
});

await run.op('applications create (createKey false)', async () => {
  const app = await admin.applications.create({
    name: `sdk-node-nokey-${run.runId}`, type: 'private', permissions: ['token:read'], createKey: false,
  });
  check(!app.key, `a key was created: ${app.key}`);
  eq(await admin.applicationKeys.list(app.id), [], 'keys of an application created without one');
  await admin.applications.delete(app.id);
});

await run.op('applications delete', async () => {
  const app = await admin.applications.create({
    name: `sdk-node-del-${run.runId}`, type: 'private', permissions: ['token:read'],
  });
  await admin.applications.delete(app.id);
  await expectError(() => admin.applications.get(app.id), BasisTheory.NotFoundError, 404);
});

// ------------------------------------------------------------------ tokens

await run.op('tokens create (card, containers, expiry, metadata, dedup)', async () => {
  const expiresAt = future(30);
  const tok = await tokens.create({
    type: 'card', data: CARD, containers: ['/pci/node/'], expiresAt,
    metadata: { run: run.runId, sdk: 'node' }, deduplicateToken: true,
  });
  eq(tok.type, 'card', 'type');
  eq(tok.containers, ['/pci/node/'], 'containers');
  eq(tok.metadata, { run: run.runId, sdk: 'node' }, 'metadata');
  check(sameInstant(tok.expiresAt, expiresAt), `expiresAt ${tok.expiresAt} != ${expiresAt}`);
  const again = await tokens.create({
    type: 'card', data: CARD, containers: ['/pci/node/'], deduplicateToken: true,
  });
  eq(again.id, tok.id, 'deduplicated id');
  state.token = tok;
});

await run.op('tokens get (data read back)', async () => {
  const tok = need(state.token, 'tokens create');
  const got = await tokens.get(tok.id);
  eq(got.data, CARD, 'data');
  eq(got.metadata, { run: run.runId, sdk: 'node' }, 'metadata');
});

await run.op('tokens update (metadata, deduplicateToken)', async () => {
  const tok = need(state.token, 'tokens create');
  const got = await tokens.update(tok.id, {
    metadata: { run: run.runId, sdk: 'node', updated: 'yes' }, deduplicateToken: false,
  });
  eq(got.metadata.updated, 'yes', 'metadata after update');
  eq((await tokens.get(tok.id)).metadata.updated, 'yes', 'metadata read back');
});

await run.op('tokenize (array)', async () => {
  const arr = await tokens.tokenize([
    { type: 'token', data: 'a' },
    { type: 'card', data: CARD },
  ]);
  check(Array.isArray(arr) && arr.length === 2 && arr.every((t) => t.id), `array form: ${JSON.stringify(arr)}`);
  eq((await tokens.get(arr[0].id)).data, 'a', 'array form data read back');
});

await run.op('tokenize (object of token requests)', async () => {
  const obj = await tokens.tokenize({
    first: { type: 'token', data: 'x' },
    card: { type: 'card', data: CARD },
  });
  check(obj && obj.first?.id && obj.card?.id, `object form: ${JSON.stringify(obj)}`);
  eq((await tokens.get(obj.first.id)).data, 'x', 'object form data read back');
});

await run.op('tokenize (single token request)', async () => {
  const single = await tokens.tokenize({ type: 'token', data: { k: 'v' } });
  check(single?.id, `single form: ${JSON.stringify(single)}`);
  eq((await tokens.get(single.id)).data, { k: 'v' }, 'single form data read back');
});

await run.op('detokenize', async () => {
  const tok = need(state.token, 'tokens create');
  const got = await tokens.detokenize({
    n: `{{ ${tok.id} | json: '$.number' }}`,
    whole: `{{ ${tok.id} }}`,
  });
  eq(got, { n: CARD.number, whole: CARD }, 'detokenized body');
});

await run.op('tokens listV2 cursor walk (7 tokens, size 3)', async () => {
  const created = new Set();
  for (let i = 0; i < 7; i += 1) {
    const t = await tokens.create({ type: 'token', data: `walk-${i}`, metadata: { walk: run.runId } });
    created.add(t.id);
  }
  state.walk = created;
  // Page by page, as the reference shows, checking each page's size.
  let page = await tokens.listV2({ size: 3 });
  const seen = [];
  for (let guard = 0; guard < 1000; guard += 1) {
    check(page.data.length <= 3, `a page of ${page.data.length} with size 3`);
    seen.push(...page.data.map((t) => t.id));
    if (!page.hasNextPage()) break;
    page = await page.getNextPage();
  }
  const dups = seen.filter((id, i) => seen.indexOf(id) !== i);
  check(dups.length === 0, `tokens returned twice: ${dups}`);
  const missing = [...created].filter((id) => !seen.includes(id));
  check(missing.length === 0, `tokens never returned: ${missing}`);
});

await run.op('tokens listV2 (for await, metadata filter sent as JSON)', async () => {
  const walk = need(state.walk, 'the cursor walk');
  const filtered = (await collect(await tokens.listV2({ metadata: { walk: run.runId }, size: 3 }))).map((t) => t.id);
  eq([...filtered].sort(), [...walk].sort(), 'listV2 filtered by metadata');
});

await run.op('tokens searchV2 (query)', async () => {
  const walk = need(state.walk, 'the cursor walk');
  const found = (await collect(await tokens.searchV2({ query: `metadata.walk:${run.runId}`, size: 3 }))).map((t) => t.id);
  eq([...found].sort(), [...walk].sort(), 'tokens found by metadata.walk');
  const tok = need(state.token, 'tokens create');
  const cards = await collect(await tokens.searchV2({ query: `type:card AND metadata.run:${run.runId}` }));
  eq(cards.map((t) => t.id), [tok.id], 'type:card AND metadata.run');
});

await run.op('tokens searchV2 (a field that cannot be searched: BadRequestError)', async () => {
  const e = await expectError(() => tokens.searchV2({ query: 'enrichments:4242' }), BasisTheory.BadRequestError, 400);
  check(JSON.stringify(e.body).includes('enrichments'), `the problem does not name the term: ${JSON.stringify(e.body)}`);
});

await run.op('tokens create with searchIndexes, found by a data: term', async () => {
  const last4 = String(Date.now()).slice(-4);
  const tok = await tokens.create({
    type: 'token', data: `acct-${run.runId}-${last4}`, metadata: { run: run.runId },
    searchIndexes: ['{{ data | last4 }}', '{{ data }}'],
  });
  eq(tok.searchIndexes, ['{{ data | last4 }}', '{{ data }}'], 'searchIndexes answered');
  const found = await collect(await tokens.searchV2({ query: `data:${last4} AND metadata.run:${run.runId}` }));
  eq(found.map((t) => t.id), [tok.id], 'found by data:');
  const whole = await collect(await tokens.searchV2({ query: `data:"acct-${run.runId}-${last4}"` }));
  eq(whole.map((t) => t.id), [tok.id], 'found by the whole value');
});

await run.op('tokens create with a fingerprintExpression that deduplicates', async () => {
  const account = `${Date.now()}`.slice(-10);
  const body = (routing) => ({
    type: 'token', deduplicateToken: true, fingerprintExpression: '{{ data.account_number }}',
    data: { account_number: account, routing_number: routing },
  });
  const first = await tokens.create(body('021000021'));
  eq(first.fingerprintExpression, '{{ data.account_number }}', 'fingerprintExpression answered');
  const again = await tokens.create(body('011000015'));
  eq(again.id, first.id, 'deduplicated by the expression');
});

await run.op('tokens create an SSN (social_security_number: validation, defaults)', async () => {
  const ssn = await tokens.create({ type: 'social_security_number', data: '987-65-4320' });
  eq(ssn.type, 'social_security_number', 'type');
  eq(ssn.containers, ['/pii/high/'], 'default container');
  eq(ssn.searchIndexes, ["{{ data }}", "{{ data | replace: '-' }}", '{{ data | last4 }}'], 'default indexes');
  const found = await collect(await tokens.searchV2({ query: 'data:987654320' }));
  check(found.some((t) => t.id === ssn.id), 'the SSN is found without its dashes');
  await expectError(() => tokens.create({ type: 'social_security_number', data: '987-65-432' }), BasisTheory.BadRequestError, 400);
});

await run.op('idempotency (BT-IDEMPOTENCY-KEY replay)', async () => {
  const idempotencyKey = uuid();
  const body = { type: 'token', data: `idem-${run.runId}`, metadata: { idem: run.runId } };
  const first = await tokens.create(body, { idempotencyKey });
  const second = await tokens.create(body, { idempotencyKey });
  // The replay answers with the first token, so no second one was created.
  eq(second.id, first.id, 'the replayed token id');
  eq((await tokens.get(first.id)).data, body.data, 'data read back');
});

await run.op('trace id (BT-TRACE-ID echoed as X-Request-Id)', async () => {
  const tok = need(state.token, 'tokens create');
  const correlationId = `trace-${run.runId}`;
  const { data, rawResponse } = await tokens.get(tok.id, { correlationId }).withRawResponse();
  eq(data.id, tok.id, 'id');
  eq(rawResponse.headers.get('x-request-id'), correlationId, 'X-Request-Id');
});

await run.op('tokens delete', async () => {
  const tok = need(state.token, 'tokens create');
  await tokens.delete(tok.id);
  await expectError(() => tokens.get(tok.id), BasisTheory.NotFoundError, 404);
});

// ------------------------------------------------------------------ proxies

await run.op('proxies create/get/list/update/patch/delete', async () => {
  const dest = need(run.echo || undefined, 'ECHO_URL');
  const created = await admin.proxies.create({
    name: `sdk-node-${run.runId}`, destinationUrl: dest,
    requestTransform: { type: 'code', code: ECHO_TRANSFORM },
    configuration: { A: '1' }, requireAuth: true,
  });
  check(created.key, 'no proxy key');
  const got = await admin.proxies.get(created.id);
  eq(got.destinationUrl, dest, 'destinationUrl');
  eq(got.configuration, { A: '1' }, 'configuration');
  const listed = await admin.proxies.list({ name: `sdk-node-${run.runId}` });
  eq(listed.data.map((p) => p.id), [created.id], 'list by name');
  const upd = await admin.proxies.update(created.id, {
    name: `sdk-node-upd-${run.runId}`, destinationUrl: dest, configuration: { A: '2' },
  });
  eq(upd.name, `sdk-node-upd-${run.runId}`, 'name after update');
  await admin.proxies.patch(created.id, { configuration: { B: '3' } });
  const after = await admin.proxies.get(created.id);
  eq(after.configuration, { A: '2', B: '3' }, 'configuration after patch');
  await admin.proxies.delete(created.id);
  await expectError(() => admin.proxies.get(created.id), BasisTheory.NotFoundError, 404);
});

// ------------------------------------------------------------------ errors

await run.op('errors 401/403/404', async () => {
  await expectError(() => client(`key_${'z'.repeat(32)}`).applications.list(), BasisTheory.UnauthorizedError, 401);
  const reader = await admin.applications.create({
    name: `sdk-node-reader-${run.runId}`, type: 'private', permissions: ['token:read'],
  });
  await expectError(() => client(reader.key).applications.get(reader.id), BasisTheory.ForbiddenError, 403);
  await expectError(() => tokens.get(uuid()), BasisTheory.NotFoundError, 404);
  // 409 on DELETE /applications/{id}: the SDK maps no class for it, so it is the base error.
  const px = await admin.proxies.create({
    name: `sdk-node-409-${run.runId}`, destinationUrl: need(run.echo || undefined, 'ECHO_URL'),
    application: { id: reader.id }, requireAuth: true,
  });
  await expectError(() => admin.applications.delete(reader.id), BasisTheoryError, 409);
  await admin.proxies.delete(px.id);
  await admin.applications.delete(reader.id);
});

await run.op('tokens create with a chosen id (409 ConflictError on reuse)', async () => {
  const id = uuid().toUpperCase();
  const tok = await tokens.create({ id, type: 'token', data: 'imported' });
  eq(tok.id, id.toLowerCase(), 'the chosen id, lower-cased');
  eq((await tokens.get(id.toLowerCase())).data, 'imported', 'data read back');
  await expectError(() => tokens.create({ id, type: 'token', data: 'again' }), BasisTheory.ConflictError, 409);
});

await run.op('tokens create with an alias id (read back by it)', async () => {
  const tok = await tokens.create({
    id: '{{ data | alias_preserve_format: 0, 4 }}', type: 'token', data: '111-22-3333',
  });
  check(/^\d{3}-\d{2}-3333$/.test(tok.id) && tok.id !== '111-22-3333', `alias id ${tok.id}`);
  eq((await tokens.get(tok.id)).data, '111-22-3333', 'data read back by the alias');
});

await run.op('tokens create with a chosen non-UUID id (URL-encoded by the SDK)', async () => {
  const id = `phone_${run.runId}@example.com`;
  const tok = await tokens.create({ id, type: 'token', data: '+1 555 0100' });
  eq(tok.id, id, 'the chosen id, as chosen');
  eq((await tokens.get(id)).data, '+1 555 0100', 'data read back');
  const detok = await tokens.detokenize({ phone: `{{ ${id} }}` });
  eq(detok, { phone: '+1 555 0100' }, 'detokenized by its id');
  await tokens.delete(id);
  await expectError(() => tokens.get(id), BasisTheory.NotFoundError, 404);
});

// ------------------------------------------------------------------ webhooks

await run.op('webhooks create/get/list/update/delete, events.list', async () => {
  const types = await admin.webhooks.events.list();
  check(Array.isArray(types) && types.includes('token.created'), `event types ${JSON.stringify(types)}`);
  // The SDK's own example spells the event `token:created`.
  const created = await admin.webhooks.create({
    name: 'webhook-create', url: 'https://www.example.com', events: ['token:created'],
  });
  eq(created.status, 'enabled', 'status');
  eq(created.events, ['token.created'], 'events');
  eq((await admin.webhooks.get(created.id)).name, 'webhook-create', 'get');
  const listed = await admin.webhooks.list();
  check(listed.data.some((w) => w.id === created.id), 'listed');
  const updated = await admin.webhooks.update(created.id, {
    name: 'webhook-update', url: 'https://www.example.com/in', notifyEmail: 'notify@example.com', events: ['token.created', 'token.deleted'],
  });
  eq(updated.name, 'webhook-update', 'name');
  eq(updated.notifyEmail, 'notify@example.com', 'notifyEmail');
  check(updated.modifiedAt, 'modifiedAt');
  await admin.webhooks.delete(created.id);
  await expectError(() => admin.webhooks.get(created.id), BasisTheory.NotFoundError, 404);
});

await run.op("webhooks: every delivery passes Basis Theory's verification snippet", async () => {
  const pem = await (await fetch(`${run.url}/webhooks/signing-key`)).text();
  check(pem.startsWith('-----BEGIN PUBLIC KEY-----'), 'a PEM public key');
  const receiver = await startReceiver(pem);
  try {
    const want = [
      'token.created', 'token.read', 'token.updated', 'token.deleted',
      'application.created', 'application.updated', 'application.key.created', 'application.key.deleted', 'application.deleted',
      'proxy.created', 'proxy.updated', 'proxy.deleted', 'token.created', 'token.expired',
    ];
    const hook = await admin.webhooks.create({
      name: `receiver-${run.runId}`, url: receiver.url, events: [...new Set(want)],
    });
    const tok = await tokens.create({ type: 'token', data: 'webhook secret value', metadata: { k: 'v' } });
    await tokens.get(tok.id);
    await tokens.update(tok.id, { metadata: { k: 'w' } });
    await tokens.delete(tok.id);
    const app = await admin.applications.create({ name: `hooked-${run.runId}`, type: 'private', permissions: ['token:read'] });
    await admin.applications.update(app.id, { name: `hooked2-${run.runId}`, permissions: ['token:read'] });
    const key = await admin.applicationKeys.create(app.id);
    await admin.applicationKeys.delete(app.id, key.id);
    await admin.applications.delete(app.id);
    const proxy = await admin.proxies.create({ name: `hooked-${run.runId}`, destinationUrl: 'https://example.com/x', requireAuth: true });
    await admin.proxies.update(proxy.id, { name: `hooked2-${run.runId}`, destinationUrl: 'https://example.com/y', requireAuth: true });
    await admin.proxies.delete(proxy.id);
    // Expired by the sweep (run.sh starts the api with --sweep-interval 1).
    await tokens.create({ type: 'token', data: 'brief', expiresAt: new Date(Date.now() + 1500).toISOString() });
    await receiver.waitFor((r) => r.length >= want.length);
    eq(receiver.received.map((r) => r.body.event.type), want, 'every event, in order');
    for (const r of receiver.received) {
      check(r.verified, `the snippet refused ${JSON.stringify(r.body)}`);
      eq(r.headers['BT-SIGNATURE-VERSION'], 'v1', 'BT-SIGNATURE-VERSION');
      check(!JSON.stringify(r.body).includes('webhook secret value'), 'token data in an event');
    }
    eq(receiver.received[0].body.event.data.token.id, tok.id, 'the token id');
    await admin.webhooks.delete(hook.id);
  } finally {
    receiver.close();
  }
});

run.finish();
