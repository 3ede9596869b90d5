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
    text::truncate,
};

/// The most bytes a template may render, checked from the data's size before it renders.
pub const MAX_RENDERED: u64 = 1 << 20;
/// The longest template accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 2048;
/// The most `{{ … }}` objects one template may hold: each one reads a value of the scope
/// and renders it, so the work of a rendering grows with their number.
pub const MAX_OBJECTS: usize = 16;

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
        if text.len() > MAX_TEMPLATE_BYTES {
            return Err(SyntaxError::at(
                MAX_TEMPLATE_BYTES,
                format!("a template is at most {MAX_TEMPLATE_BYTES} bytes"),
            ));
        }
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
            if parts
                .iter()
                .filter(|p| matches!(p, Part::Object(_)))
                .count()
                == MAX_OBJECTS
            {
                return Err(SyntaxError::at(
                    open,
                    format!("a template holds at most {MAX_OBJECTS} objects ({{{{ … }}}})"),
                ));
            }
            let object = object(&text[open + 2..close], roots).map_err(|e| e.shifted(open + 2))?;
            parts.push(Part::Object(object));
            at = close + 2;
        }
        if at < text.len() {
            parts.push(Part::Text(text[at..].to_string()));
        }
        Ok(Self { parts })
    }

    /// Whether an object of the template reads `root` (`metadata`).
    pub fn reads(&self, root: &str) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Object(o) if o.root == root))
    }

    /// Renders the template over `scope`, if what rendering holds is bounded by
    /// [`MAX_RENDERED`] bytes.
    pub fn render(&self, scope: &Scope<'_>) -> Result<Value, TemplateError> {
        self.render_within(scope, &mut { MAX_RENDERED })
    }

    /// Renders the template over `scope`, spending its bound from `budget`: templates rendered
    /// for one write share a budget, so that their number does not multiply its cost. Refused,
    /// with nothing spent, when the bound exceeds what is left.
    pub fn render_within(
        &self,
        scope: &Scope<'_>,
        budget: &mut u64,
    ) -> Result<Value, TemplateError> {
        let bound = self.bound(scope);
        if bound > *budget {
            return Err(TemplateError::TooLarge { max: MAX_RENDERED });
        }
        *budget -= bound;
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

    /// Upper bound of what rendering the template over `scope` holds, from the sizes of its
    /// values: each root's JSON text is measured once, whatever the number of objects.
    fn bound(&self, scope: &Scope<'_>) -> u64 {
        let mut sizes: Vec<(&str, u64)> = Vec::new();
        self.parts.iter().fold(0u64, |n, part| {
            let more = match part {
                Part::Text(text) => text.len() as u64,
                Part::Object(o) => {
                    let input = match sizes.iter().find(|(root, _)| *root == o.root) {
                        Some((_, size)) => *size,
                        None => {
                            let size = scope.get(&o.root).map_or(4, json_size);
                            sizes.push((&o.root, size));
                            size
                        }
                    };
                    o.chain.bound(input)
                }
            };
            n.saturating_add(more)
        })
    }
}

/// Bytes of `value`'s JSON text, counted without building it.
fn json_size(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len() as u64);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => u64::MAX,
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
        // Growth hidden behind a filter that reduces is still counted.
        let hidden = render("{{ data | pad_left: 10000, 'x' | replace: 'x', 'yyyyyyyyyyyyyyyyyyyy' | replace: 'y', 'zzzzzzzzzzzzzzzzzzzz' | size }}", json!("a"));
        assert_eq!(hidden, Err(TemplateError::TooLarge { max: MAX_RENDERED }));
    }

    #[test]
    fn templates_of_one_write_share_a_budget() {
        let t = Template::parse("{{ data | pad_left: 10000, 'x' }}", &["data"]).expect("t");
        let data = json!("a");
        let scope = Scope::new().with("data", &data);
        let mut budget = MAX_RENDERED;
        let mut rendered = 0;
        while t.render_within(&scope, &mut budget).is_ok() {
            rendered += 1;
        }
        // Each rendering may hold 10,000 characters of up to 12 bytes of JSON: eight fit in
        // 1 MiB.
        assert_eq!(rendered, 8);
        assert!(t.render(&scope).is_ok(), "alone, it fits");
    }

    #[test]
    fn a_template_is_bounded_in_length_and_objects() {
        let most = "{{ data }}".repeat(MAX_OBJECTS);
        assert!(Template::parse(&most, &["data"]).is_ok());
        let e = Template::parse(&format!("{most}{{{{ data }}}}"), &["data"]).expect_err("17");
        assert!(e.message.contains("at most 16 objects"), "{e}");
        let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
        let e = Template::parse(&long, &["data"]).expect_err("long");
        assert!(e.message.contains("at most 2048 bytes"), "{e}");
        assert_eq!(
            json_size(&json!({"a": [1, "b"]})),
            r#"{"a":[1,"b"]}"#.len() as u64
        );
    }
}
