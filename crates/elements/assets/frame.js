// The hosted fields' frame (docs/elements.md). It holds what a person types and never hands
// it to the page that embeds it: the page gets events that carry no digit of the value, and
// the token this frame creates by calling the API itself (for a card, with the brand, last
// four digits and expiry a receipt shows).
//
// Trust: the embedding page's origin comes from this frame's URL, and the server let the
// page frame us only if the key's application lists that origin (CSP frame-ancestors). Every
// message from the page is checked against that origin and that window; every message to it
// names that origin. Values travel between frames of one checkout only over a
// BroadcastChannel, which only this origin's frames in the same page can join, named after
// the key as well: a frame loaded with another tenant's key (whose application may list the
// same page) never hears this checkout's values.
(function () {
  "use strict";

  var params = new URLSearchParams(location.search);
  var KEY = params.get("key") || "";
  var PARENT = params.get("origin") || "";
  var FIELD = params.get("field") || "";
  var NAME = params.get("name") || "";
  var GROUP = params.get("group") || "";
  var API = document.documentElement.getAttribute("data-api");
  var KEY_HEADER = document.documentElement.getAttribute("data-key-header");
  var CREATE_FIELDS = ["type", "data", "metadata", "containers"];
  var PARTS = ["number", "month", "year", "cvc", "text"];
  var CARD_PARTS = ["number", "month", "year", "cvc"];
  function own(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }

  // ---- card rules (the same brand table as the server's card display fields) ----
  // [name, leading digits, valid lengths, CVC length, the length most of its cards have]
  var BRANDS = [
    ["visa", /^4/, [13, 16, 19], 3, 16],
    ["mastercard", /^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/, [16], 3, 16],
    ["american-express", /^3[47]/, [15], 4, 15],
    ["discover", /^(6011|64[4-9]|65)/, [16, 19], 3, 16],
    ["diners-club", /^(30[0-5]|36|3[89])/, [14, 16, 19], 3, 14],
    ["jcb", /^(352[89]|35[3-8]\d)/, [16, 17, 18, 19], 3, 16],
    ["unionpay", /^62/, [16, 17, 18, 19], 3, 16]
  ];
  var UNKNOWN = ["unknown", null, [12, 13, 14, 15, 16, 17, 18, 19], 3, 16];

  function brandOf(digits) {
    for (var i = 0; i < BRANDS.length; i++) {
      if (BRANDS[i][1].test(digits)) return BRANDS[i];
    }
    return UNKNOWN;
  }

  function luhn(digits) {
    var sum = 0;
    for (var i = 0; i < digits.length; i++) {
      var d = digits.charCodeAt(digits.length - 1 - i) - 48;
      if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
      sum += d;
    }
    return digits.length > 0 && sum % 10 === 0;
  }

  function digitsOf(s) { return String(s).replace(/[\s-]/g, ""); }

  function parseExpiry(raw) {
    var m = /^\s*(\d{1,2})\s*\/?\s*(\d{2}|\d{4})\s*$/.exec(raw);
    if (!m) return null;
    var month = parseInt(m[1], 10);
    var year = parseInt(m[2], 10);
    if (m[2].length === 2) year += 2000;
    return { month: month, year: year };
  }

  // ---- the inputs this frame holds ----
  var inputs = {
    number: document.getElementById("number"),
    expiry: document.getElementById("expiry"),
    cvc: document.getElementById("cvc"),
    text: document.getElementById("text")
  };
  var brandBadge = document.getElementById("brand");
  var errorLine = document.getElementById("error");
  var messages = {
    required: "This field is required.",
    incomplete: "This field is incomplete.",
    invalid: "This value is invalid.",
    expired: "This card has expired."
  };
  // What each input was when it was last checked, and what the check found: the page learns
  // a check's result only at a checkpoint (complete length, or focus leaving).
  var checked = {};

  function present() {
    return Object.keys(inputs).filter(function (k) { return inputs[k]; });
  }

  function currentBrand() {
    return inputs.number ? brandOf(digitsOf(inputs.number.value)) : null;
  }

  // The problem with one input's value, or null.
  function problem(part) {
    var value = inputs[part].value;
    if (value.trim() === "") return "required";
    if (part === "number") {
      var digits = digitsOf(value);
      if (!/^\d+$/.test(digits)) return "invalid";
      var brand = brandOf(digits);
      if (digits.length < brand[2][0]) return "incomplete";
      if (brand[2].indexOf(digits.length) < 0 || !luhn(digits)) return "invalid";
    } else if (part === "expiry") {
      if (/^\s*\d{0,2}\s*\/?\s*\d?\s*$/.test(value)) return "incomplete";
      var e = parseExpiry(value);
      if (!e || e.month < 1 || e.month > 12) return "invalid";
      var now = new Date();
      var endOfMonth = new Date(e.year, e.month, 1);
      if (endOfMonth <= now) return "expired";
      if (e.year > now.getFullYear() + 50) return "invalid";
    } else if (part === "cvc") {
      if (!/^\d+$/.test(value)) return "invalid";
      var brandInfo = currentBrand();
      var ok = brandInfo ? [brandInfo[3]] : [3, 4];
      if (value.length < Math.min.apply(null, ok)) return "incomplete";
      if (ok.indexOf(value.length) < 0) return "invalid";
    }
    return null;
  }

  // A checkpoint for `part`: its problem is now known to the page. A number is judged only at
  // the lengths typing judges it at (see atFullLength), so that a page which blurs the frame
  // at will learns nothing more: at any other length it is "incomplete".
  function check(part) {
    var found = problem(part);
    if (part === "number" && found !== "required" && !atFullLength("number")) {
      found = "incomplete";
    }
    checked[part] = { value: inputs[part].value, problem: found };
  }

  function isComplete(part) {
    var c = checked[part];
    return !!c && c.value === inputs[part].value && c.problem === null;
  }

  // Whether `part` just reached the length at which it can be judged while typing.
  function atFullLength(part) {
    var v = inputs[part].value;
    if (part === "number") {
      // Judged at the length most cards of the brand have, and at the longest one.
      var d = digitsOf(v);
      var b = brandOf(d);
      return d.length === b[4] || d.length >= b[2][b[2].length - 1];
    }
    // A two-digit year "20" is the start of a four-digit one, not the year 2020.
    if (part === "expiry") return /^\s*\d{2}\s*\/\s*(\d{4}|(?!20)\d{2})\s*$/.test(v);
    if (part === "cvc") {
      var brand = currentBrand();
      return v.length >= (brand ? brand[3] : 3);
    }
    return false;
  }

  function state() {
    var parts = present();
    var errors = [];
    parts.forEach(function (p) {
      var c = checked[p];
      if (c && c.value === inputs[p].value && c.problem && c.problem !== "required") {
        errors.push({ field: p, kind: c.problem });
      }
    });
    var brand = currentBrand();
    return {
      complete: parts.every(isComplete),
      empty: parts.every(function (p) { return inputs[p].value === ""; }),
      brand: brand ? brand[0] : null,
      errors: errors
    };
  }

  // ---- talking to the page ----
  function toPage(message) {
    message.tessera = "v1";
    message.name = NAME;
    window.parent.postMessage(message, PARENT);
  }

  var last = "";
  function report(force) {
    var s = state();
    var key = JSON.stringify(s);
    if (force || key !== last) {
      last = key;
      var shown = s.errors[0];
      errorLine.textContent = shown ? messages[shown.kind] || messages.invalid : "";
      document.body.classList.toggle("invalid", !!shown);
      present().forEach(function (p) {
        var bad = s.errors.some(function (e) { return e.field === p; });
        inputs[p].setAttribute("aria-invalid", bad ? "true" : "false");
      });
      toPage({ event: "change", complete: s.complete, empty: s.empty, brand: s.brand,
        errors: s.errors });
    }
  }

  // ---- formatting as the person types ----
  function formatNumber(el) {
    var d = digitsOf(el.value).replace(/\D/g, "").slice(0, 19);
    var groups = brandOf(d)[0] === "american-express" ? [4, 6, 5] : [4, 4, 4, 4, 3];
    var out = [];
    var i = 0;
    for (var g = 0; g < groups.length && i < d.length; g++) {
      out.push(d.slice(i, i + groups[g]));
      i += groups[g];
    }
    el.value = out.join(" ");
    if (brandBadge) {
      var b = brandOf(d)[0];
      brandBadge.textContent = b === "unknown" ? "" : b.replace("-", " ");
      brandBadge.className = "brand " + b;
    }
  }

  function formatExpiry(el, deleting) {
    var d = el.value.replace(/\D/g, "").slice(0, 6);
    // "1/" means January: the slash ends the month.
    if (/^\s*\d\s*\//.test(el.value)) d = "0" + d;
    if (d.length === 1 && d > "1") d = "0" + d;
    if (d.length >= 2 && !deleting) el.value = d.slice(0, 2) + " / " + d.slice(2);
    else el.value = d.length > 2 ? d.slice(0, 2) + " / " + d.slice(2) : d;
  }

  // Reformats `el` with `format`, keeping the caret after the same number of digits.
  function keepingCaret(el, format) {
    var atEnd = el.selectionStart === el.value.length;
    var digitsBefore = el.value.slice(0, el.selectionStart).replace(/\D/g, "").length;
    format();
    if (atEnd || document.activeElement !== el) return;
    var at = 0;
    for (var seen = 0; at < el.value.length && seen < digitsBefore; at++) {
      if (/\d/.test(el.value[at])) seen++;
    }
    el.setSelectionRange(at, at);
  }

  present().forEach(function (part) {
    var el = inputs[part];
    el.addEventListener("input", function (e) {
      var deleting = !!e.inputType && e.inputType.indexOf("delete") === 0;
      if (part === "number") keepingCaret(el, function () { formatNumber(el); });
      if (part === "expiry") keepingCaret(el, function () { formatExpiry(el, deleting); });
      if (part === "cvc") el.value = el.value.replace(/\D/g, "").slice(0, 4);
      if (atFullLength(part)) check(part);
      // The brand decides the CVC's length: judge it again.
      if (part === "number" && inputs.cvc && checked.cvc) check("cvc");
      report(false);
    });
    el.addEventListener("focus", function () { toPage({ event: "focus", field: part }); });
    el.addEventListener("blur", function () {
      check(part);
      // Autofill fills every input at once: judge them all when one loses focus.
      present().forEach(function (p) { if (inputs[p].value !== "") check(p); });
      report(false);
      toPage({ event: "blur", field: part });
    });
  });
  document.querySelector("form").addEventListener("submit", function (e) { e.preventDefault(); });

  // ---- values for a create ----
  function valueOf(part) {
    var el = part === "month" || part === "year" ? inputs.expiry : inputs[part];
    if (!el) return { missing: true };
    if (part === "number") return { value: digitsOf(el.value) };
    if (part === "month" || part === "year") {
      var e = parseExpiry(el.value);
      return e ? { value: e[part] } : { value: null };
    }
    return { value: el.value };
  }

  // The same rule as a checkpoint's: a create is one more way for the page to ask, so a
  // number is judged only at the lengths typing judges it at.
  function partProblem(part) {
    var input = part === "month" || part === "year" ? "expiry" : part;
    if (!inputs[input]) return "required";
    var found = problem(input);
    if (input === "number" && found !== "required" && !atFullLength("number")) {
      return "incomplete";
    }
    return found;
  }

  var channel = GROUP && "BroadcastChannel" in window
    ? new BroadcastChannel("tessera-elements:" + JSON.stringify([KEY, PARENT, GROUP])) : null;
  var pending = {};
  if (channel) {
    channel.onmessage = function (e) {
      var m = e.data || {};
      if (m.op === "collect" && m.element === NAME && PARTS.indexOf(m.part) >= 0) {
        channel.postMessage({ op: "value", request: m.request, element: NAME, part: m.part,
          value: valueOf(m.part).value, problem: partProblem(m.part) });
      } else if (m.op === "value" && pending[m.request]) {
        pending[m.request](m);
      }
    };
  }

  function collect(element, part) {
    if (element === NAME) {
      var own = valueOf(part);
      return Promise.resolve({ value: own.value, problem: partProblem(part) });
    }
    if (!channel) return Promise.reject(new Error("field not found"));
    var request = Math.random().toString(36).slice(2) + Date.now().toString(36);
    return new Promise(function (resolve, reject) {
      var timer = setTimeout(function () {
        delete pending[request];
        reject(new Error("field not found"));
      }, 2000);
      pending[request] = function (m) {
        clearTimeout(timer);
        delete pending[request];
        resolve(m);
      };
      channel.postMessage({ op: "collect", request: request, element: element, part: part });
    });
  }

  function gather(refs) {
    var data = Object.create(null);
    var problems = [];
    var keys = Object.keys(refs || {});
    return Promise.all(keys.map(function (k) {
      var ref = refs[k];
      if (!ref || typeof ref !== "object" || typeof ref.element !== "string") {
        data[k] = ref;
        return null;
      }
      if (PARTS.indexOf(ref.part) < 0) return Promise.reject(new Error("field not found"));
      return collect(ref.element, String(ref.part)).then(function (got) {
        if (got.problem) problems.push({ field: k, kind: got.problem });
        data[k] = got.value;
      });
    })).then(function () { return { data: data, problems: problems }; });
  }

  function fail(id, status, title, errors) {
    toPage({ event: "result", id: id, ok: false,
      error: { status: status, title: title, errors: errors || {} } });
  }

  // Whether `refs` puts a card's part anywhere: then the token must be a card, so that a card
  // number is never stored outside the card containers nor shown as another type's text.
  function holdsCardParts(refs) {
    return Object.keys(refs || {}).some(function (k) {
      var ref = refs[k];
      return !!ref && typeof ref === "object" && CARD_PARTS.indexOf(ref.part) >= 0;
    });
  }

  function create(m) {
    if (holdsCardParts(m.data) && m.type !== "card") {
      return fail(m.id, 400, "Card fields create only card tokens", { type: ["must be card"] });
    }
    gather(m.data).then(function (g) {
      if (g.problems.length) {
        present().forEach(check);
        report(true);
        var errors = {};
        g.problems.forEach(function (p) { errors["data." + p.field] = [p.kind]; });
        return fail(m.id, 400, "The card details are not valid", errors);
      }
      var body = { type: m.type, data: g.data };
      if (m.metadata) body.metadata = m.metadata;
      if (m.containers) body.containers = m.containers;
      Object.keys(body).forEach(function (k) {
        if (CREATE_FIELDS.indexOf(k) < 0) delete body[k];
      });
      var headers = { "Content-Type": "application/json" };
      headers[KEY_HEADER] = KEY;
      return fetch(API + "/tokens", {
        method: "POST", headers: headers, body: JSON.stringify(body),
        credentials: "omit", referrerPolicy: "no-referrer", cache: "no-store"
      }).then(function (res) {
        return res.json().catch(function () { return {}; }).then(function (answer) {
          if (res.ok) {
            toPage({ event: "result", id: m.id, ok: true, token: answer });
          } else {
            fail(m.id, res.status, answer.title || "The token was not created", answer.errors);
          }
        });
      });
    }).catch(function (e) {
      fail(m.id, 0, e && e.message === "field not found"
        ? "A field of this create is not mounted" : "The vault could not be reached");
    });
  }

  // ---- what the page may ask ----
  var STYLE = {
    color: /^(#[0-9a-f]{3,8}|[a-z]{3,20}|(rgb|hsl)a?\([0-9.,%\s]{5,40}\))$/i,
    length: /^(0|\d{1,3}(\.\d{1,2})?(px|em|rem|%))( (0|\d{1,3}(\.\d{1,2})?(px|em|rem|%))){0,3}$/,
    font: /^[a-z0-9 ,'"-]{1,100}$/i,
    weight: /^(normal|bold|[1-9]00)$/
  };
  var STYLE_KEYS = {
    color: "color", backgroundColor: "color", placeholderColor: "color",
    invalidColor: "color", borderColor: "color", focusColor: "color",
    fontSize: "length", padding: "length", borderRadius: "length", borderWidth: "length",
    lineHeight: "length", fontFamily: "font", fontWeight: "weight"
  };

  function configure(m) {
    var style = m.style && typeof m.style === "object" ? m.style : {};
    Object.keys(STYLE_KEYS).forEach(function (k) {
      var v = own(style, k) ? style[k] : undefined;
      if (typeof v === "string" && STYLE[STYLE_KEYS[k]].test(v)) {
        var prop = "--t-" + k.replace(/[A-Z]/g, function (c) { return "-" + c.toLowerCase(); });
        document.documentElement.style.setProperty(prop, v);
      }
    });
    ["placeholders", "labels", "messages"].forEach(function (kind) {
      var given = m[kind] && typeof m[kind] === "object" ? m[kind] : {};
      Object.keys(given).forEach(function (k) {
        var text = given[k];
        if (typeof text !== "string" || text.length > 200) return;
        if (kind === "messages" && own(messages, k)) messages[k] = text;
        var el = own(inputs, k) ? inputs[k] : null;
        if (!el) return;
        if (kind === "placeholders") el.placeholder = text;
        if (kind === "labels") {
          var label = document.querySelector("label[for=" + k + "]");
          label.textContent = text;
          el.setAttribute("aria-label", text);
        }
      });
    });
    if (inputs.text && m.sensitive === true) {
      inputs.text.classList.add("sensitive");
    }
    if (m.autofill === false) {
      present().forEach(function (p) { inputs[p].setAttribute("autocomplete", "off"); });
    }
  }

  window.addEventListener("message", function (e) {
    if (e.origin !== PARENT || e.source !== window.parent) return;
    var m = e.data;
    if (!m || m.tessera !== "v1" || typeof m.op !== "string") return;
    if (m.op === "configure") configure(m);
    else if (m.op === "focus") { var first = inputs[present()[0]]; if (first) first.focus(); }
    else if (m.op === "clear") {
      present().forEach(function (p) { inputs[p].value = ""; });
      checked = {};
      if (brandBadge) { brandBadge.textContent = ""; brandBadge.className = "brand"; }
      report(true);
    } else if (m.op === "tokenize" && typeof m.id === "string") create(m);
  });

  if (typeof ResizeObserver === "function") {
    new ResizeObserver(function () {
      toPage({ event: "resize", height: Math.ceil(document.documentElement.scrollHeight) });
    }).observe(document.body);
  }
  toPage({ event: "ready", field: FIELD });
})();
