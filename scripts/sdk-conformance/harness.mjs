// Shared harness of the Node conformance scripts: one line per operation, exit status.
// `op(name, fn)` passes when fn resolves, printing `ok   <sdk> <name>`, and otherwise prints
// `FAIL <sdk> <name>: <why>` with the HTTP status and body the SDK's error carries.
import { createRequire } from 'node:module';
import path from 'node:path';
import crypto from 'node:crypto';

// The SDKs are installed in the cache run.sh prepares (SDK_NODE_DIR/node_modules).
export const sdkRequire = createRequire(
  path.join(process.env.SDK_NODE_DIR || process.cwd(), 'package.json'),
);

export class Skip extends Error {}

export function harness(sdk) {
  const run = {
    sdk,
    url: process.env.TESSERA_URL.replace(/\/+$/, ''),
    key: process.env.TESSERA_KEY,
    // A private application whose rule on / reveals: what reads and writes tokens (under
    // --implicit-transform mask the admin's own permissions show masks, as in Basis Theory).
    tokenKey: process.env.TESSERA_TOKEN_KEY || process.env.TESSERA_KEY,
    echo: process.env.ECHO_URL || '',
    runId: crypto.randomBytes(6).toString('hex'),
    passed: 0,
    failed: 0,
    async op(name, fn) {
      try {
        const value = await fn();
        run.passed += 1;
        console.log(`ok   ${sdk} ${name}`);
        return value;
      } catch (e) {
        run.failed += 1;
        const why = e instanceof Skip ? `not run, ${e.message}` : describe(e);
        console.log(`FAIL ${sdk} ${name}: ${why}`);
        if (process.env.SDK_CONFORMANCE_DEBUG) console.error(e);
        return undefined;
      }
    },
    finish() {
      console.log(`# ${sdk}: ${run.passed} ok, ${run.failed} failed`);
      process.exit(run.failed ? 1 : 0);
    },
  };
  return run;
}

function clip(text) {
  const s = String(text).replace(/\s+/g, ' ');
  return s.length > 400 ? `${s.slice(0, 400)}…` : s;
}

export function statusOf(e) {
  return e?.statusCode ?? e?.status ?? e?.response?.status;
}

export function describe(e) {
  const status = statusOf(e);
  const body = e?.body ?? e?.data ?? e?.response?.data;
  if (status !== undefined) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return `${e?.constructor?.name ?? 'Error'} status ${status}: ${clip(text)}`;
  }
  return `${e?.constructor?.name ?? 'Error'}: ${clip(e?.message ?? e)}`;
}

export function need(value, what) {
  if (value === undefined || value === null) throw new Skip(`needs ${what}`);
  return value;
}

export function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function eq(actual, expected, what) {
  const a = JSON.stringify(canon(actual));
  const b = JSON.stringify(canon(expected));
  if (a !== b) throw new Error(`${what}: expected ${b}, got ${a}`);
}

function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  }
  return v;
}

// fn must reject with an error of class cls (when given) carrying the HTTP status.
export async function expectError(fn, cls, status) {
  let value;
  try {
    value = await fn();
  } catch (e) {
    if (cls && !(e instanceof cls)) {
      throw new Error(`expected ${cls.name} (${status}), got ${describe(e)}`);
    }
    if (statusOf(e) !== status) {
      throw new Error(`expected status ${status}, got ${describe(e)}`);
    }
    return e;
  }
  throw new Error(`expected ${cls ? cls.name : 'an error'} (${status}), the call succeeded: ${clip(JSON.stringify(value))}`);
}

export function future(days) {
  const t = new Date(Date.now() + days * 86400000);
  t.setUTCMilliseconds(0);
  return t.toISOString().replace('.000Z', 'Z');
}

export function sameInstant(a, b) {
  return new Date(a).getTime() === new Date(b).getTime();
}

export const CARD = {
  number: '4242424242424242',
  expiration_month: 12,
  expiration_year: 2030,
  cvc: '123',
};

export const ECHO_TRANSFORM = [
  'module.exports = async function (req) {',
  '  const { body, headers } = req.args;',
  "  return { body, headers: { ...headers, 'x-transformed': 'yes' } };",
  '};',
].join('\n');

export const uuid = () => crypto.randomUUID();
