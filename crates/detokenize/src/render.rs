//! Evaluating expressions against fetched token values and splicing results into text.

use std::collections::HashMap;

use serde_json::Value;
use tessera_domain::TokenId;

use crate::{
    error::DetokenizeError,
    expression::{scan, Binding, Expression},
    filter::text_of,
};

/// A fetched token: its data, and the whole token object for `token:` expressions.
#[derive(Debug, Clone)]
pub struct ResolvedToken {
    /// The token's data.
    pub data: Value,
    /// `{id, tenant_id, type, data, metadata, containers, created_at, …}`.
    pub token: Value,
}

/// Fetched tokens by id.
pub type Values = HashMap<TokenId, ResolvedToken>;

/// The value of one expression.
pub(crate) fn evaluate(expr: &Expression, values: &Values) -> Result<Value, DetokenizeError> {
    let token = values
        .get(&expr.token_id)
        .ok_or_else(|| DetokenizeError::UnknownToken(expr.token_id.to_string()))?;
    let mut value = match expr.binding {
        Binding::Data => token.data.clone(),
        Binding::Token => token.token.clone(),
    };
    let id = expr.token_id.to_string();
    for filter in &expr.filters {
        value = filter.apply(value, &id)?;
    }
    Ok(value)
}

/// `text` with every expression replaced by its value as text (strings raw, anything else as
/// compact JSON). Substituted text is never scanned again, so a value holding `{{…}}` arrives
/// literally.
pub(crate) fn splice(
    text: &str,
    exprs: &[Expression],
    values: &Values,
) -> Result<String, DetokenizeError> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for expr in exprs {
        out.push_str(&text[at..expr.start]);
        out.push_str(&text_of(&evaluate(expr, values)?));
        at = expr.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Detokenizes one header value; refuses a result holding CR, LF or NUL (header injection).
pub fn render_header(name: &str, value: &str, values: &Values) -> Result<String, DetokenizeError> {
    let exprs = scan(value, &format!("header {name}"))?;
    if exprs.is_empty() {
        return Ok(value.to_string());
    }
    let out = splice(value, &exprs, values)?;
    if out.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(DetokenizeError::HeaderInjection(name.to_string()));
    }
    Ok(out)
}
