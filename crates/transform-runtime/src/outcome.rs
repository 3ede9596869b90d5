//! Reading what a transform's promise resolved with into an [`Outcome`]: the returned
//! `{ body, headers }` is read by the host from the engine's values, and the body encoded once
//! (a string as it is; an object as a form for a form message, else as JSON — see `json.rs`).

use std::time::Instant;

use rquickjs::{Array, Ctx, Function, Object, Type, Value};

use crate::{
    json::{Encoder, LazyView, Protos, Stop},
    message::{Outcome, TransformError},
};

/// Why an outcome could not be read.
pub(crate) enum Failed {
    /// The transform failed: its message, and whether the runtime must be discarded (a thrown
    /// `null`, which may be the engine out of memory).
    Threw { message: String, discard: bool },
    /// The engine threw while the host read the result (a getter): the exception is pending.
    Exception,
    /// A limit was hit while encoding.
    Limit(TransformError),
}

impl From<rquickjs::Error> for Failed {
    fn from(_: rquickjs::Error) -> Self {
        Failed::Exception
    }
}

fn threw(message: &str) -> Failed {
    Failed::Threw {
        message: message.to_string(),
        discard: false,
    }
}

/// The prelude's helpers a reader uses, restored in the invocation's context.
pub(crate) struct Helpers<'js> {
    pub(crate) encode_form: Function<'js>,
    pub(crate) stringify: Function<'js>,
    pub(crate) text: Function<'js>,
    pub(crate) protos: Protos<'js>,
    /// The JSON body given member by member, if it was.
    pub(crate) lazy: Option<LazyView<'js>>,
}

/// What the invocation needs to know to encode a returned body.
pub(crate) struct Encoding<'a> {
    /// The content type of the message when the transform returns no headers.
    pub(crate) content_type: Option<&'a str>,
    /// Bound on the encoded body.
    pub(crate) limit: usize,
    pub(crate) deadline: Instant,
}

/// What the prelude's `classify` made of a thrown value: an error class, a custom response,
/// or a failure.
pub(crate) fn thrown(result: &Object<'_>) -> Result<Outcome, Failed> {
    let kind: String = result.get("kind")?;
    match kind.as_str() {
        "http" => Ok(Outcome::Http {
            status: result.get("status")?,
            name: result.get("name")?,
            message: result.get("message")?,
        }),
        "custom" => {
            let status: f64 = result.get::<_, Option<f64>>("status")?.unwrap_or(f64::NAN);
            let status =
                if status.is_finite() && status.fract() == 0.0 && (0.0..=1e6).contains(&status) {
                    status as u32
                } else {
                    0
                };
            Ok(Outcome::Custom {
                status,
                headers: pairs(result.get("headers")?)?,
                body: result.get("body")?,
            })
        }
        _ => Err(Failed::Threw {
            message: result.get("message")?,
            discard: result.get::<_, Option<bool>>("discard")?.unwrap_or(false),
        }),
    }
}

/// What the handler returned (or its promise resolved with): nothing, or `{ body, headers }`.
pub(crate) fn returned<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    helpers: &Helpers<'js>,
    encoding: &Encoding<'_>,
) -> Result<Outcome, Failed> {
    if value.is_undefined() || value.is_null() {
        return Ok(Outcome::Ok {
            body: None,
            headers: None,
        });
    }
    match value.as_object() {
        Some(out) if !value.is_function() => returned_object(ctx, out, helpers, encoding),
        _ => Err(threw(
            "TypeError: the transform must return an object { body, headers }",
        )),
    }
}

/// The returned `{ body, headers }`.
fn returned_object<'js>(
    ctx: &Ctx<'js>,
    out: &Object<'js>,
    helpers: &Helpers<'js>,
    encoding: &Encoding<'_>,
) -> Result<Outcome, Failed> {
    let headers = headers(&out.get::<_, Value>("headers")?, &helpers.text)?;
    let body: Value = out.get("body")?;
    let body = match body.type_of() {
        Type::Undefined => None,
        Type::String => Some(
            body.as_string()
                .and_then(|s| s.to_string().ok())
                .ok_or_else(|| {
                    threw("the returned body is not valid Unicode (a lone surrogate)")
                })?,
        ),
        _ => {
            let content_type = match &headers {
                Some(pairs) => pairs
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.as_str()),
                None => encoding.content_type,
            };
            if is_form(content_type) && body.is_object() && !body.is_function() {
                Some(helpers.encode_form.call::<_, String>((body,))?)
            } else {
                json(ctx, &body, helpers, encoding)?
            }
        }
    };
    Ok(Outcome::Ok { body, headers })
}

/// `JSON.stringify(body)`: `None` for what it skips (a function, a symbol).
fn json<'js>(
    _ctx: &Ctx<'js>,
    body: &Value<'js>,
    helpers: &Helpers<'js>,
    encoding: &Encoding<'_>,
) -> Result<Option<String>, Failed> {
    match Encoder::encode(
        &helpers.protos,
        helpers.lazy.as_ref(),
        body,
        encoding.limit,
        encoding.deadline,
    ) {
        Ok(encoded) => Ok(encoded),
        Err(Stop::Thrown) => Err(Failed::Exception),
        Err(Stop::TooLarge) => Err(Failed::Limit(TransformError::OutOfMemory)),
        Err(Stop::Deadline) => Err(Failed::Limit(TransformError::TimedOut)),
        Err(Stop::Unsupported) => {
            let encoded: Value = helpers.stringify.call((body.clone(),))?;
            if let Some(failure) = encoded.as_object() {
                return Err(Failed::Threw {
                    message: failure.get("message")?,
                    discard: failure.get::<_, Option<bool>>("discard")?.unwrap_or(false),
                });
            }
            Ok(encoded.as_string().and_then(|s| s.to_string().ok()))
        }
    }
}

/// Whether a content type is `application/x-www-form-urlencoded`.
fn is_form(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|essence| {
            essence
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// Returned `headers`: an object of names to values (strings, or anything else as its JSON
/// text; arrays repeat the header; `null` and `undefined` leave it out).
fn headers<'js>(
    value: &Value<'js>,
    text: &Function<'js>,
) -> Result<Option<Vec<(String, String)>>, Failed> {
    if value.is_undefined() {
        return Ok(None);
    }
    let object = match value.as_object() {
        Some(o) if !value.is_array() && !value.is_function() => o,
        _ => return Err(threw("TypeError: `headers` must be an object")),
    };
    let as_text = |v: &Value<'js>| -> Result<String, Failed> {
        match v.as_string() {
            Some(s) => s
                .to_string()
                .map_err(|_| threw("a returned header is not valid Unicode (a lone surrogate)")),
            None => Ok(text.call::<_, String>((v.clone(),))?),
        }
    };
    let mut out = Vec::new();
    for entry in object.props::<String, Value>() {
        let (name, v) = entry?;
        if v.is_null() || v.is_undefined() {
            continue;
        }
        match v.as_array() {
            Some(items) => {
                for item in items.iter::<Value>() {
                    out.push((name.clone(), as_text(&item?)?));
                }
            }
            None => out.push((name, as_text(&v)?)),
        }
    }
    Ok(Some(out))
}

/// `(name, value)` pairs from the prelude's array of pairs.
fn pairs(value: Option<Array<'_>>) -> rquickjs::Result<Option<Vec<(String, String)>>> {
    value
        .map(|list| {
            list.iter::<Array>()
                .map(|pair| {
                    let pair = pair?;
                    Ok((pair.get(0)?, pair.get(1)?))
                })
                .collect()
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_content_types() {
        assert!(is_form(Some("application/x-www-form-urlencoded")));
        assert!(is_form(Some(
            "Application/X-WWW-Form-Urlencoded; charset=utf-8"
        )));
        assert!(!is_form(Some("application/json")));
        assert!(!is_form(None));
    }
}
