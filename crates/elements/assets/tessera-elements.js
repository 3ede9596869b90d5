// Tessera Elements v1: hosted card fields for a merchant's page (docs/elements.md).
//
//   const elements = await TesseraElements.init({ apiKey, baseUrl });
//   const card = elements.create("card", { style, placeholders, labels, messages, autofill });
//   card.mount("#card");
//   card.on("change", (e) => { /* { complete, empty, brand, errors: [{ field, kind }] } */ });
//   const token = await elements.tokens.create({ type: "card", data: card, metadata });
//
// The card is typed into iframes served from the vault's fields origin (where this file is
// served from). This script never sees it: it mounts the frames, relays what they report,
// and asks them to create the token. The frames send it to the vault themselves.
(function () {
  "use strict";

  var script = document.currentScript;
  var FRAME_ORIGIN = script && script.src ? new URL(script.src).origin : "";
  var FRAME_PATH = "/elements/v1/frame.html";
  var TYPES = ["card", "cardNumber", "cardExpirationDate", "cardVerificationCode", "text"];
  var EVENTS = ["change", "ready", "focus", "blur"];
  var HEIGHTS = { card: 44, text: 44, cardNumber: 44, cardExpirationDate: 44,
    cardVerificationCode: 44 };
  // How a token's data fields map to a frame's parts when an element is composed into it.
  var CARD_PARTS = { number: "number", expiration_month: "month", expiration_year: "year",
    cvc: "cvc" };
  // A frame that has not loaded by then was refused (the page's origin is not in the key's
  // allowed_origins, or the key is not a public key); a create not answered by then failed.
  var READY_TIMEOUT_MS = 10000;
  var CREATE_TIMEOUT_MS = 30000;

  function randomId() {
    var bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }

  function TesseraError(status, title, errors) {
    var e = new Error(title);
    e.name = "TesseraError";
    e.status = status;
    e.title = title;
    e.errors = errors || {};
    return e;
  }

  // ---- one iframe ----
  function Element(elements, type, options) {
    this._elements = elements;
    this.type = type;
    this.name = randomId();
    this._options = options || {};
    this._handlers = {};
    this._frame = null;
    this._ready = false;
    this._queue = [];
  }

  Element.prototype.mount = function (target) {
    var host = typeof target === "string" ? document.querySelector(target) : target;
    if (!host || typeof host.appendChild !== "function") {
      throw new Error("TesseraElements: nothing to mount into: " + target);
    }
    if (this._frame) this.unmount();
    var params = new URLSearchParams({
      key: this._elements._apiKey, origin: location.origin, field: this.type,
      name: this.name, group: this._elements._group
    });
    var frame = document.createElement("iframe");
    frame.src = FRAME_ORIGIN + FRAME_PATH + "?" + params.toString();
    frame.title = this._options.title || (this.type === "text" ? "Secure text field"
      : "Secure card payment input");
    frame.setAttribute("allow", "payment");
    frame.setAttribute("scrolling", "no");
    frame.style.cssText = "border:0;width:100%;display:block;overflow:hidden;height:" +
      HEIGHTS[this.type] + "px";
    this._frame = frame;
    this._ready = false;
    this._elements._register(this);
    host.appendChild(frame);
    return this;
  };

  Element.prototype.unmount = function () {
    if (this._frame && this._frame.parentNode) this._frame.parentNode.removeChild(this._frame);
    this._elements._unregister(this);
    this._frame = null;
    this._ready = false;
    return this;
  };

  Element.prototype.on = function (event, handler) {
    if (EVENTS.indexOf(event) < 0) throw new Error("TesseraElements: unknown event " + event);
    (this._handlers[event] = this._handlers[event] || []).push(handler);
    return this;
  };

  Element.prototype.focus = function () { this._send({ op: "focus" }); return this; };
  Element.prototype.clear = function () { this._send({ op: "clear" }); return this; };

  Element.prototype._send = function (message) {
    message.tessera = "v1";
    if (!this._ready) { this._queue.push(message); return; }
    this._frame.contentWindow.postMessage(message, FRAME_ORIGIN);
  };

  Element.prototype._emit = function (event, payload) {
    (this._handlers[event] || []).forEach(function (h) {
      try { h(payload); } catch (e) { setTimeout(function () { throw e; }); }
    });
  };

  Element.prototype._receive = function (m) {
    if (m.event === "ready") {
      this._ready = true;
      var o = this._options;
      this._send({ op: "configure", style: o.style, placeholders: o.placeholders,
        labels: o.labels, messages: o.messages, sensitive: o.sensitive === true,
        autofill: o.autofill !== false });
      var queued = this._queue;
      this._queue = [];
      queued.forEach(this._send, this);
      this._emit("ready", {});
    } else if (m.event === "change") {
      this._emit("change", { complete: !!m.complete, empty: !!m.empty,
        brand: typeof m.brand === "string" ? m.brand : null,
        errors: Array.isArray(m.errors) ? m.errors.map(function (e) {
          return { field: String(e.field), kind: String(e.kind) };
        }) : [] });
    } else if (m.event === "focus" || m.event === "blur") {
      this._emit(m.event, { field: String(m.field) });
    } else if (m.event === "resize" && typeof m.height === "number") {
      this._frame.style.height = Math.max(20, Math.min(600, m.height)) + "px";
    } else if (m.event === "result") {
      this._elements._settle(m);
    }
  };

  // References to frames' parts, for the frame that creates the token.
  Element.prototype._refs = function () {
    if (this.type !== "card") throw new Error("TesseraElements: only a card element is a whole card");
    var name = this.name;
    var refs = {};
    Object.keys(CARD_PARTS).forEach(function (k) {
      refs[k] = { element: name, part: CARD_PARTS[k] };
    });
    return refs;
  };

  Element.prototype._ref = function (key) {
    var part = { cardNumber: "number", cardVerificationCode: "cvc", text: "text" }[this.type];
    if (this.type === "cardExpirationDate") {
      part = /year/.test(key) ? "year" : "month";
    } else if (this.type === "card") {
      part = CARD_PARTS[key] || "number";
    }
    return { element: this.name, part: part };
  };

  // ---- the set of elements of one page ----
  function Elements(apiKey) {
    var self = this;
    this._apiKey = apiKey;
    this._group = randomId();
    this._mounted = [];
    this._pending = {};
    this.tokens = { create: function (request) { return self._create(request); } };
    window.addEventListener("message", function (e) {
      if (e.origin !== FRAME_ORIGIN) return;
      var m = e.data;
      if (!m || m.tessera !== "v1") return;
      self._mounted.forEach(function (el) {
        if (el._frame && e.source === el._frame.contentWindow && m.name === el.name) {
          el._receive(m);
        }
      });
    });
  }

  Elements.prototype.create = function (type, options) {
    if (TYPES.indexOf(type) < 0) throw new Error("TesseraElements: unknown element " + type);
    return new Element(this, type, options);
  };

  Elements.prototype._register = function (el) {
    if (this._mounted.indexOf(el) < 0) this._mounted.push(el);
  };

  Elements.prototype._unregister = function (el) {
    this._mounted = this._mounted.filter(function (m) { return m !== el; });
  };

  Elements.prototype._settle = function (m) {
    var done = this._pending[m.id];
    if (!done) return;
    delete this._pending[m.id];
    if (m.ok) done.resolve(m.token);
    else {
      var e = m.error || {};
      done.reject(TesseraError(e.status || 0, e.title || "The token was not created",
        e.errors));
    }
  };

  Elements.prototype._create = function (request) {
    var self = this;
    request = request || {};
    return new Promise(function (resolve, reject) {
      var data = request.data;
      var refs;
      var lead;
      if (data instanceof Element) {
        refs = request.type === "card" ? data._refs() : { value: data._ref("value") };
        lead = data;
      } else if (data && typeof data === "object") {
        refs = {};
        Object.keys(data).forEach(function (k) {
          var v = data[k];
          if (v instanceof Element) {
            refs[k] = v._ref(k);
            lead = lead || v;
          } else {
            refs[k] = v;
          }
        });
      }
      if (!lead || !lead._frame) {
        return reject(TesseraError(0, "Mount an element before creating a token from it"));
      }
      var id = randomId();
      var timer;
      var wasReady = lead._ready;
      var expire = function () {
        if (!self._pending[id]) return;
        if (!wasReady && lead._ready) {
          wasReady = true;
          timer = setTimeout(expire, CREATE_TIMEOUT_MS);
          return;
        }
        delete self._pending[id];
        reject(lead._ready
          ? TesseraError(0, "The vault did not answer in time")
          : TesseraError(0, "The card frame did not load: is this page's origin in the key's allowed_origins?"));
      };
      timer = setTimeout(expire, wasReady ? CREATE_TIMEOUT_MS : READY_TIMEOUT_MS);
      self._pending[id] = {
        resolve: function (t) { clearTimeout(timer); resolve(t); },
        reject: function (e) { clearTimeout(timer); reject(e); }
      };
      lead._send({ op: "tokenize", id: id, type: request.type, data: refs,
        metadata: request.metadata, containers: request.containers });
    });
  };

  function normalOrigin(url) {
    try { return new URL(url).origin; } catch (e) { return null; }
  }

  window.TesseraElements = {
    version: "1",
    init: function (options) {
      options = options || {};
      if (typeof options.apiKey !== "string" || !/^key_[A-Za-z0-9]{32}$/.test(options.apiKey)) {
        return Promise.reject(new Error("TesseraElements.init: apiKey must be a public API key"));
      }
      if (!FRAME_ORIGIN) {
        return Promise.reject(new Error("TesseraElements: load this script from the vault"));
      }
      var wanted = normalOrigin(options.baseUrl || "");
      return fetch(FRAME_ORIGIN + "/elements/v1/config.json", { credentials: "omit" })
        .then(function (res) { return res.json(); })
        .then(function (config) {
          if (wanted !== config.api_origin) {
            throw new Error("TesseraElements.init: baseUrl must be " + config.api_origin +
              ", the vault these fields send cards to");
          }
          return new Elements(options.apiKey);
        });
    }
  };
})();
