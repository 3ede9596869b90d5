//! What both transform stages share (docs/api.md, "Transforms"): running a proxy's code in the engine with
//! its configuration and `req.svc` (see [`crate::svc`]), building `req.args` from a message,
//! and turning what the transform returned (or threw) into the next step or an answer. A
//! transform that runs past its time limit puts its proxy in quarantine.
//!
//! The body crosses into the engine once, as text (a JSON body is parsed by the engine, a form
//! body goes as its decoded pairs) and comes back once, already encoded by the engine: there is
//! no JSON tree on this side.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tessera_detokenize::BodyKind;
use tessera_domain::{
    audit::{Actor, AuditAction},
    binding::Target,
    proxy::Proxy,
    Vault,
};
use tessera_transform_runtime::{
    Args, Body, HostOp, Input, Outcome, TransformEngine, TransformError,
};

use crate::{
    audit::SvcAudit,
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    handoff::Halt,
    headers,
    shared::Shared,
    svc::{BoundReads, Stage, SvcHost},
};

/// What a transform that read a destination-bound token is answered with instead of its own
/// error, custom response or (response transform) result.
const WITHHELD: &str = "its answer was withheld: it read a destination-bound token, whose value may go only to the destinations the token is bound to";

/// Runs `code`, the `stage` transform of `proxy`, on `args`; `req.svc` acts as the proxy's
/// application when it has one, and its calls are recorded under it. A transform that read a
/// destination-bound token gets no answer of its own to the caller (see [`withhold`]). A
/// timeout puts the proxy in quarantine.
pub(crate) async fn run_transform(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
    (proxy, stage): (&Proxy, Stage),
    code: &str,
    args: Args,
) -> Result<Outcome, TransformError> {
    let Some(engine) = &gw.transforms else {
        return Err(TransformError::Engine(
            "this gateway runs without a transform engine".into(),
        ));
    };
    let svc_audit = match (gw.vault.audit().is_on(), proxy.application_id) {
        (true, Some(app)) => Some(SvcAudit::new(
            proxy.tenant_id,
            Actor::Application(app),
            proxy.id,
            ctx.request_id,
        )),
        _ => None,
    };
    let bound = BoundReads::default();
    let svc = Svc {
        stage,
        bound: &bound,
        audit: svc_audit.as_ref(),
    };
    let outcome = run(engine, &gw.vault, proxy, code, args, svc).await;
    let outcome = withhold(stage, outcome, &bound, svc_audit.as_ref());
    if let Some(svc_audit) = svc_audit {
        ctx.audit.events.extend(svc_audit.into_events());
    }
    if outcome == Err(TransformError::TimedOut) {
        let backoff = gw.quarantine.timed_out(proxy.id);
        tracing::warn!(proxy = %proxy.id, tenant = %proxy.tenant_id, backoff_s = backoff.as_secs(), "transform timed out: proxy quarantined");
    }
    outcome
}

/// What a transform may still answer once it read a destination-bound token (its taint is
/// marked): a request transform's result, which goes to the destination the binding allowed,
/// and the limits' own failures. Its errors, custom responses and a response transform's
/// result would reach the caller: they become one generic failure, recorded as a refusal.
fn withhold(
    stage: Stage,
    outcome: Result<Outcome, TransformError>,
    bound: &BoundReads,
    audit: Option<&SvcAudit>,
) -> Result<Outcome, TransformError> {
    if !bound.taint().is_marked() {
        return outcome;
    }
    let keep = match &outcome {
        // Headers the gateway would refuse would be named in the error: checked here.
        Ok(Outcome::Ok { headers, .. }) => {
            stage == Stage::Request && replace_headers(headers.clone(), HeaderMap::new()).is_ok()
        }
        Ok(Outcome::Http { .. } | Outcome::Custom { .. }) | Err(TransformError::Crashed(_)) => {
            false
        }
        Err(
            TransformError::TimedOut
            | TransformError::OutOfMemory
            | TransformError::Engine(_)
            | TransformError::Busy,
        ) => true,
    };
    if keep {
        return outcome;
    }
    if let Some(audit) = audit {
        audit.refused(
            AuditAction::TokenReadByTransform,
            bound.ids(),
            403,
            WITHHELD,
        );
    }
    Err(TransformError::Crashed(WITHHELD.into()))
}

/// `req.args.body`: a JSON body as its text (the engine parses it), a form body as its decoded
/// pairs, anything else as text.
pub(crate) fn args_body(headers: &HeaderMap, body: &[u8]) -> Body {
    let kind = BodyKind::from_content_type(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let text = || String::from_utf8_lossy(body).into_owned();
    match kind {
        BodyKind::Json => Body::Json(text()),
        BodyKind::Form => Body::Form(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ),
        _ => Body::Text(text()),
    }
}

/// Headers as `(lowercased name, value)`, repeated headers joined with `, `.
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .keys()
        .map(|name| {
            let mut values = headers
                .get_all(name)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()));
            let mut joined = values.next().map(|v| v.into_owned()).unwrap_or_default();
            for v in values {
                joined.push_str(", ");
                joined.push_str(&v);
            }
            (name.as_str().to_string(), joined)
        })
        .collect()
}

/// Why headers a transform returned cannot be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    /// Not a valid header name.
    #[error("invalid header name `{0}`")]
    Name(String),
    /// Not a valid value for the named header.
    #[error("invalid value for header `{0}`")]
    Value(String),
}

/// Returned `headers` replace the header set; absent → unchanged.
pub(crate) fn replace_headers(
    returned: Option<Vec<(String, String)>>,
    current: HeaderMap,
) -> Result<HeaderMap, HeaderError> {
    let Some(returned) = returned else {
        return Ok(current);
    };
    let mut out = HeaderMap::with_capacity(returned.len());
    for (name, value) in returned {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HeaderError::Name(name))?;
        let value =
            HeaderValue::from_str(&value).map_err(|_| HeaderError::Value(name.to_string()))?;
        out.append(name, value);
    }
    Ok(out)
}

/// A transform failure (500 `proxy_error`).
pub(crate) fn failed(detail: String) -> GatewayError {
    GatewayError::new(ErrorKind::TransformFailed, detail)
}

/// What a transform returned: `(body, headers)`, each absent when not returned.
pub(crate) type Returned = (Option<String>, Option<Vec<(String, String)>>);

/// The answer for an outcome that ends the invocation (an error class, a custom response, a
/// crash); `Ok` carries the returned body and headers on.
pub(crate) fn settle(outcome: Result<Outcome, TransformError>) -> Result<Returned, Halt> {
    match outcome {
        Ok(Outcome::Ok { body, headers }) => Ok((body, headers)),
        Ok(Outcome::Http {
            status,
            name,
            message,
        }) => Err(
            GatewayError::new(ErrorKind::TransformRefused(status), message.clone())
                .with_class(name, message)
                .into(),
        ),
        Ok(Outcome::Custom {
            status,
            headers,
            body,
        }) => {
            // 1xx answers carry no body and would break the framing of whatever sits in front
            // Only final statuses a response may have.
            let Some(status) = u16::try_from(status)
                .ok()
                .and_then(|s| StatusCode::from_u16(s).ok())
                .filter(|s| (200..=599).contains(&s.as_u16()))
            else {
                return Err(failed(
                    "transform failed: CustomHttpResponseError needs a status from 200 to 599"
                        .into(),
                )
                .into());
            };
            let mut headers = replace_headers(headers, HeaderMap::new())
                .map_err(|e| failed(format!("transform failed: {e}")))?;
            headers::strip_response(&mut headers);
            let mut res =
                Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
            *res.status_mut() = status;
            *res.headers_mut() = headers;
            if !res.headers().contains_key(header::CONTENT_TYPE) {
                res.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
            }
            Err(Halt::Answer(Box::new(res)))
        }
        Err(e @ (TransformError::TimedOut | TransformError::OutOfMemory)) => {
            Err(failed(e.to_string()).into())
        }
        Err(TransformError::Crashed(message)) => {
            Err(failed(format!("transform failed: {message}")).into())
        }
        // Waiting for a sandbox slot ran out: the transform never started (503, retry soon).
        Err(TransformError::Busy) => Err(GatewayError::new(
            ErrorKind::TransformBusy,
            "no transform sandbox was free in time; retry later",
        )
        .with_retry_after(1)
        .into()),
        Err(TransformError::Engine(message)) => Err(GatewayError::new(
            ErrorKind::TransformFailed,
            "transform failed: the transform engine failed while running it",
        )
        .with_source(message)
        .into()),
    }
}

/// What `req.svc` needs of one invocation besides the vault and the proxy.
#[derive(Clone, Copy)]
struct Svc<'a> {
    stage: Stage,
    bound: &'a BoundReads,
    audit: Option<&'a SvcAudit>,
}

/// Runs `code` on `args` with the proxy's configuration; `req.svc` acts as the proxy's
/// application when it has one.
async fn run(
    engine: &TransformEngine,
    vault: &Vault,
    proxy: &Proxy,
    code: &str,
    args: Args,
    svc: Svc<'_>,
) -> Result<Outcome, TransformError> {
    let program = engine
        .compile(code)
        .map_err(|e| TransformError::Crashed(format!("does not compile: {e}")))?;
    let configuration = proxy
        .configuration
        .as_ref()
        .map(|c| {
            c.expose()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let input = Input {
        args,
        configuration,
    };
    let (tenant, proxy_id) = (proxy.tenant_id.to_string(), proxy.id.to_string());
    let principal = match proxy.application_id {
        Some(app) => Some(
            vault
                .application_principal(proxy.tenant_id, app)
                .await
                .map_err(|e| {
                    TransformError::Crashed(format!(
                        "the proxy's application is unavailable: {}",
                        e.public_message()
                    ))
                })?,
        ),
        None => None,
    };
    let target = proxy
        .parsed_destination
        .as_ref()
        .and_then(|url| Target::of(url, false));
    let target = target.as_ref();
    let Svc {
        stage,
        bound,
        audit,
    } = svc;
    let host = principal.as_ref().map(|principal| {
        let svc = SvcHost {
            vault,
            principal,
            target,
            stage,
            bound,
            audit,
        };
        move |op: HostOp, payload: Value| svc.call(op, payload)
    });
    engine
        .run_with_taint(
            program,
            &proxy_id,
            (&tenant, &proxy_id),
            input,
            host,
            bound.taint(),
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once a destination-bound token was handed out, only a request transform's result and
    /// the limits' failures stand; anything the transform would tell the caller is withheld.
    #[test]
    fn a_tainted_transform_answers_nothing_of_its_own() {
        let ok = |headers: Option<Vec<(String, String)>>| {
            Ok(Outcome::Ok {
                body: Some("v".into()),
                headers,
            })
        };
        let withheld = Err(TransformError::Crashed(WITHHELD.into()));
        let clean = BoundReads::default();
        assert_eq!(withhold(Stage::Response, ok(None), &clean, None), ok(None));
        let tainted = BoundReads::default();
        tainted.taint().mark();
        assert_eq!(withhold(Stage::Request, ok(None), &tainted, None), ok(None));
        assert_eq!(
            withhold(Stage::Response, ok(None), &tainted, None),
            withheld
        );
        let bad_header = Some(vec![("x v".to_string(), "1".to_string())]);
        assert_eq!(
            withhold(Stage::Request, ok(bad_header), &tainted, None),
            withheld
        );
        for own in [
            Ok(Outcome::Http {
                status: 400,
                name: "BadRequestError".into(),
                message: "v".into(),
            }),
            Ok(Outcome::Custom {
                status: 200,
                headers: None,
                body: "v".into(),
            }),
            Err(TransformError::Crashed("v".into())),
        ] {
            assert_eq!(withhold(Stage::Request, own, &tainted, None), withheld);
        }
        assert_eq!(
            withhold(
                Stage::Request,
                Err(TransformError::TimedOut),
                &tainted,
                None
            ),
            Err(TransformError::TimedOut)
        );
    }

    #[test]
    fn bodies_go_to_the_engine_by_content_type() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert_eq!(
            args_body(&h, b"a=1&b=x%20y&a=2"),
            Body::Form(vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("a".into(), "2".into())
            ])
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/vnd.api+json; charset=utf-8"),
        );
        assert_eq!(args_body(&h, b"{\"n\":1}"), Body::Json("{\"n\":1}".into()));
        assert_eq!(
            args_body(&HeaderMap::new(), b"plain"),
            Body::Text("plain".into())
        );
    }

    #[test]
    fn repeated_headers_are_joined() {
        let mut h = HeaderMap::new();
        h.append("x-a", HeaderValue::from_static("1"));
        h.append("x-a", HeaderValue::from_static("2"));
        h.append("x-b", HeaderValue::from_static("3"));
        assert_eq!(
            header_pairs(&h),
            vec![("x-a".into(), "1, 2".into()), ("x-b".into(), "3".into())]
        );
    }

    #[test]
    fn returned_headers_replace_the_set() {
        let mut current = HeaderMap::new();
        current.insert("x-old", HeaderValue::from_static("1"));
        let pairs = |list: &[(&str, &str)]| {
            Some(
                list.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let out = replace_headers(
            pairs(&[("x-new", "a"), ("x-many", "1"), ("x-many", "2")]),
            current.clone(),
        )
        .expect("valid");
        assert!(out.get("x-old").is_none());
        assert_eq!(out.get_all("x-many").iter().count(), 2);
        assert!(replace_headers(pairs(&[("bad name", "x")]), current.clone()).is_err());
        assert!(replace_headers(pairs(&[("x", "a\nb")]), current.clone()).is_err());
        assert_eq!(
            replace_headers(None, current.clone()).expect("kept").len(),
            1
        );
    }
}
