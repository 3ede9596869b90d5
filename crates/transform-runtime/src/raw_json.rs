//! The JSON body's text, read only as far as a transform needs it.
//!
//! A transform usually reads or adds a few members of the body and returns it. Parsing the
//! whole body into engine objects (`JSON.parse`) and encoding all of it again was most of an
//! invocation's cost. Instead the host reads only the top level of the body's text:
//!
//! * [`members`] splits a JSON object into its members, each value as its raw text (serde_json
//!   validates the whole text on the way, exactly as strictly as `JSON.parse`);
//! * scalars become engine values at once; objects and arrays become lazy properties that parse
//!   their text when first read (see `runtime/input.rs`);
//! * when the body is returned, a member still untouched is written as its original text if
//!   that text is already what `JSON.stringify` would write for it ([`is_canonical`]), else it
//!   is parsed and encoded like any value.
//!
//! Whatever [`members`] does not take exactly as `JSON.parse` would (not an object, a repeated
//! key, a key `JSON.parse` would order differently or treat specially) makes it answer `None`,
//! and the engine parses the whole body as before.

use std::{borrow::Cow, fmt, ops::Range};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// One top-level member: its key, and its value's range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    pub(crate) key: Cow<'a, str>,
    pub(crate) value: Range<usize>,
    /// The value's text is known to be canonical (see [`is_canonical`]); `false`: unknown.
    pub(crate) canonical: bool,
}

/// The members of `text` when it is a JSON object the host can take member by member: in one
/// pass when the whole text is canonical (the common case of compact machine-written JSON;
/// every member is then known canonical), else through serde_json.
pub(crate) fn members(text: &str) -> Option<Vec<Member<'_>>> {
    canonical_members(text).or_else(|| validated_members(text))
}

/// The members of a canonical JSON object, found by the pass that checks it.
fn canonical_members(text: &str) -> Option<Vec<Member<'_>>> {
    if !text.starts_with('{') {
        return None;
    }
    let mut c = Canonical {
        b: text.as_bytes(),
        at: 0,
        keys: Vec::new(),
        top: Some(Vec::new()),
    };
    if !(c.value(0) && c.at == text.len()) {
        return None;
    }
    let found = c.top.take()?;
    found
        .into_iter()
        .map(|(key, value)| {
            let key = &text[key];
            (key != "__proto__").then_some(Member {
                key: Cow::Borrowed(key),
                value,
                canonical: true,
            })
        })
        .collect()
}

/// The members of any JSON object text, validated by serde_json.
fn validated_members(text: &str) -> Option<Vec<Member<'_>>> {
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r']);
    if !trimmed.starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = de.deserialize_map(MembersVisitor).ok()?;
    de.end().ok()?;
    let base = text.as_ptr() as usize;
    let mut out: Vec<Member<'_>> = Vec::with_capacity(raw.len());
    for (key, value) in raw {
        // JSON.parse orders array-index keys first and gives `__proto__` no special meaning
        // where a plain property definition would: leave those to it, and repeated keys too.
        if key == "__proto__" || is_array_index(&key) || out.iter().any(|m| m.key == key) {
            return None;
        }
        let start = value.get().as_ptr() as usize - base;
        out.push(Member {
            key,
            value: start..start + value.get().len(),
            canonical: false,
        });
    }
    Some(out)
}

type RawMembers<'a> = Vec<(Cow<'a, str>, &'a RawValue)>;

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = RawMembers<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            out.push((key.0, map.next_value::<&'de RawValue>()?));
        }
        Ok(out)
    }
}

/// A key, borrowed from the text when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// An array index as ECMAScript orders own keys: a canonical decimal below 2^32 - 1.
pub(crate) fn is_array_index(key: &str) -> bool {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    if b.len() > 1 && b[0] == b'0' {
        return false;
    }
    key.parse::<u64>().is_ok_and(|n| n < u64::from(u32::MAX))
}

/// Whether `raw` (valid JSON) is exactly what `JSON.stringify(JSON.parse(raw))` gives: no
/// whitespace, strings escaped as JSON.stringify escapes them, numbers as `Number::toString`
/// writes them, and objects that parsing would not reorder or merge (no array-index keys, no
/// repeated keys).
pub(crate) fn is_canonical(raw: &str) -> bool {
    let mut c = Canonical {
        b: raw.as_bytes(),
        at: 0,
        keys: Vec::new(),
        top: None,
    };
    c.value(0) && c.at == raw.len()
}

/// [`is_array_index`] on bytes.
fn is_index_bytes(b: &[u8]) -> bool {
    b.first().is_some_and(u8::is_ascii_digit) && std::str::from_utf8(b).is_ok_and(is_array_index)
}

/// Nesting the check follows (serde_json's own limit is 128).
const MAX_DEPTH: usize = 128;

struct Canonical<'a> {
    b: &'a [u8],
    at: usize,
    /// Ranges of the keys of the objects being checked (a stack), to find repeated keys.
    keys: Vec<Range<usize>>,
    /// When asked for: the top-level object's members (key without quotes, value).
    top: Option<Vec<(Range<usize>, Range<usize>)>>,
}

impl Canonical<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.b[self.at..].starts_with(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth + 1) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.at += 1;
        let frame = self.keys.len();
        let ok = self.members(depth);
        self.keys.truncate(frame);
        ok
    }

    fn members(&mut self, depth: usize) -> bool {
        let frame = self.keys.len();
        if self.eat(b'}') {
            return true;
        }
        loop {
            let Some(key) = self.string() else {
                return false;
            };
            let name = key.start + 1..key.end - 1;
            let text = &self.b[name.clone()];
            // Escaped keys would need unescaping to compare: rare, so not canonical here.
            if text.contains(&b'\\')
                || is_index_bytes(text)
                || self.keys[frame..]
                    .iter()
                    .any(|k| &self.b[k.clone()] == text)
            {
                return false;
            }
            self.keys.push(name.clone());
            if !self.eat(b':') {
                return false;
            }
            let start = self.at;
            if !self.value(depth + 1) {
                return false;
            }
            if depth == 0 {
                if let Some(top) = &mut self.top {
                    top.push((name, start..self.at));
                }
            }
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string escaped as JSON.stringify escapes: `\"`, `\\`, `\b \f \n \r \t`, `\u00xx`
    /// (lower-case hex) for other control characters; nothing else escaped (JSON.stringify
    /// also writes lone surrogates as `\udxxx`: rare, so not taken as canonical here). Its
    /// range, quotes included.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        let mut i = self.at + 1;
        let b = self.b;
        loop {
            // The plain run up to the next quote, backslash or (invalid) control character.
            while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
                i += 1;
            }
            match *b.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return Some(start..self.at);
                }
                b'\\' => {
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = b.get(i + 2..i + 6)?;
                            if !hex.iter().all(|h| matches!(h, b'0'..=b'9' | b'a'..=b'f')) {
                                return None;
                            }
                            let code = hex
                                .iter()
                                .fold(0u32, |n, h| n * 16 + (*h as char).to_digit(16).unwrap_or(0));
                            // Only control characters without a short form.
                            if code >= 0x20 || matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                // A raw control character: not even valid JSON.
                _ => return None,
            }
        }
    }

    /// A number as `Number::toString` writes it.
    fn number(&mut self) -> bool {
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        let text = &self.b[start..self.at];
        let digits = text.strip_prefix(b"-").unwrap_or(text);
        // Fast path: a plain integer of up to 15 digits without a leading zero (not -0).
        if !digits.is_empty()
            && digits.len() <= 15
            && digits.iter().all(u8::is_ascii_digit)
            && (digits[0] != b'0' || (digits.len() == 1 && text.len() == 1))
        {
            return true;
        }
        let Some(value) = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
        else {
            return false;
        };
        let mut written = String::new();
        crate::number::number(value, &mut written);
        written.as_bytes() == text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_an_object_with_their_raw_values() {
        let text = r#" {"a": 1, "b" :{"c":[1, 2]}, "k\"q":"x\n"} "#;
        let m = members(text).expect("an object");
        let keys: Vec<&str> = m.iter().map(|m| m.key.as_ref()).collect();
        assert_eq!(keys, ["a", "b", "k\"q"]);
        assert_eq!(&text[m[1].value.clone()], r#"{"c":[1, 2]}"#);
        assert_eq!(&text[m[2].value.clone()], r#""x\n""#);
    }

    #[test]
    fn a_canonical_body_is_split_in_the_pass_that_checks_it() {
        let compact = r#"{"card":{"n":"4242"},"items":[1,{"a":null}],"s":"x\n","k":-1.5}"#;
        let m = members(compact).expect("object");
        assert!(m.iter().all(|m| m.canonical), "{m:?}");
        let spaced = r#"{"card": {"n":"4242"}, "items":[1,{"a":null}], "s":"x\n", "k":-1.5}"#;
        let n = members(spaced).expect("object");
        assert!(n.iter().all(|m| !m.canonical));
        let values = |text: &str, m: &[Member<'_>]| -> Vec<(String, String)> {
            m.iter()
                .map(|m| (m.key.to_string(), text[m.value.clone()].to_string()))
                .collect()
        };
        assert_eq!(values(compact, &m), values(spaced, &n));
        assert!(members(r#"{"__proto__":1}"#).is_none());
        assert!(
            members("{\"a\":\"\u{1}\"}").is_none(),
            "a raw control character"
        );
    }

    #[test]
    fn what_json_parse_treats_differently_is_left_to_it() {
        for text in [
            "[1]",
            "1",
            "\"s\"",
            "{\"a\":1,\"a\":2}",
            "{\"1\":1}",
            "{\"__proto__\":{}}",
            "{\"a\":1",
            "{\"a\":1} x",
        ] {
            assert!(members(text).is_none(), "{text}");
        }
        assert!(members("{\"01\":1, \"4294967295\": 2}").is_some());
    }

    #[test]
    fn canonical_texts() {
        for yes in [
            "1",
            "-1",
            "0",
            "1.5",
            "1e+21",
            "1e-7",
            "123456789012345680000",
            "\"a\\\"b\\\\c\\n\\u001f\"",
            "\"é😀\"",
            "{\"a\":[1,{\"b\":null}],\"c\":true}",
            "[]",
            "{}",
        ] {
            assert!(is_canonical(yes), "{yes}");
        }
        for no in [
            " 1",
            "1.0",
            "-0",
            "01",
            "1E21",
            "1e21",
            "0.0000001",
            "\"\\/\"",
            "\"\\u0041\"",
            "\"\\u001F\"",
            "\"\\u000a\"",
            "\"\\ud800\"",
            "{\"a\": 1}",
            "[1, 2]",
            "{\"a\":1,\"a\":2}",
            "{\"1\":1}",
            "{\"a\\u0062\":1}",
        ] {
            assert!(!is_canonical(no), "{no}");
        }
    }
}
