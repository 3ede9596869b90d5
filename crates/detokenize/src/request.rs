//! A whole request prepared once: the content type classified, the body parsed by it, and the
//! header values scanned, so that the caller fetches exactly the tokens listed and renders.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use tessera_domain::{
    token::TokenView, vault::TokenSize, Permission, Principal, Secret, Token, TokenId,
};

use crate::{
    body::{BodyKind, Template},
    error::DetokenizeError,
    expression::{scan, Binding, Expression},
    render::{header_safe, splice, Context, ResolvedToken, SourceSize, Values},
};

/// One header value that holds expressions.
#[derive(Debug, Clone)]
struct HeaderTemplate {
    /// Its position among the headers given to [`RequestTemplate::prepare`].
    index: usize,
    text: String,
    exprs: Vec<Expression>,
}

/// A request's body and header values, parsed once, with the token ids they reference.
/// `Debug` shows the body's kind, how many header values hold expressions, and the ids: never
/// the raw body or header text.
#[derive(Clone)]
pub struct RequestTemplate {
    body: Template,
    headers: Vec<HeaderTemplate>,
    ids: BTreeSet<TokenId>,
}

impl std::fmt::Debug for RequestTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestTemplate")
            .field("body", &self.body)
            .field("headers", &self.headers.len())
            .field("ids", &self.ids)
            .finish()
    }
}

/// What rendering produced: the new body (`None`: the original bytes stand) and the new header
/// values by their position among the headers given to [`RequestTemplate::prepare`]. It holds
/// token plaintext: `Debug` shows sizes only.
pub struct Rendered {
    /// The rendered body, when it changed.
    pub body: Option<Vec<u8>>,
    /// `(position, value)` of each header value that held expressions. Every value is a valid
    /// header value (visible ASCII and spaces): token text is percent-encoded where needed.
    pub headers: Vec<(usize, String)>,
}

impl std::fmt::Debug for Rendered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendered")
            .field("body_bytes", &self.body.as_ref().map(Vec::len))
            .field("headers", &self.headers.len())
            .finish()
    }
}

impl RequestTemplate {
    /// Classifies `content_type` once, parses `body` by it and scans the header values
    /// (`(name, value)` in the order the caller will render them back). Syntax errors surface
    /// here, before any token is fetched. Header values that are not UTF-8 are left alone.
    pub fn prepare<'a>(
        content_type: Option<&str>,
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        body: &[u8],
    ) -> Result<Self, DetokenizeError> {
        let body = Template::prepare(BodyKind::from_content_type(content_type), body)?;
        let mut ids = body.token_ids().clone();
        let mut templates = Vec::new();
        for (index, (name, value)) in headers.into_iter().enumerate() {
            let Some(text) = std::str::from_utf8(value).ok().filter(|t| t.contains("{{")) else {
                continue;
            };
            let exprs = scan(text, &format!("header {name}"))?;
            if exprs.is_empty() {
                continue;
            }
            ids.extend(exprs.iter().map(|e| e.token_id.clone()));
            templates.push(HeaderTemplate {
                index,
                text: text.to_string(),
                exprs,
            });
        }
        Ok(Self {
            body,
            headers: templates,
            ids,
        })
    }

    /// The distinct token ids referenced anywhere in the request.
    pub fn token_ids(&self) -> &BTreeSet<TokenId> {
        &self.ids
    }

    /// Where the body holds `{{` that was not looked at as an expression, if it does.
    pub fn unscanned(&self) -> Option<crate::body::Unscanned> {
        self.body.unscanned()
    }

    /// True when the request references no token.
    pub fn is_untouched(&self) -> bool {
        self.ids.is_empty()
    }

    /// True when a `token:` expression names `id`, so its whole token object is needed.
    pub fn needs_object(&self, id: &TokenId) -> bool {
        self.body.object_ids().any(|o| o == id)
            || self
                .headers
                .iter()
                .flat_map(|h| &h.exprs)
                .any(|e| e.binding == Binding::Token && e.token_id == *id)
    }

    /// Refuses more than `max_tokens` distinct tokens.
    pub fn check_token_count(&self, max_tokens: usize) -> Result<(), DetokenizeError> {
        if self.ids.len() > max_tokens {
            return Err(DetokenizeError::TooManyTokens {
                found: self.ids.len(),
                max: max_tokens,
            });
        }
        Ok(())
    }

    /// Refuses a request whose rendering could exceed `max` bytes (body and header values
    /// together), from the body's length, the shape of its expressions and the sizes
    /// `size_of` gives. Meant to run before any token is decrypted: the answer depends on the
    /// request and on token sizes (rounded, see [`SourceSize`]), never on token content, and
    /// nothing is allocated past `max` afterwards.
    pub fn check_bound(
        &self,
        body_len: usize,
        size_of: impl Fn(&TokenId) -> SourceSize,
        max: u64,
    ) -> Result<(), DetokenizeError> {
        let headers = self.headers.iter().fold(0u64, |n, h| {
            h.exprs
                .iter()
                .fold(n.saturating_add(h.text.len() as u64), |n, e| {
                    n.saturating_add(e.bound(size_of(&e.token_id), Context::Header))
                })
        });
        let bound = self.body.bound(body_len, &size_of).saturating_add(headers);
        if bound > max {
            return Err(DetokenizeError::TooLarge { bound, max });
        }
        Ok(())
    }

    /// Checks, before any token is decrypted, what the stored rows allow: every token this
    /// template names is among `found` (the rows fetched, with their stored sizes; the first
    /// one missing is [`DetokenizeError::UnknownToken`]), and the rendering cannot exceed `max`
    /// bytes ([`RequestTemplate::check_bound`] over the rounded sizes).
    pub fn check_found(
        &self,
        body_len: usize,
        found: impl IntoIterator<Item = (TokenId, TokenSize)>,
        max: u64,
    ) -> Result<(), DetokenizeError> {
        let sizes: HashMap<TokenId, SourceSize> = found
            .into_iter()
            .map(|(id, s)| (id, SourceSize::rounded(s.data, s.object)))
            .collect();
        if let Some(missing) = self.token_ids().iter().find(|id| !sizes.contains_key(id)) {
            return Err(DetokenizeError::UnknownToken(missing.to_string()));
        }
        self.check_bound(
            body_len,
            |id| sizes.get(id).copied().unwrap_or(SourceSize::rounded(0, 0)),
            max,
        )
    }

    /// The values to render with, from the decrypted `tokens`: each one's data, and its whole
    /// object only for the tokens a `token:` expression names.
    pub fn values(&self, tokens: Vec<Token>) -> Values {
        tokens
            .into_iter()
            .map(|t| {
                let object = self
                    .needs_object(&t.id)
                    .then(|| TokenView::used(t.clone()).to_json());
                let resolved = ResolvedToken {
                    data: t.data,
                    object,
                };
                (t.id, resolved)
            })
            .collect()
    }

    /// As [`RequestTemplate::values`], each token as `viewer` may read it (`POST
    /// /detokenize`): its data as the caller's transform on its container shows it (the
    /// plaintext, its mask, or `null`), and its object as a read answers it.
    pub fn values_for(&self, tokens: Vec<Token>, viewer: &Principal) -> Values {
        tokens
            .into_iter()
            .map(|t| {
                let id = t.id.clone();
                let object = TokenView::read(t, viewer, Permission::TokenRead).to_json();
                let data = object.expose().get("data").cloned().unwrap_or(Value::Null);
                let resolved = ResolvedToken {
                    data: Secret::new(data),
                    object: self.needs_object(&id).then_some(object),
                };
                (id, resolved)
            })
            .collect()
    }

    /// Renders the body and the header values with `values`. Only a token missing from
    /// `values` fails.
    pub fn render(&self, values: &Values) -> Result<Rendered, DetokenizeError> {
        let body = self.body.render(values)?;
        let headers = self
            .headers
            .iter()
            .map(|h| Ok((h.index, splice(&h.text, &h.exprs, values, header_safe)?)))
            .collect::<Result<_, DetokenizeError>>()?;
        Ok(Rendered { body, headers })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::render::ResolvedToken;

    const A: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";

    fn id() -> TokenId {
        A.parse().expect("id")
    }

    #[test]
    fn debug_shows_neither_body_nor_header_text() {
        let body = format!(r#"{{"card":"{{{{{A}}}}}","password":"hunter2"}}"#);
        let t = RequestTemplate::prepare(
            Some("application/json"),
            [(
                "authorization",
                format!("Bearer sk_live_x {{{{{A}}}}}").as_bytes(),
            )],
            body.as_bytes(),
        )
        .expect("prepare");
        let printed = format!("{t:?}");
        assert!(
            !printed.contains("hunter2") && !printed.contains("sk_live"),
            "{printed}"
        );
        assert!(printed.contains("json") && printed.contains(A), "{printed}");
    }

    fn values(data: Value) -> Values {
        Values::from_iter([(
            id(),
            ResolvedToken {
                data: data.clone().into(),
                object: Some(json!({"id": A, "data": data}).into()),
            },
        )])
    }

    #[test]
    fn body_and_headers_are_prepared_once_and_rendered_by_position() {
        let body = format!(r#"{{"n": "{{{{{A}}}}}"}}"#);
        let bearer = format!("Bearer {{{{{A} | last4}}}}");
        let headers = [
            ("x-plain", b"1".as_slice()),
            ("authorization", bearer.as_bytes()),
        ];
        let t = RequestTemplate::prepare(Some("application/json"), headers, body.as_bytes())
            .expect("prepare");
        assert_eq!(t.token_ids().len(), 1);
        assert!(!t.needs_object(&id()));
        let out = t
            .render(&values(json!("4242424242424242")))
            .expect("render");
        assert_eq!(out.headers, vec![(1, "Bearer 4242".to_string())]);
        let sent: Value = serde_json::from_slice(&out.body.expect("body")).expect("json");
        assert_eq!(sent, json!({"n": "4242424242424242"}));
    }

    /// Pinned rule: a token's value never makes a header fail; what is not visible ASCII is
    /// percent-encoded.
    #[test]
    fn header_values_encode_what_cannot_appear_in_a_header() {
        let value = format!("{{{{{A}}}}}");
        let t = RequestTemplate::prepare(None, [("x-v", value.as_bytes())], b"").expect("prepare");
        let out = t
            .render(&values(json!("é\r\nInjected: yes")))
            .expect("render");
        assert_eq!(out.headers[0].1, "%C3%A9%0D%0AInjected: yes");
    }

    #[test]
    fn the_bound_depends_on_sizes_and_shape_not_content() {
        let body = format!(r#"["{{{{{A}}}}}", "x{{{{{A}}}}}"]"#);
        let t = RequestTemplate::prepare(Some("application/json"), [], body.as_bytes())
            .expect("prepare");
        let small = |_: &TokenId| SourceSize::rounded(10, 100);
        // 1 KiB as a value, 2 KiB as escaped text, plus the body.
        assert!(t
            .check_bound(body.len(), small, 3 * 1024 + body.len() as u64)
            .is_ok());
        assert!(matches!(
            t.check_bound(body.len(), small, 3 * 1024),
            Err(DetokenizeError::TooLarge { .. })
        ));
        let repeated = format!(r#"["{{{{{A} | json: '$[*,*][*,*]'}}}}"]"#);
        let t = RequestTemplate::prepare(Some("application/json"), [], repeated.as_bytes())
            .expect("prepare");
        // Four duplicated selections of a 1 KiB source, as an array: above 8 KiB.
        assert!(
            t.check_bound(repeated.len(), small, 8 * 1024).is_err(),
            "duplicating selectors count"
        );
        assert!(t.check_bound(repeated.len(), small, 9 * 1024).is_ok());
    }

    #[test]
    fn token_objects_are_needed_only_for_token_bindings() {
        let body = format!(r#"{{"t": "{{{{ token: {A} | json: '$.id' }}}}"}}"#);
        let t = RequestTemplate::prepare(Some("application/json"), [], body.as_bytes())
            .expect("prepare");
        assert!(t.needs_object(&id()));
        assert!(t.check_token_count(1).is_ok() && t.check_token_count(0).is_err());
    }
}
