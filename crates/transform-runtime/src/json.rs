//! Encoding a returned body as JSON from the engine's values, without `JSON.stringify`.
//!
//! QuickJS's `JSON.stringify` was the largest single cost of a transform (about half of a warm
//! invocation on a 1 KiB body: it looks up `toJSON` on every value through the prototype chain
//! and builds every key as a quoted engine string). The bodies transforms return are nearly
//! always plain data, which this encoder writes directly, with exactly `JSON.stringify`'s
//! output. Whatever it does not handle exactly — objects with another prototype (class
//! instances, `Date`, boxed primitives, errors), proxies, `toJSON` anywhere, `BigInt`, strings
//! holding lone surrogates, nesting deeper than [`MAX_DEPTH`] (which includes cycles) — makes it
//! give up, and the caller runs the original `JSON.stringify` instead. (A getter on a returned
//! object then runs twice; its result is the same unless it counts its calls.)

use std::{collections::HashMap, fmt::Write as _, ops::Range, rc::Rc, time::Instant};

use rquickjs::{Array, Atom, Ctx, Function, Object, Type, Value};

use crate::number::number;

/// Nesting the encoder follows before leaving the value to `JSON.stringify`.
const MAX_DEPTH: usize = 128;

/// Values encoded between two looks at the clock.
const VALUES_PER_CLOCK_CHECK: u32 = 4096;

/// Why the encoder stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Something it does not handle exactly: use `JSON.stringify`.
    Unsupported,
    /// The output passed the limit (what the engine's memory limit would have refused).
    TooLarge,
    /// The invocation's deadline passed.
    Deadline,
    /// The engine threw (a getter): its exception is pending in the context.
    Thrown,
}

impl From<rquickjs::Error> for Stop {
    fn from(_: rquickjs::Error) -> Self {
        Stop::Thrown
    }
}

/// What the encoder compares against: the context's original prototypes.
pub(crate) struct Protos<'js> {
    pub(crate) object: Object<'js>,
    pub(crate) array: Object<'js>,
}

/// A JSON body given to the transform member by member (`runtime/input.rs`): members that
/// are still untouched are written as their original text when it is canonical.
pub(crate) struct LazyView<'js> {
    pub(crate) object: Object<'js>,
    /// The member texts the accessors parse (a text is replaced once parsed or written).
    pub(crate) texts: Object<'js>,
    pub(crate) text: Rc<str>,
    pub(crate) members: Vec<LazyMemberView<'js>>,
    /// The getter of an own accessor property (`runtime/descriptor.rs`).
    pub(crate) untouched: fn(&Ctx<'js>, &Object<'js>, &str) -> Option<Value<'js>>,
}

/// A lazy member, for the encoder.
pub(crate) struct LazyMemberView<'js> {
    pub(crate) atom: Atom<'js>,
    pub(crate) key: String,
    /// Its value's range in the body's text.
    pub(crate) raw: Range<usize>,
    /// Whether that text is known canonical.
    pub(crate) canonical: bool,
    /// The shared getter of its name.
    pub(crate) getter: Function<'js>,
}

impl<'js> LazyView<'js> {
    /// The text of member `key` when it is untouched: its property still holds the shared
    /// getter and its text was never parsed or replaced.
    fn untouched(&self, key: &Atom<'js>) -> Result<Option<(&str, bool)>, Stop> {
        let Some(m) = self.members.iter().find(|m| m.atom == *key) else {
            return Ok(None);
        };
        let ctx = self.object.ctx();
        let ours =
            (self.untouched)(ctx, &self.object, &m.key).is_some_and(|g| g == *m.getter.as_value());
        if !ours || !self.texts.get::<_, Value>(m.key.as_str())?.is_string() {
            return Ok(None);
        }
        Ok(Some((&self.text[m.raw.clone()], m.canonical)))
    }
}

/// The encoder of one value.
pub(crate) struct Encoder<'a, 'js> {
    protos: &'a Protos<'js>,
    lazy: Option<&'a LazyView<'js>>,
    /// `toJSON`, as an atom (looked up on every object).
    to_json: Atom<'js>,
    /// Keys already quoted: the same few keys repeat through arrays of records.
    keys: HashMap<Atom<'js>, String, foldhash::fast::RandomState>,
    out: String,
    limit: usize,
    deadline: Instant,
    until_clock: u32,
}

impl<'a, 'js> Encoder<'a, 'js> {
    /// `JSON.stringify(value)` (`None` where it gives `undefined`: a function, a symbol), or
    /// why the encoder cannot tell.
    pub(crate) fn encode(
        protos: &'a Protos<'js>,
        lazy: Option<&'a LazyView<'js>>,
        value: &Value<'js>,
        limit: usize,
        deadline: Instant,
    ) -> Result<Option<String>, Stop> {
        // `toJSON` on the prototypes applies to every object: leave it all to JSON.stringify.
        if protos.object.contains_key("toJSON")? || protos.array.contains_key("toJSON")? {
            return Err(Stop::Unsupported);
        }
        let to_json = Atom::from_str(protos.object.ctx().clone(), "toJSON")?;
        let mut encoder = Self {
            protos,
            lazy,
            to_json,
            keys: HashMap::default(),
            out: String::with_capacity(256),
            limit,
            deadline,
            until_clock: VALUES_PER_CLOCK_CHECK,
        };
        Ok(encoder.value(value, 0)?.then_some(encoder.out))
    }

    fn tick(&mut self) -> Result<(), Stop> {
        if self.out.len() > self.limit {
            return Err(Stop::TooLarge);
        }
        self.until_clock -= 1;
        if self.until_clock == 0 {
            self.until_clock = VALUES_PER_CLOCK_CHECK;
            if Instant::now() >= self.deadline {
                return Err(Stop::Deadline);
            }
        }
        Ok(())
    }

    /// Writes `value`; `false` when JSON.stringify would skip it (`undefined`, functions,
    /// symbols), which the caller turns into a missing member or `null`.
    fn value(&mut self, value: &Value<'js>, depth: usize) -> Result<bool, Stop> {
        self.tick()?;
        match value.type_of() {
            Type::Undefined
            | Type::Uninitialized
            | Type::Function
            | Type::Constructor
            | Type::Symbol => return Ok(false),
            Type::Null => self.out.push_str("null"),
            Type::Bool => self.out.push_str(if value.as_bool() == Some(true) {
                "true"
            } else {
                "false"
            }),
            Type::Int => {
                let _ = write!(self.out, "{}", value.as_int().unwrap_or(0));
            }
            Type::Float => number(value.as_float().unwrap_or(f64::NAN), &mut self.out),
            Type::String => {
                let text = value
                    .as_string()
                    .ok_or(Stop::Unsupported)?
                    .to_string()
                    .map_err(|_| Stop::Unsupported)?;
                quote(&text, &mut self.out);
            }
            Type::Array if !value.is_proxy() => {
                let array = value.as_array().ok_or(Stop::Unsupported)?;
                self.array(array, depth)?;
            }
            Type::Object => {
                let object = value.as_object().ok_or(Stop::Unsupported)?;
                self.object(object, depth)?;
            }
            _ => return Err(Stop::Unsupported),
        }
        Ok(true)
    }

    /// Plain, with its context's original prototype, no `toJSON` of its own, not too deep.
    fn plain(&self, object: &Object<'js>, proto: &Object<'js>, depth: usize) -> Result<(), Stop> {
        if depth >= MAX_DEPTH || object.is_proxy() {
            return Err(Stop::Unsupported);
        }
        match object.get_prototype() {
            Some(p) if p.as_value() == proto.as_value() => {}
            _ => return Err(Stop::Unsupported),
        }
        if object.contains_key(self.to_json.clone())? {
            return Err(Stop::Unsupported);
        }
        Ok(())
    }

    fn array(&mut self, array: &Array<'js>, depth: usize) -> Result<(), Stop> {
        self.plain(array.as_object(), &self.protos.array.clone(), depth)?;
        self.out.push('[');
        for i in 0..array.len() {
            if i > 0 {
                self.out.push(',');
            }
            let item: Value = array.get(i)?;
            if !self.value(&item, depth + 1)? {
                self.out.push_str("null");
            }
        }
        self.out.push(']');
        Ok(())
    }

    fn object(&mut self, object: &Object<'js>, depth: usize) -> Result<(), Stop> {
        if let Some(lazy) = self.lazy {
            if lazy.object.as_value() == object.as_value() {
                return self.lazy_object(object, lazy, depth);
            }
        }
        self.plain(object, &self.protos.object.clone(), depth)?;
        self.out.push('{');
        let mut first = true;
        for entry in object.props::<Atom, Value>() {
            let (key, item) = entry?;
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            self.key(key)?;
            if self.value(&item, depth + 1)? {
                first = false;
            } else {
                self.out.truncate(mark);
            }
        }
        self.out.push('}');
        Ok(())
    }

    /// The body object given member by member: an untouched member whose text is canonical
    /// is copied from the text (what `JSON.stringify(JSON.parse(text))` gives), any other is
    /// read (which parses an untouched one) and encoded.
    fn lazy_object(
        &mut self,
        object: &Object<'js>,
        lazy: &LazyView<'js>,
        depth: usize,
    ) -> Result<(), Stop> {
        self.plain(object, &self.protos.object.clone(), depth)?;
        self.out.push('{');
        let mut first = true;
        for key in object.keys::<Atom>() {
            let key = key?;
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            self.key(key.clone())?;
            let raw = lazy
                .untouched(&key)?
                .filter(|(raw, canonical)| *canonical || crate::raw_json::is_canonical(raw))
                .map(|(raw, _)| raw);
            let written = match raw {
                Some(raw) => {
                    self.out.push_str(raw);
                    self.tick()?;
                    true
                }
                None => {
                    let item: Value = object.get(key)?;
                    self.value(&item, depth + 1)?
                }
            };
            if written {
                first = false;
            } else {
                self.out.truncate(mark);
            }
        }
        self.out.push('}');
        Ok(())
    }

    /// `"key":`, quoted once per atom.
    fn key(&mut self, key: Atom<'js>) -> Result<(), Stop> {
        match self.keys.get(&key) {
            Some(quoted) => self.out.push_str(quoted),
            None => {
                let mut quoted = String::new();
                quote(
                    &key.to_string().map_err(|_| Stop::Unsupported)?,
                    &mut quoted,
                );
                self.out.push_str(&quoted);
                self.keys.insert(key, quoted);
            }
        }
        self.out.push(':');
        Ok(())
    }
}

/// A string as `JSON.stringify` quotes it (the same escapes as serde_json: `\"`, `\\`, the
/// short forms `\b \f \n \r \t`, `\u00xx` for other controls; everything else as it is).
fn quote(text: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Function, Runtime};

    /// Every value of `source` (a JavaScript expression yielding an array of test values),
    /// encoded here and by the engine's `JSON.stringify`, must agree (or give up).
    fn agree(source: &str) -> (usize, usize) {
        let runtime = Runtime::new().expect("runtime");
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            let values: Array = ctx.eval(source).expect("values");
            let stringify: Function = ctx.eval("JSON.stringify").expect("stringify");
            let protos = Protos {
                object: ctx.eval("Object.prototype").expect("proto"),
                array: ctx.eval("Array.prototype").expect("proto"),
            };
            let far = Instant::now() + std::time::Duration::from_secs(60);
            let (mut same, mut gave_up) = (0, 0);
            for value in values.iter::<Value>() {
                let value = value.expect("value");
                let wrapped = Array::new(ctx.clone()).expect("array");
                wrapped.set(0, value.clone()).expect("set");
                let expected: Option<String> =
                    stringify.call((wrapped.clone(),)).expect("stringify");
                match Encoder::encode(&protos, None, wrapped.as_value(), usize::MAX, far) {
                    Ok(got) => {
                        assert_eq!(got, expected, "{value:?}");
                        same += 1;
                    }
                    Err(Stop::Unsupported) => gave_up += 1,
                    Err(other) => panic!("{other:?} for {value:?}"),
                }
            }
            (same, gave_up)
        })
    }

    #[test]
    fn plain_data_is_encoded_exactly_as_json_stringify_does() {
        let (same, gave_up) = agree(
            r#"[
            null, true, false, 0, -0, 1, -1, 2147483647, -2147483648, 2147483648, 1e21, 1e20,
            123456789012345680000, 0.1, -0.1, 1.5, 1e-6, 1e-7, 1.5e-7, 123e-20, 5e-324,
            1.7976931348623157e308, NaN, Infinity, -Infinity, 100, 1000.5, 0.000001234,
            "", "plain", "quote\" back\\ slash", "\n\r\t\b\f\u0000\u001f\u007f", "é ü ☃ 😀",
            "\u2028\u2029", [], [1, "a", null], [undefined, () => 1, Symbol("s")],
            {}, {"a": 1, "b": [1, {"c": "d"}]}, {"u": undefined, "f": () => 1, "s": Symbol(), "k": 1},
            {"2": "b", "1": "a", "x": "c"}, Object.create(null), [[[[]]]], {"nested": {"deep": [{"x": 1.25}]}},
            (() => { const a = [1]; a[3] = 4; return a; })(),
        ]"#,
        );
        assert_eq!(gave_up, 1, "Object.create(null) is left to JSON.stringify");
        assert!(same > 40);
    }

    #[test]
    fn what_is_not_plain_is_left_to_json_stringify() {
        let (same, gave_up) = agree(
            r#"[
            new Date(0), new String("s"), new Number(1), { toJSON() { return 1; } },
            new (class A { constructor() { this.a = 1; } })(), new Map(), new Proxy({}, {}),
            new Proxy([], {}), "\ud800", { "k": "\udc00" }, new Error("e"), /re/,
            (() => { let o = {}; for (let i = 0; i < 200; i++) o = { o }; return o; })(),
        ]"#,
        );
        assert_eq!(same, 0);
        assert_eq!(gave_up, 13);
    }

    /// A cycle is nesting without end: the encoder stops at its depth bound and leaves the
    /// value to JSON.stringify (which throws its own TypeError).
    #[test]
    fn cycles_are_left_to_json_stringify() {
        let runtime = Runtime::new().expect("runtime");
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            let value: Value = ctx
                .eval("(() => { const o = { a: [1] }; o.a.push(o); return o; })()")
                .expect("value");
            let protos = Protos {
                object: ctx.eval("Object.prototype").expect("proto"),
                array: ctx.eval("Array.prototype").expect("proto"),
            };
            let far = Instant::now() + std::time::Duration::from_secs(60);
            assert!(matches!(
                Encoder::encode(&protos, None, &value, usize::MAX, far),
                Err(Stop::Unsupported)
            ));
        });
    }
}
