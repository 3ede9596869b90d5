//! The `json: '<JSONPath>'` filter: an RFC 9535 JSONPath's matches, `null` for none, the value
//! for one, the array of them for several. Regular-expression functions (`match`, `search`),
//! whose running time depends on the value, are refused when the expression is parsed.

use serde_json::Value;
use serde_json_path::JsonPath;

use crate::text::truncate;

/// How deep a stored value can nest: token data is parsed by `serde_json`, which refuses more
/// than 128 levels, so a descendant segment (`..`) visits every node at most 129 times over.
const MAX_DEPTH: u64 = 129;
/// Longest JSONPath accepted, in characters.
const MAX_PATH_CHARS: usize = 256;
/// Deepest nesting of brackets and parentheses accepted in a JSONPath: its parser recurses
/// once per level, so a deeper path could exhaust the stack of the thread parsing it.
const MAX_NESTING: usize = 8;

/// A parsed `json:` filter.
#[derive(Debug, Clone)]
pub struct JsonFilter {
    path: Box<JsonPath>,
    /// Upper bound of how much larger the result can be than the input (see [`path_growth`]).
    growth: u64,
}

impl JsonFilter {
    /// Parses the path (already unquoted).
    pub(crate) fn parse(path: &str) -> Result<Self, String> {
        check_shape(path)?;
        if let Some(function) = regex_function(path) {
            return Err(format!(
                "the JSONPath function `{function}` is not allowed: regular expressions over token data are refused"
            ));
        }
        let parsed = JsonPath::parse(path)
            .map_err(|e| format!("invalid JSONPath `{}`: {e}", truncate(path)))?;
        Ok(Self {
            path: Box::new(parsed),
            growth: path_growth(path),
        })
    }

    /// The matches of the path in `value`.
    pub(crate) fn apply(&self, value: &Value) -> Value {
        let mut nodes = self.path.query(value).all();
        match nodes.len() {
            0 => Value::Null,
            1 => nodes.pop().cloned().unwrap_or(Value::Null),
            _ => Value::Array(nodes.into_iter().cloned().collect()),
        }
    }

    /// Upper bound of the result's JSON text given one of the input's. Several matches are
    /// an array: the matches plus a comma or bracket each.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        self.growth
            .saturating_mul(input)
            .saturating_mul(2)
            .saturating_add(4)
    }
}

/// The regular-expression function (`match`, `search`) a JSONPath calls, outside its string
/// literals, if any.
fn regex_function(path: &str) -> Option<&'static str> {
    let bytes = path.as_bytes();
    for i in Unquoted::new(path) {
        let boundary = i == 0 || !is_name_byte(bytes[i - 1]);
        if boundary {
            for name in ["match", "search"] {
                if path[i..].starts_with(name)
                    && path[i + name.len()..].trim_start().starts_with('(')
                {
                    return Some(name);
                }
            }
        }
    }
    None
}

/// The positions of a JSONPath's bytes outside its string literals (the quotes excluded), in
/// order: what the scans of the path's text look at, so that a name or a `..` inside a
/// literal counts for nothing.
struct Unquoted<'a> {
    bytes: &'a [u8],
    i: usize,
    quote: Option<u8>,
}

impl<'a> Unquoted<'a> {
    fn new(path: &'a str) -> Self {
        Self {
            bytes: path.as_bytes(),
            i: 0,
            quote: None,
        }
    }
}

impl Iterator for Unquoted<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while let Some(&b) = self.bytes.get(self.i) {
            let i = self.i;
            self.i += 1;
            match self.quote {
                Some(_) if b == b'\\' => self.i += 1,
                Some(q) if b == q => self.quote = None,
                Some(_) => {}
                None if b == b'\'' || b == b'"' => self.quote = Some(b),
                None => return Some(i),
            }
        }
        None
    }
}

/// Refuses, before the path is parsed, what could make parsing or running it costly whatever
/// the data: a path over [`MAX_PATH_CHARS`] characters, nesting deeper than [`MAX_NESTING`],
/// more than one filter (`?`), and an absolute query (`$`) inside a filter, whose cost grows
/// with a power of the data's size at each level.
fn check_shape(path: &str) -> Result<(), String> {
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(format!("a JSONPath is at most {MAX_PATH_CHARS} characters"));
    }
    let bytes = path.as_bytes();
    let (mut depth, mut deepest, mut filters) = (0usize, 0usize, 0usize);
    let mut filter_depth: Option<usize> = None;
    for i in Unquoted::new(path) {
        match bytes[i] {
            b'[' | b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b')' => {
                depth = depth.saturating_sub(1);
                if filter_depth.is_some_and(|d| depth < d) {
                    filter_depth = None;
                }
            }
            b'?' => {
                filters += 1;
                filter_depth = Some(depth);
            }
            b'$' if i > 0 && filter_depth.is_some() => {
                return Err(
                    "an absolute query (`$`) inside a filter is not allowed: use `@`".into(),
                )
            }
            _ => {}
        }
    }
    if deepest > MAX_NESTING {
        return Err(format!(
            "a JSONPath nests brackets and parentheses at most {MAX_NESTING} deep"
        ));
    }
    if filters > 1 {
        return Err("a JSONPath holds at most one filter (`?`)".into());
    }
    Ok(())
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A conservative bound, read from the path's text, of how much larger than its input a
/// JSONPath's result can be: [`MAX_DEPTH`] per descendant segment (`..`), times the number of
/// selectors of each bracketed segment (`[a,b]` may select a value twice); names, indices,
/// wildcards, slices and filters select parts of their input. Commas inside filters count too,
/// which only over-estimates.
fn path_growth(path: &str) -> u64 {
    let bytes = path.as_bytes();
    let (mut depth, mut selectors, mut growth) = (0u32, 1u64, 1u64);
    let mut scan = Unquoted::new(path);
    while let Some(i) = scan.next() {
        match bytes[i] {
            b'.' if depth == 0 && bytes.get(i + 1) == Some(&b'.') => {
                growth = growth.saturating_mul(MAX_DEPTH);
                // The second dot of `..`.
                scan.next();
            }
            b'[' => {
                depth += 1;
                if depth == 1 {
                    selectors = 1;
                }
            }
            b',' if depth == 1 => selectors += 1,
            b']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    growth = growth.saturating_mul(selectors);
                }
            }
            _ => {}
        }
    }
    growth
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(path: &str) -> JsonFilter {
        JsonFilter::parse(path).expect("path")
    }

    /// Pinned rule (docs/api.md, "Expressions"): a path that matches nothing renders `null`,
    /// several matches render as an array.
    #[test]
    fn matches_none_one_or_several() {
        let card = json!({"number": "4242424242424242", "cvc": "123"});
        assert_eq!(filter("$.number").apply(&card), json!("4242424242424242"));
        assert_eq!(filter("$.missing").apply(&card), Value::Null);
        assert_eq!(filter("$.number").apply(&json!("x")), Value::Null);
        assert_eq!(filter("$.*").apply(&json!({"a": 1, "b": 2})), json!([1, 2]));
        assert_eq!(filter("$[?@ == \"123\"]").apply(&card), json!("123"));
    }

    #[test]
    fn regular_expression_functions_are_refused_at_parse_time() {
        for bad in [
            "$[?search(@.number, \"^41\")]",
            "$[?match(@.number, \"4.*\")]",
            "$[?search (@.n, '1')]",
            "$[?count(@.*) > 0 && search(@.a, \"x\")]",
        ] {
            let e = JsonFilter::parse(bad).expect_err(bad);
            assert!(e.contains("not allowed"), "{e}");
        }
        // What could make parsing or running a path costly, whatever the data.
        let deep = format!("$[?{}@{}]", "(".repeat(1000), ")".repeat(1000));
        for bad in [
            deep.as_str(),
            "$[?count($[?count($[*])>0])>0]",
            "$[?@.a == $.b]",
            "$[?@.a][?@.b]",
            &format!("$.{}", "a".repeat(300)),
        ] {
            assert!(JsonFilter::parse(bad).is_err(), "{bad}");
        }
        assert!(
            JsonFilter::parse("$.books[?(@.price < 10)].title").is_ok(),
            "Basis Theory's example"
        );
        // Names that merely contain the words, or quote them, are fine.
        for ok in [
            "$.match",
            "$.research",
            "$[\"search(\"]",
            "$[?@.matches == 1]",
        ] {
            assert!(JsonFilter::parse(ok).is_ok(), "{ok}");
        }
        assert!(JsonFilter::parse("$[").is_err());
    }

    #[test]
    fn path_growth_counts_descendants_and_duplicate_selectors() {
        assert_eq!(path_growth("$.number"), 1);
        assert_eq!(path_growth("$['a']['b'][0]"), 1);
        assert_eq!(path_growth("$.*[*]"), 1);
        assert_eq!(path_growth("$['a','a','a']"), 3);
        assert_eq!(path_growth("$[*,*][*,*]"), 4);
        assert_eq!(path_growth("$..x"), MAX_DEPTH);
        assert_eq!(path_growth("$['..', ',']"), 2, "quoted text does not count");
        assert_eq!(path_growth(&"[*,*]".repeat(80)), u64::MAX, "saturates");
    }
}
