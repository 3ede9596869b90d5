// Tessera transform prelude: evaluated once per context, before the tenant's code. It defines
// the globals of SUPPLEMENT §7 and returns the runner the host calls. Host functions arrive in
// `native` and are kept in this closure only (never reachable from tenant code).
export default function install(native) {
  'use strict';
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

  class HttpError extends Error {
    constructor(message, status, name) {
      super(message === undefined ? name : String(message));
      this.name = name;
      this.status = status;
    }
  }
  const httpClasses = [];
  for (const [name, status] of [
    ['AuthenticationError', 401], ['AuthorizationError', 403], ['BadRequestError', 400],
    ['InvalidPaymentMethodError', 402], ['RateLimitError', 429], ['ServiceUnavailableError', 503],
  ]) {
    const C = { [name]: class extends HttpError { constructor(message) { super(message, status, name); } } }[name];
    httpClasses.push(C);
    define(name, C);
  }
  class CustomHttpResponseError extends Error {
    constructor(response) {
      super('custom HTTP response');
      const r = response || {};
      this.name = 'CustomHttpResponseError';
      this.status = r.status;
      this.headers = r.headers;
      this.body = r.body;
    }
  }
  define('CustomHttpResponseError', CustomHttpResponseError);

  const text = (v) => {
    if (typeof v === 'string') return v;
    try { return JSON.stringify(v); } catch (_) { return String(v); }
  };
  const log = (...args) => native.log(args.map(text).join(' '));
  define('console', Object.freeze({ log, info: log, warn: log, error: log, debug: log }));
  define('atob', (s) => native.atob(String(s)));
  define('btoa', (s) => native.btoa(String(s)));

  class Hmac {
    constructor(alg, key) { this.alg = String(alg); this.key = String(key); this.data = ''; }
    update(s) { this.data += String(s); return this; }
    digest(encoding) { return native.hmac(this.alg, this.key, this.data, encoding === undefined ? 'hex' : String(encoding)); }
  }
  define('crypto', Object.freeze({
    randomUUID: () => native.uuid(),
    createHmac: (alg, key) => new Hmac(alg, key),
  }));

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(s = '') {
      const bin = unescape(encodeURIComponent(String(s)));
      const out = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out;
    }
  }
  class TextDecoder {
    get encoding() { return 'utf-8'; }
    decode(bytes) {
      if (!bytes) return '';
      const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
      let bin = '';
      for (let i = 0; i < u8.length; i++) bin += String.fromCharCode(u8[i]);
      return decodeURIComponent(escape(bin));
    }
  }
  define('TextEncoder', TextEncoder);
  define('TextDecoder', TextDecoder);

  class Buffer {
    constructor(b64) { this.b64 = b64; }
    static from(s, encoding) { return new Buffer(native.tob64(String(s), encoding === undefined ? 'utf8' : String(encoding))); }
    toString(encoding) { return native.fromb64(this.b64, encoding === undefined ? 'utf8' : String(encoding)); }
  }
  define('Buffer', Buffer);

  const dec = (s) => decodeURIComponent(s.split('+').join(' '));
  const enc = (s) => encodeURIComponent(s).split('%20').join('+');
  class URLSearchParams {
    constructor(init) {
      this.list = [];
      if (typeof init === 'string') {
        const s = init.startsWith('?') ? init.slice(1) : init;
        for (const part of s.split('&')) {
          if (!part) continue;
          const i = part.indexOf('=');
          this.list.push(i < 0 ? [dec(part), ''] : [dec(part.slice(0, i)), dec(part.slice(i + 1))]);
        }
      } else if (Array.isArray(init)) {
        for (const [k, v] of init) this.list.push([String(k), String(v)]);
      } else if (init && typeof init === 'object') {
        for (const k of Object.keys(init)) this.list.push([k, String(init[k])]);
      }
    }
    append(k, v) { this.list.push([String(k), String(v)]); }
    delete(k) { this.list = this.list.filter(([n]) => n !== String(k)); }
    get(k) { const e = this.list.find(([n]) => n === String(k)); return e ? e[1] : null; }
    getAll(k) { return this.list.filter(([n]) => n === String(k)).map(([, v]) => v); }
    has(k) { return this.list.some(([n]) => n === String(k)); }
    set(k, v) {
      const i = this.list.findIndex(([n]) => n === String(k));
      this.delete(k);
      if (i < 0) this.list.push([String(k), String(v)]); else this.list.splice(i, 0, [String(k), String(v)]);
    }
    forEach(f) { for (const [k, v] of this.list) f(v, k, this); }
    keys() { return this.list.map(([k]) => k)[Symbol.iterator](); }
    values() { return this.list.map(([, v]) => v)[Symbol.iterator](); }
    entries() { return this.list.map((e) => [e[0], e[1]])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this.list.map(([k, v]) => enc(k) + '=' + enc(v)).join('&'); }
  }
  define('URLSearchParams', URLSearchParams);

  class URL {
    constructor(href, base) {
      const parsed = native.url(String(href), base === undefined ? '' : String(base));
      if (parsed === '') throw new TypeError('Invalid URL: ' + String(href));
      const p = JSON.parse(parsed);
      for (const k of Object.keys(p)) Object.defineProperty(this, k, { value: p[k], enumerable: true });
      Object.defineProperty(this, 'searchParams', { value: new URLSearchParams(p.search), enumerable: false });
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }
  define('URL', URL);
  define('require', (name) => { throw new Error('require is not available in transforms: ' + String(name)); });

  const makeSvc = () => {
    const call = async (op, payload) => {
      const raw = await native.host(op, JSON.stringify(payload === undefined ? null : payload));
      const res = JSON.parse(raw);
      if (res.error) {
        const err = new Error(res.error.message);
        err.status = res.error.status;
        throw err;
      }
      return res.ok;
    };
    return Object.freeze({
      tokenize: (request) => call('tokenize', request),
      tokens: Object.freeze({
        create: (request) => call('tokens.create', request),
        retrieve: (id) => call('tokens.retrieve', id),
        delete: (id) => call('tokens.delete', id),
      }),
    });
  };

  return async function run(handler, input) {
    const req = JSON.parse(input);
    if (req.svc === true) req.svc = makeSvc(); else delete req.svc;
    let out;
    try {
      if (typeof handler !== 'function') {
        throw new TypeError('the transform must export a function: module.exports = async function (req) { … }');
      }
      out = await handler(req);
    } catch (e) {
      if (e instanceof CustomHttpResponseError) {
        return JSON.stringify({ custom: { status: e.status, headers: e.headers, body: e.body } });
      }
      for (const C of httpClasses) {
        if (e instanceof C) return JSON.stringify({ http: { status: e.status, name: e.name, message: String(e.message) } });
      }
      // The engine signals an out-of-memory it cannot even allocate an error for by a thrown
      // null; a transform may also throw one itself. The two cannot be told apart here, so the
      // host discards the runtime for either (see `worker.rs`, NULLISH_THROW).
      if (e === null || e === undefined) throw new Error('the transform threw ' + e);
      throw e;
    }
    const o = out === undefined || out === null ? {} : out;
    if (typeof o !== 'object') throw new TypeError('the transform must return an object { body, headers }');
    return JSON.stringify({ ok: { body: o.body, headers: o.headers } });
  };
}
