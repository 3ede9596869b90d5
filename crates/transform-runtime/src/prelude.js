// Tessera transform prelude: evaluated once per context, before the tenant's code. It defines
// the globals of docs/api.md, "Transforms" (`console`, `atob`/`btoa`, `crypto`, `Buffer`, `URL`,
// the error classes) and returns the runner the host calls. Host functions arrive in
// `native` and are kept in this closure only (never reachable from tenant code).
export default function install(native) {
  'use strict';
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

  // Builtins whose native loops the engine's interrupt handler cannot reach: their running time
  // must not depend on anything but memory (which is limited). Replaced by wrappers that keep
  // their results and make the long cases either impossible or interruptible JavaScript.
  const MAX_GENERIC_LENGTH = 16777216; // 2^24: far above any array a transform's heap can hold
  const toLength = (v) => { const n = Math.trunc(Number(v)); return n > 0 ? Math.min(n, Number.MAX_SAFE_INTEGER) : 0; };
  const guardLength = (name, fn) => function (...args) {
    if (this !== null && this !== undefined && toLength(this.length) > MAX_GENERIC_LENGTH) {
      throw new RangeError(`Array.prototype.${name}: lengths above ${MAX_GENERIC_LENGTH} are not supported in transforms`);
    }
    return fn.apply(this, args);
  };
  for (const name of ['join', 'toString', 'toLocaleString', 'reverse', 'fill', 'copyWithin', 'splice',
    'slice', 'concat', 'flat', 'flatMap', 'sort', 'toReversed', 'toSorted', 'toSpliced', 'with']) {
    const original = Array.prototype[name];
    if (typeof original === 'function') {
      Object.defineProperty(Array.prototype, name, { value: guardLength(name, original), writable: true, configurable: true, enumerable: false });
    }
  }
  // Substring search: the engine's is naive, O(n·m) in one native call
  // ('a'.repeat(2e6).indexOf('a'.repeat(1e6) + 'b') runs ~40 s). Above a small cost the search
  // runs as Knuth-Morris-Pratt in JavaScript: linear, and interruptible at the deadline.
  const NATIVE_SEARCH_COST = 1e7;
  const kmpTable = (p) => {
    const t = new Int32Array(p.length + 1); t[0] = -1;
    let k = -1;
    for (let i = 0; i < p.length; i++) {
      while (k >= 0 && p.charCodeAt(k) !== p.charCodeAt(i)) k = t[k];
      k++; t[i + 1] = k;
    }
    return t;
  };
  const kmpFind = (s, p, from) => {
    if (p.length === 0) return Math.min(from, s.length);
    const t = kmpTable(p);
    let k = 0;
    for (let i = from; i < s.length; i++) {
      while (k >= 0 && p.charCodeAt(k) !== s.charCodeAt(i)) k = t[k];
      k++;
      if (k === p.length) return i - p.length + 1;
    }
    return -1;
  };
  const reverse = (x) => { let r = ''; for (let i = x.length - 1; i >= 0; i--) r += x[i]; return r; };
  const strProto = String.prototype;
  const nativeIndexOf = strProto.indexOf, nativeLastIndexOf = strProto.lastIndexOf;
  const nativeIncludes = strProto.includes, nativeSplit = strProto.split;
  const nativeReplace = strProto.replace, nativeReplaceAll = strProto.replaceAll;
  const costly = (s, p) => s.length * p.length > NATIVE_SEARCH_COST;
  const indexOf = (s, p, pos) => {
    const from = Math.min(Math.max(Math.trunc(Number(pos)) || 0, 0), s.length);
    return costly(s, p) ? kmpFind(s, p, from) : nativeIndexOf.call(s, p, from);
  };
  const setString = (name, fn) => Object.defineProperty(strProto, name, { value: fn, writable: true, configurable: true, enumerable: false });
  setString('indexOf', function (search, position) { return indexOf(String(this), String(search), position); });
  setString('includes', function (search, position) {
    if (search instanceof RegExp) return nativeIncludes.call(this, search, position);
    return indexOf(String(this), String(search), position) !== -1;
  });
  setString('lastIndexOf', function (search, position) {
    const s = String(this), p = String(search);
    if (!costly(s, p)) return nativeLastIndexOf.apply(s, arguments);
    const n = Number(position), end = Number.isNaN(n) ? s.length : Math.min(Math.max(Math.trunc(n), 0), s.length);
    const found = kmpFind(reverse(s), reverse(p), Math.max(s.length - end - p.length, 0));
    return found === -1 ? -1 : s.length - found - p.length;
  });
  setString('split', function (separator, limit) {
    const s = String(this);
    if (typeof separator !== 'string' || !costly(s, separator) || separator.length === 0) return nativeSplit.apply(s, arguments);
    const max = limit === undefined ? 4294967295 : toLength(limit) >>> 0;
    const out = []; let at = 0;
    while (out.length < max) {
      const i = kmpFind(s, separator, at);
      if (i === -1) { out.push(s.slice(at)); break; }
      out.push(s.slice(at, i)); at = i + separator.length;
    }
    return out.length > max ? out.slice(0, max) : out;
  });
  const literalReplace = (s, p, replacement, all) => {
    let out = '', at = 0;
    for (;;) {
      const i = kmpFind(s, p, at);
      if (i === -1) break;
      const piece = typeof replacement === 'function' ? String(replacement(p, i, s)) : nativeReplace.call(p, p, String(replacement));
      out += s.slice(at, i) + piece; at = i + p.length;
      if (!all || p.length === 0) break;
    }
    return out + s.slice(at);
  };
  setString('replace', function (pattern, replacement) {
    const s = String(this);
    if (typeof pattern !== 'string' || !costly(s, pattern)) return nativeReplace.apply(s, arguments);
    return literalReplace(s, pattern, replacement, false);
  });
  if (typeof nativeReplaceAll === 'function') {
    setString('replaceAll', function (pattern, replacement) {
      const s = String(this);
      if (typeof pattern !== 'string' || !costly(s, pattern)) return nativeReplaceAll.apply(s, arguments);
      return literalReplace(s, pattern, replacement, true);
    });
  }

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

  const jsonText = JSON.stringify;
  const text = (v) => {
    if (typeof v === 'string') return v;
    let t;
    try { t = jsonText(v); } catch (_) { t = undefined; }
    return t === undefined ? String(v) : t;
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

  // `req.svc`: one frozen object per context; the host knows which invocation is calling.
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
  const svc = Object.freeze({
    tokenize: (request) => call('tokenize', request),
    tokens: Object.freeze({
      create: (request) => call('tokens.create', request),
      retrieve: (id) => call('tokens.retrieve', id),
      delete: (id) => call('tokens.delete', id),
    }),
  });

  // The originals, captured before any tenant code runs in this context: the host's encoding
  // must not depend on what a transform did to `JSON` or the prototypes' methods.
  const stringify = JSON.stringify, parse = JSON.parse;
  // JSON object bodies arrive member by member (the host's `runtime/input.rs`): an object or
  // array member is an accessor that parses its own text when first read, then becomes a plain
  // data property; a write replaces it. The texts are kept on the body under a symbol only this
  // closure holds; the accessors of a member name are shared by every body of the context (the
  // host asks for them once per name and defines them itself). The host writes a member whose
  // property still has the shared getter and whose text was never parsed from the body's text.
  const defineProperty = Object.defineProperty, getPrototypeOf = Object.getPrototypeOf;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
  const TEXTS = Symbol('json member texts');
  const owner = (self) => {
    let o = self;
    while (o !== null && o !== undefined && !hasOwn(o, TEXTS)) o = getPrototypeOf(o);
    return o;
  };
  const own = (o, k, v) => {
    try { defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true }); return true; } catch (_) { return false; }
  };
  const accessors = (k) => {
    function get() {
      const o = owner(this);
      if (o === null || o === undefined) return undefined;
      const texts = o[TEXTS];
      if (!hasOwn(texts, k)) return undefined;
      const t = texts[k];
      if (typeof t !== 'string') return t.v;
      const v = parse(t);
      // A frozen body keeps the accessor, which keeps the value.
      texts[k] = { v };
      own(o, k, v);
      return v;
    }
    function set(v) {
      const o = owner(this);
      if (o === this && o[TEXTS] !== undefined) o[TEXTS][k] = { v };
      own(this, k, v);
    }
    return [get, set];
  };
  const textsOf = () => Object.create(null);
  // Form encoding as the host's `form_urlencoded` does  // Form encoding as the host's `form_urlencoded` does: unreserved characters kept, spaces `+`.
  const formPart = (v) => encodeURIComponent(v).replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()).split('%20').join('+');
  const formEncode = (o) => {
    const parts = [];
    for (const k of Object.keys(o)) {
      const v = o[k];
      for (const item of Array.isArray(v) ? v : [v]) parts.push(formPart(k) + '=' + formPart(text(item)));
    }
    return parts.join('&');
  };
  const headerPairs = (h) => {
    if (h === undefined) return undefined;
    if (h === null || typeof h !== 'object' || Array.isArray(h)) throw new TypeError('`headers` must be an object');
    const out = [];
    for (const name of Object.keys(h)) {
      const v = h[name];
      if (v === null || v === undefined) continue;
      for (const item of Array.isArray(v) ? v : [v]) out.push([name, text(item)]);
    }
    return out;
  };

  // The host builds `req` itself (a JSON body through `parseBody`), calls the handler, and
  // reads the returned `{ body, headers }` itself, encoding the body (through `encodeForm` or,
  // for what its own encoder does not handle, `stringify`). What the handler throws comes back
  // here to be classified.
  const classify = (e) => {
    if (e instanceof CustomHttpResponseError) {
      const b = e.body === undefined || e.body === null ? '' : text(e.body);
      return { kind: 'custom', status: Number(e.status), headers: headerPairs(e.headers === null ? undefined : e.headers), body: b === undefined ? '' : b };
    }
    for (const C of httpClasses) {
      if (e instanceof C) return { kind: 'http', status: e.status, name: e.name, message: String(e.message) };
    }
    return failure(e);
  };
  // A thrown null may be the engine out of memory (no room even for an error): the host
  // discards the runtime for it either way.
  const failure = (e) => {
    if (e === null || e === undefined) return { kind: 'error', message: 'the transform threw ' + e, discard: true };
    let message;
    try {
      message = e instanceof Error ? (e.name && e.name !== 'Error' ? e.name + ': ' : '') + String(e.message) : text(e);
    } catch (_) { message = 'a non-Error value was thrown'; }
    if (message === undefined) message = 'a non-Error value was thrown';
    return { kind: 'error', message, discard: /out of memory/.test(message) };
  };
  return Object.freeze({
    classify: (e) => { try { return classify(e); } catch (inner) { return failure(inner); } },
    svc,
    // A JSON body's text → its value, or the text when it is not JSON.
    parseBody: (t) => { try { return parse(t); } catch (_) { return t; } },
    accessors,
    textsOf,
    texts: TEXTS,
    encodeForm: formEncode,
    // What JSON.stringify makes of `v` (undefined for what it skips), or the failure object
    // when it throws (a cycle, a BigInt, a throwing getter).
    stringify: (v) => { try { return stringify(v); } catch (e) { return failure(e); } },
    // A header value as text.
    text,
    // The prototypes plain data has (the host's JSON encoder handles exactly that).
    objectProto: Object.prototype,
    arrayProto: Array.prototype,
  });
}
