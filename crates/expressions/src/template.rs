//! Templates evaluated when a token is written (docs/api.md, "Expressions"): an alias `id`
//! (and search indexes, fingerprint expressions and masks). Literal text and `{{ path | … }}`
//! objects, where a path names a value of the [`Scope`] (`data`, `data.number`,
//! `data.cards[0]`, `data['a b']`); a path that leads nowhere is `null`.
//!
//! A template that is exactly one object renders its value with its JSON type
//! (`"{{ data.expiration_month }}"` gives `12`); any other renders as a string, `null` as
//! nothing. Filters apply strictly: the data is the caller's own, so a filter that does not
//! apply is a 400 naming it.

use serde_json::Value;

use crate::{
    chain::Chain,
    error::{SyntaxError, TemplateError},
    filter::encoding::text_of,
    truncate,
};

/// The most bytes a template may render, checked from the data's size before it renders.
pub const MAX_RENDERED: u64 = 1 << 20;

/// The named values a template reads.
#[derive(Debug, Default)]
pub struct Scope<'a> {
    values: Vec<(&'static str, &'a Value)>,
}

impl<'a> Scope<'a> {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// The scope with `name` bound to `value`.
    pub fn with(mut self, name: &'static str, value: &'a Value) -> Self {
        self.values.push((name, value));
        self
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// One step of a path after its root.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A parsed `{{ path | filters }}`.
#[derive(Debug, Clone)]
struct Object {
    root: String,
    steps: Vec<Step>,
    chain: Chain,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Object(Object),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Whether `text` is a template rather than a plain value: it holds `{{`.
    pub fn is_template(text: &str) -> bool {
        text.contains("{{")
    }

    /// Parses `text`, whose paths may start only at one of `roots`.
    pub fn parse(text: &str, roots: &[&str]) -> Result<Self, SyntaxError> {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(rel) = text[at..].find('{') {
            let open = at + rel;
            match text.as_bytes().get(open + 1) {
                Some(b'{') => {}
                Some(b'%') => {
                    return Err(SyntaxError::at(
                        open,
                        "Liquid tags ({% … %}) are not supported; use {{ … }} objects",
                    ))
                }
                _ => {
                    at = open + 1;
                    continue;
                }
            }
            if open > at {
                parts.push(Part::Text(text[at..open].to_string()));
            }
            let close = closing(text, open + 2)
                .ok_or_else(|| SyntaxError::at(open, "unterminated object: missing `}}`"))?;
            let object = object(&text[open + 2..close], roots).map_err(|e| e.shifted(open + 2))?;
            parts.push(Part::Object(object));
            at = close + 2;
        }
        if at < text.len() {
            parts.push(Part::Text(text[at..].to_string()));
        }
        Ok(Self { parts })
    }

    /// Renders the template over `scope`.
    pub fn render(&self, scope: &Scope<'_>) -> Result<Value, TemplateError> {
        let bound = self.bound(scope);
        if bound > MAX_RENDERED {
            return Err(TemplateError::TooLarge { max: MAX_RENDERED });
        }
        if let [Part::Object(only)] = self.parts.as_slice() {
            return Ok(only.chain.render_strict(lookup(only, scope))?);
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Object(o) => match o.chain.render_strict(lookup(o, scope))? {
                    Value::Null => {}
                    value => out.push_str(&text_of(&value)),
                },
            }
        }
        Ok(Value::String(out))
    }

    /// Upper bound of what the template renders over `scope`, from the sizes of its values.
    fn bound(&self, scope: &Scope<'_>) -> u64 {
        self.parts.iter().fold(0u64, |n, part| {
            let more = match part {
                Part::Text(text) => text.len() as u64,
                Part::Object(o) => {
                    let input = scope
                        .get(&o.root)
                        .map_or(4, |v| serde_json::to_vec(v).map_or(0, |b| b.len() as u64));
                    o.chain.bound(input)
                }
            };
            n.saturating_add(more)
        })
    }
}

/// The `}}` closing an object whose inside starts at `from`, outside quotes.
fn closing(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut j = from;
    while j + 1 < bytes.len() {
        match (quote, bytes[j]) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b @ (b'\'' | b'"')) => quote = Some(b),
            (None, b'}') if bytes[j + 1] == b'}' => return Some(j),
            (None, _) => {}
        }
        j += 1;
    }
    None
}

/// Reads an object's inside: a path, then its filters.
fn object(inner: &str, roots: &[&str]) -> Result<Object, SyntaxError> {
    let lead = inner.len() - inner.trim_start().len();
    let (root, steps, used) = path(&inner[lead..]).map_err(|e| e.shifted(lead))?;
    if !roots.contains(&root.as_str()) {
        return Err(SyntaxError::at(
            lead,
            format!(
                "unknown variable `{}`: a template here reads {}",
                truncate(&root),
                roots.join(" and ")
            ),
        ));
    }
    let rest = &inner[lead + used..];
    let chain_at = lead + used + (rest.len() - rest.trim_start().len());
    let chain = Chain::parse(rest.trim()).map_err(|e| e.shifted(chain_at))?;
    Ok(Object { root, steps, chain })
}

/// Reads a path at the start of `text`: its root, its steps, and how many bytes it took.
fn path(text: &str) -> Result<(String, Vec<Step>, usize), SyntaxError> {
    let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let root_len = text.find(|c: char| !is_name(c)).unwrap_or(text.len());
    if root_len == 0 {
        return Err(SyntaxError::at(0, "expected a variable such as `data`"));
    }
    let mut steps = Vec::new();
    let mut at = root_len;
    loop {
        let rest = &text[at..];
        if let Some(after) = rest.strip_prefix('.') {
            let len = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
            if len == 0 {
                return Err(SyntaxError::at(at, "expected a name after `.`"));
            }
            steps.push(Step::Key(after[..len].to_string()));
            at += 1 + len;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (step, len) = bracket(after).ok_or_else(|| {
                SyntaxError::at(at, "expected `[index]` or `['name']` after a variable")
            })?;
            steps.push(step);
            at += 1 + len;
        } else {
            return Ok((text[..root_len].to_string(), steps, at));
        }
    }
}

/// A bracketed step (after its `[`) and the bytes it took, `]` included.
fn bracket(text: &str) -> Option<(Step, usize)> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"');
    if let Some(q) = quote {
        let end = text[1..].find(q)? + 1;
        text[end + 1..]
            .starts_with(']')
            .then(|| (Step::Key(text[1..end].to_string()), end + 2))
    } else {
        let end = text.find(']')?;
        let index = text[..end].trim().parse().ok()?;
        Some((Step::Index(index), end + 1))
    }
}

/// The value `object`'s path leads to in `scope`, `null` where it leads nowhere.
fn lookup(object: &Object, scope: &Scope<'_>) -> Value {
    let mut value = scope.get(&object.root);
    for step in &object.steps {
        value = match (step, value) {
            (Step::Key(key), Some(Value::Object(members))) => members.get(key),
            (Step::Index(i), Some(Value::Array(items))) => items.get(*i),
            _ => None,
        };
    }
    value.cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn render(template: &str, data: Value) -> Result<Value, TemplateError> {
        let t = Template::parse(template, &["data"])?;
        t.render(&Scope::new().with("data", &data))
    }

    #[test]
    fn paths_bind_data_and_a_lone_object_keeps_its_type() {
        let card = json!({"number": "4242424242424242", "expiration_month": 12, "cards": [{"a": 1}], "a b": "x"});
        for (template, expected) in [
            ("{{ data.expiration_month }}", json!(12)),
            ("{{data.number|last4}}", json!("4242")),
            ("{{ data.cards[0].a }}", json!(1)),
            ("{{ data['a b'] }}", json!("x")),
            ("{{ data.missing }}", Value::Null),
            ("{{ data.number.deeper }}", Value::Null),
            ("m{{ data.expiration_month }}", json!("m12")),
            ("x{{ data.missing }}y", json!("xy")),
            ("plain", json!("plain")),
        ] {
            assert_eq!(render(template, card.clone()), Ok(expected), "{template}");
        }
        let email = json!({"email": "john.doe@gmail.com"});
        let t = "{{ data.email | split: '@' | first | size }}@{{ data.email | split: '@' | last }}";
        assert_eq!(render(t, email), Ok(json!("8@gmail.com")));
    }

    #[test]
    fn what_is_refused() {
        for bad in [
            "{{ metadata.x }}",
            "{{ data | shout }}",
            "{{ data.",
            "{{ data[x] }}",
            "{% if data %}x{% endif %}",
            "{{ }}",
        ] {
            assert!(Template::parse(bad, &["data"]).is_err(), "{bad}");
        }
        let e = render("{{ data | card_exp: 'MM' }}", json!("x")).expect_err("not a card");
        assert!(matches!(e, TemplateError::Unapplicable(u) if u.filter == "card_exp"));
        let big = render("{{ data | pad_left: 10000, 'x' | replace: 'x', 'yyyyyyyyyyyyyyyyyyyy' | replace: 'y', 'zzzzzzzzzzzzzzzzzzzz' }}", json!("a"));
        assert_eq!(big, Err(TemplateError::TooLarge { max: MAX_RENDERED }));
    }
}
