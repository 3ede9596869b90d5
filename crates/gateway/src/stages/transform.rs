//! `transform_request` and `transform_response` (SUPPLEMENT §7): building `req.args`,
//! answering `req.svc` calls as the proxy's application, and applying what the transform
//! returns (or threw). The destination's non-2xx answers are relayed untouched.
//!
//! The body crosses into the engine once, as text (a JSON body is parsed by the engine, a form
//! body goes as its decoded pairs) and comes back once, already encoded by the engine: there is
//! no JSON tree on this side.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tessera_detokenize::BodyKind;
use tessera_domain::{
    audit::{Actor, AuditAction},
    binding::Target,
    proxy::Proxy,
    token::TokenView,
    NewToken, Principal, TokenId, Vault, VaultError,
};
use tessera_service::{mount::ResponseBody, problem::class_status};
use tessera_transform_runtime::{
    Args, Body, HostError, HostOp, Input, Outcome, TransformEngine, TransformError,
};

use super::{respond::relay, Halt, Outgoing};
use crate::{
    audit::SvcAudit,
    context::RequestContext,
    destination,
    error::{ErrorKind, GatewayError},
    headers, Gateway,
};

/// Largest destination body a response transform may be given.
const MAX_TRANSFORMED_RESPONSE: usize = 10 * 1024 * 1024;

impl Gateway {
    /// Refuses proxies in quarantine (a transform of theirs recently timed out): 503 with
    /// `Retry-After`.
    pub(crate) fn not_quarantined(&self, proxy: &Proxy) -> Result<(), GatewayError> {
        match self.quarantine.remaining(proxy.id) {
            None => Ok(()),
            Some(seconds) => Err(GatewayError::new(
                ErrorKind::Quarantined,
                "this proxy's transform recently exceeded its time limit; retry later",
            )
            .with_retry_after(seconds)),
        }
    }

    pub(crate) async fn transform_request(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
        outgoing: Outgoing,
    ) -> Result<Outgoing, Halt> {
        let Some(code) = &proxy.request_transform else {
            return Ok(outgoing);
        };
        let query = ctx
            .parts
            .uri
            .query()
            .map(destination::strip_proxy_key)
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        let args = Args {
            body: args_body(&outgoing.headers, &outgoing.body),
            headers: header_pairs(&outgoing.headers),
            method: Some(ctx.parts.method.as_str().to_string()),
            path: Some(ctx.suffix().to_string()),
            query: Some(query),
            status: None,
        };
        let outcome = self.run_transform(ctx, proxy, code.expose(), args).await;
        let (new_body, new_headers) = settle(outcome)?;
        let mut headers = replace_headers(new_headers, outgoing.headers)
            .map_err(|e| failed(format!("transform failed: {e}")))?;
        let body = new_body.map_or(outgoing.body, Bytes::from);
        headers::strip_request(&mut headers);
        Ok(Outgoing { headers, body })
    }

    pub(crate) async fn transform_response(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
        answer: Response<Incoming>,
    ) -> Result<Response<ResponseBody>, Halt> {
        let code = match &proxy.response_transform {
            Some(code) if answer.status().is_success() => code,
            _ => return Ok(relay(answer, ctx.request_id)),
        };
        let (parts, body) = answer.into_parts();
        let body = Limited::new(body, MAX_TRANSFORMED_RESPONSE)
            .collect()
            .await
            .map_err(|e| {
                GatewayError::new(
                    ErrorKind::Unreachable,
                    "the destination's response could not be read for the response transform",
                )
                .with_source(e)
            })?
            .to_bytes();
        let args = Args {
            body: args_body(&parts.headers, &body),
            headers: header_pairs(&parts.headers),
            method: None,
            path: None,
            query: None,
            status: Some(parts.status.as_u16()),
        };
        let outcome = self.run_transform(ctx, proxy, code.expose(), args).await;
        let (new_body, new_headers) = settle(outcome)?;
        let mut headers = replace_headers(new_headers, parts.headers)
            .map_err(|e| failed(format!("transform failed: {e}")))?;
        let body = new_body.map_or(body, Bytes::from);
        headers::strip_response(&mut headers);
        super::respond::mark_proxied(&mut headers, parts.status, ctx.request_id);
        let mut out = Response::new(Full::new(body).map_err(|e| match e {}).boxed());
        *out.status_mut() = parts.status;
        *out.headers_mut() = headers;
        Ok(out)
    }

    /// Runs `code` on `args`; `req.svc` acts as the proxy's application when it has one. A
    /// timeout puts the proxy in quarantine.
    async fn run_transform(
        &self,
        ctx: &mut RequestContext<'_>,
        proxy: &Proxy,
        code: &str,
        args: Args,
    ) -> Result<Outcome, TransformError> {
        let Some(engine) = &self.transforms else {
            return Err(TransformError::Engine(
                "this gateway runs without a transform engine".into(),
            ));
        };
        // `req.svc` acts as the proxy's application: its calls are recorded under it.
        let svc_audit = match (self.vault.audit().is_on(), proxy.application_id) {
            (true, Some(app)) => Some(SvcAudit::new(
                proxy.tenant_id,
                Actor::Application(app),
                proxy.id,
                ctx.request_id,
            )),
            _ => None,
        };
        let outcome = run(engine, &self.vault, proxy, code, args, svc_audit.as_ref()).await;
        if let Some(svc_audit) = svc_audit {
            ctx.audit.events.extend(svc_audit.into_events());
        }
        if outcome == Err(TransformError::TimedOut) {
            let backoff = self.quarantine.timed_out(proxy.id);
            tracing::warn!(proxy = %proxy.id, tenant = %proxy.tenant_id, backoff_s = backoff.as_secs(), "transform timed out: proxy quarantined");
        }
        outcome
    }
}

/// `req.args.body`: a JSON body as its text (the engine parses it), a form body as its decoded
/// pairs, anything else as text.
fn args_body(headers: &HeaderMap, body: &[u8]) -> Body {
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
fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
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

/// Returned `headers` replace the header set; absent → unchanged.
fn replace_headers(
    returned: Option<Vec<(String, String)>>,
    current: HeaderMap,
) -> Result<HeaderMap, String> {
    let Some(returned) = returned else {
        return Ok(current);
    };
    let mut out = HeaderMap::with_capacity(returned.len());
    for (name, value) in returned {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name `{name}`"))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("invalid value for header `{name}`"))?;
        out.append(name, value);
    }
    Ok(out)
}

/// A transform failure (500 `proxy_error`).
fn failed(detail: String) -> GatewayError {
    GatewayError::new(ErrorKind::TransformFailed, detail)
}

/// What a transform returned: `(body, headers)`, each absent when not returned.
type Returned = (Option<String>, Option<Vec<(String, String)>>);

/// The answer for an outcome that ends the invocation (an error class, a custom response, a
/// crash); `Ok` carries the returned body and headers on.
fn settle(outcome: Result<Outcome, TransformError>) -> Result<Returned, Halt> {
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
            // (attack finding): only final statuses a response may have.
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

/// The status and message the management API would have answered (SUPPLEMENT §7).
fn host_error(e: VaultError) -> HostError {
    HostError {
        status: class_status(e.class()).as_u16(),
        message: e.public_message(),
    }
}

/// One `req.svc` call, made in-process as the proxy's application with its permissions.
async fn host_call(
    vault: &Vault,
    principal: &Principal,
    target: Option<&Target>,
    audit: Option<&SvcAudit>,
    op: HostOp,
    payload: Value,
) -> Result<Value, HostError> {
    // What a refusal would name, taken before the payload is consumed.
    let attempt = audit.map(|_| match op {
        HostOp::Tokenize | HostOp::Create => (AuditAction::TokenCreatedByTransform, vec![]),
        HostOp::Retrieve => (AuditAction::TokenReadByTransform, payload_id(&payload)),
        HostOp::Delete => (AuditAction::TokenDeleted, payload_id(&payload)),
    });
    let answer = svc_call(vault, principal, target, audit, op, payload).await;
    if let (Some(audit), Some((action, ids)), Err(e)) = (audit, attempt, &answer) {
        audit.refused(action, ids, e.status, &e.message);
    }
    answer
}

fn payload_id(payload: &Value) -> Vec<uuid::Uuid> {
    payload
        .as_str()
        .and_then(|s| s.parse().ok())
        .into_iter()
        .collect()
}

/// [`host_call`] without the refusal's audit event. `target` is where the proxy sends its
/// requests: a token bound to other destinations is not handed to its transform (issue 27),
/// which could otherwise send it there itself.
async fn svc_call(
    vault: &Vault,
    principal: &Principal,
    target: Option<&Target>,
    audit: Option<&SvcAudit>,
    op: HostOp,
    payload: Value,
) -> Result<Value, HostError> {
    let bad = |m: String| HostError {
        status: 400,
        message: m,
    };
    let create = |request: Value| async move {
        let input: NewToken = serde_json::from_value(request)
            .map_err(|e| bad(format!("invalid token request: {e}")))?;
        let token = vault
            .create_token(principal, input)
            .await
            .map_err(host_error)?;
        let id = *token.id.as_uuid();
        serde_json::to_value(TokenView::without_data(token, principal))
            .map(|view| (view, id))
            .map_err(|e| bad(e.to_string()))
    };
    let id = |payload: &Value| {
        payload
            .as_str()
            .and_then(|s| s.parse::<TokenId>().ok())
            .ok_or_else(|| HostError {
                status: 400,
                message: "a token id is required".into(),
            })
    };
    match op {
        HostOp::Tokenize | HostOp::Create => {
            // One event per call, listing what it created (an array may fail part-way: the
            // tokens created before the failure are recorded).
            let mut created = Vec::new();
            let answer = match payload {
                Value::Array(requests) if op == HostOp::Tokenize => {
                    let mut out = Vec::with_capacity(requests.len());
                    let mut failed = None;
                    for request in requests {
                        match create(request).await {
                            Ok((view, id)) => {
                                out.push(view);
                                created.push(id);
                            }
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    failed.map_or(Ok(Value::Array(out)), Err)
                }
                request => create(request).await.map(|(view, id)| {
                    created.push(id);
                    view
                }),
            };
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenCreatedByTransform, created);
            }
            answer
        }
        HostOp::Retrieve => {
            let token = vault
                .get_token(principal, id(&payload)?)
                .await
                .map_err(host_error)?;
            if let Some(bound) = &token.destinations {
                let allowed = target.is_some_and(|t| bound.allows(&t.host, t.port));
                if !allowed {
                    return Err(host_error(VaultError::DestinationRefused(format!(
                        "token {} may not be read by this proxy's transform: its destination is not allowed for it",
                        token.id
                    ))));
                }
            }
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenReadByTransform, vec![*token.id.as_uuid()]);
            }
            serde_json::to_value(TokenView::with_data(token)).map_err(|e| bad(e.to_string()))
        }
        HostOp::Delete => {
            let token = id(&payload)?;
            vault
                .delete_token(principal, token)
                .await
                .map_err(host_error)?;
            if let Some(audit) = audit {
                audit.success(AuditAction::TokenDeleted, vec![*token.as_uuid()]);
            }
            Ok(json!({}))
        }
    }
}

/// Runs `code` on `args` with the proxy's configuration; `req.svc` acts as the proxy's
/// application when it has one.
async fn run(
    engine: &TransformEngine,
    vault: &Vault,
    proxy: &Proxy,
    code: &str,
    args: Args,
    audit: Option<&SvcAudit>,
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
    let host = principal
        .as_ref()
        .map(|p| move |op: HostOp, payload: Value| host_call(vault, p, target, audit, op, payload));
    engine
        .run(program, &proxy_id, (&tenant, &proxy_id), input, host)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `req.svc` refusals carry the status the API would have answered (SUPPLEMENT §7).
    #[test]
    fn host_errors_carry_the_api_status() {
        use tessera_domain::{error::Resource, store::StoreError};
        let e = host_error(VaultError::NotFound(Resource::Token));
        assert_eq!((e.status, e.message.as_str()), (404, "token not found"));
        let e = host_error(VaultError::Store(StoreError::Unavailable("down".into())));
        assert_eq!(e.status, 503);
        assert!(!e.message.contains("down"), "{}", e.message);
        let e = host_error(VaultError::Store(StoreError::Backend(
            "secret detail".into(),
        )));
        assert_eq!(e.status, 500);
        assert!(!e.message.contains("secret"), "{}", e.message);
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
