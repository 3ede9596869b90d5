//! `Idempotency-Key` on every POST that creates ([`IDEMPOTENT_POSTS`]), as middleware inside
//! authentication, whatever the request's content type: a bodiless request (how the SDKs
//! send `POST /applications/{id}/keys` and `/regenerate`) is keyed by an empty body.
//!
//! A request carrying the header is claimed for its application ([`Vault::claim_idempotency`],
//! which keeps a keyed hash of method, path, query and body): the first runs, and its
//! successful answer is stored sealed and replayed — status and body, with
//! `Idempotent-Replayed: true` — to every retry within 24 hours; a retry with another request
//! gets 422; a retry while the first still runs waits for it (up to [`WAIT_FOR_FIRST`]), then
//! gets 409. A failed first request (any status outside 2xx) is not remembered: a retry runs.
//!
//! A replay is not a free pass: the first request runs with a recording caller, its answer is
//! kept with the permission checks it passed, and a retry is answered only if its (freshly
//! authenticated) caller passes them all again — else 403, recorded as a denial. A replay is
//! recorded as `request.replayed`.
//!
//! The key may also come as `<PREFIX>-IDEMPOTENCY-KEY` ([`IDEMPOTENCY_KEY_ALIAS`] with the
//! default prefix), the header Basis Theory's SDKs send with this deployment's prefix
//! (`--header-prefix`): the same key, checked the same way.
//! Both headers with different values are a 400 naming them (docs/migrating.md).
//!
//! [`Vault::claim_idempotency`]: tessera_domain::Vault::claim_idempotency

use std::time::Duration;

use actix_web::{
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        header::{self, HeaderMap},
        Method, StatusCode,
    },
    middleware::Next,
    web, Error, HttpMessage, HttpResponse,
};
use tessera_domain::{
    audit::AuditAction,
    vault::{validate_idempotency_key, IdempotencyClaim, IdempotentRequest, ReplayedResponse},
    Principal, ValidationErrors,
};

use crate::{
    audit::{mark, Audited},
    body::{body_limit, read_limited},
    problem::ApiError,
    state::ApiState,
};
use tessera_service::header_names::HeaderNames;

/// The request header (matched case-insensitively).
pub(crate) const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
/// The same header as the SDKs name it, with the default prefix (`<PREFIX>-IDEMPOTENCY-KEY`;
/// the OpenAPI document names it so, the middleware reads the deployment's name).
pub(crate) const IDEMPOTENCY_KEY_ALIAS: &str = "SVC-IDEMPOTENCY-KEY";
/// The response header marking a replayed answer.
pub(crate) const REPLAYED: &str = "idempotent-replayed";

/// The operations (OpenAPI path templates, all `POST`) that honour `Idempotency-Key`: every
/// POST of the management API that creates something (a key included).
pub(crate) const IDEMPOTENT_POSTS: &[&str] = &[
    "/applications",
    "/applications/{id}/keys",
    "/applications/{id}/regenerate",
    "/proxies",
    "/tokens",
    "/tokenize",
    "/tokens/{parent_id}/children",
    "/webhooks",
];

/// The POSTs that create nothing, and so ignore `Idempotency-Key`: searches, reads of
/// values, and the link of two tokens (idempotent by itself). A test holds every POST of the
/// OpenAPI document to one of the two lists, so a creating route added later cannot be
/// forgotten.
#[cfg(test)]
pub(crate) const POSTS_THAT_CREATE_NOTHING: &[&str] = &[
    "/detokenize",
    "/tokens/search",
    "/v2/tokens/search",
    "/tokens/{parent_id}/children/{child_id}",
];

/// How long a retry waits for the first request with its key to answer before a 409.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(10);
/// How often a waiting retry looks again.
const POLL: Duration = Duration::from_millis(25);

/// Middleware: applies the protocol above to a `POST` with an `Idempotency-Key`, whatever its
/// content type (a request without a body is keyed by the empty body); anything else passes
/// through untouched.
pub(crate) async fn idempotent(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    if req.method() != Method::POST {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    // Before the body is read: a malformed key is a 400 whatever the body.
    let (Some(state), Some(caller)) = (
        req.app_data::<web::Data<ApiState>>().cloned(),
        req.extensions().get::<Principal>().cloned(),
    ) else {
        return Ok(req.error_response(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "idempotency runs outside authentication",
        )));
    };
    let key = match presented_key(req.headers(), &state.config.names) {
        Ok(Some(key)) => key,
        Ok(None) => return Ok(next.call(req).await?.map_into_boxed_body()),
        Err(e) => return Ok(req.error_response(e)),
    };
    let limit = body_limit(req.request());
    let payload = req.take_payload();
    let body = match read_limited(req.request(), payload, limit).await {
        Ok(body) => body,
        Err(e) => return Ok(req.error_response(e)),
    };
    let ticket = match claim(&state, &caller, &key, &req, &body).await {
        Ok(ticket) => ticket,
        Err(Settled::Refused(e)) => return Ok(req.error_response(e)),
        Err(Settled::Replay(answer)) => {
            return Ok(req.into_response(replay(answer)).map_into_boxed_body())
        }
    };
    req.set_payload(actix_web::dev::Payload::from(body));
    // The handler acts as a caller that writes down the checks it passes.
    let recording = caller.recording();
    req.extensions_mut().insert(recording.clone());
    let response = next.call(req).await?;
    Ok(remember(&state, ticket, &recording, response).await)
}

/// How a claim ended without the request running.
enum Settled {
    /// Refused: the key's first use was another request (422), it still runs (409), the
    /// replay's checks fail (403), or the store failed.
    Refused(ApiError),
    /// The key's first answer, to send again.
    Replay(ReplayedResponse),
}

/// Claims `key` for this request, waiting (up to [`WAIT_FOR_FIRST`]) while its first request
/// runs: the ticket to run it, or how it was settled instead.
async fn claim(
    state: &ApiState,
    caller: &Principal,
    key: &str,
    req: &ServiceRequest,
    body: &[u8],
) -> Result<tessera_domain::vault::IdempotencyTicket, Settled> {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_FIRST;
    loop {
        let request = IdempotentRequest {
            method: req.method().as_str(),
            path: req.path(),
            query: req.query_string(),
            body,
        };
        let claim = state
            .vault
            .claim_idempotency(caller, key, request)
            .await
            .map_err(|e| Settled::Refused(e.into()))?;
        match claim {
            IdempotencyClaim::Run(ticket) => return Ok(ticket),
            IdempotencyClaim::Replay(answer) => {
                state
                    .vault
                    .authorize_replay(caller, &answer)
                    .map_err(|e| Settled::Refused(e.into()))?;
                return Err(Settled::Replay(answer));
            }
            IdempotencyClaim::Mismatch => {
                return Err(Settled::Refused(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "this Idempotency-Key was already used with a different request (method, path or body); use a new key",
                )))
            }
            IdempotencyClaim::InFlight if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(POLL).await;
            }
            IdempotencyClaim::InFlight => {
                return Err(Settled::Refused(ApiError::new(
                    StatusCode::CONFLICT,
                    "a request with this Idempotency-Key is still being processed; retry later",
                )))
            }
        }
    }
}

/// Stores a successful `response` under `ticket` with the checks `recording` saw it pass, and
/// sends it; a failed one releases the key, so that a retry runs.
async fn remember(
    state: &ApiState,
    ticket: tessera_domain::vault::IdempotencyTicket,
    recording: &Principal,
    response: ServiceResponse<impl MessageBody + 'static>,
) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if !status.is_success() {
        if let Err(e) = state.vault.release_idempotency(ticket).await {
            tracing::warn!(error = %e, "releasing an Idempotency-Key after a failed request");
        }
        return response.map_into_boxed_body();
    }
    let (request, response) = response.into_parts();
    let resources: Vec<tessera_domain::audit::ResourceId> = response
        .extensions()
        .get::<Audited>()
        .map(|audited| audited.0.iter().flat_map(|m| m.ids.clone()).collect())
        .unwrap_or_default();
    let (head, body) = response.into_parts();
    let text = match actix_web::body::to_bytes(body).await {
        Ok(bytes) => String::from_utf8(bytes.to_vec()).ok(),
        Err(_) => None,
    };
    let Some(text) = text else {
        let _ = state.vault.release_idempotency(ticket).await;
        return ServiceResponse::new(
            request,
            HttpResponse::from_error(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the response could not be read for idempotent replay",
            )),
        );
    };
    let answer = ReplayedResponse {
        status: status.as_u16(),
        body: text,
        checks: recording.checks_passed(),
        resources,
    };
    // The resource exists now, so its answer is sent whatever happens to the record; if the
    // record could not be written, retries see the key in flight (409) until the claim goes
    // stale (two minutes), and may then create again: logged, as it should be rare.
    if let Err(e) = state.vault.complete_idempotency(ticket, &answer).await {
        tracing::error!(error = %e, "storing the answer of an idempotent request");
    }
    ServiceResponse::new(request, head.set_body(answer.body).map_into_boxed_body())
}

/// The idempotency key a request presents, in `Idempotency-Key` or in its alias, checked
/// (1–255 printable ASCII characters; a problem names the header that carried it). Both headers
/// may be sent only with the same value.
fn presented_key(headers: &HeaderMap, names: &HeaderNames) -> Result<Option<String>, ApiError> {
    let alias = format!("{}-IDEMPOTENCY-KEY", names.prefix());
    let (header, value) = match (
        headers.get(IDEMPOTENCY_KEY),
        headers.get(names.idempotency_key.as_str()),
    ) {
        (None, None) => return Ok(None),
        (Some(standard), Some(aliased)) if standard != aliased => {
            return Err(ApiError::field(
                &alias,
                format!(
                    "differs from {IDEMPOTENCY_KEY}: send the key in one of the two headers, or the same key in both"
                ),
            ))
        }
        (Some(value), _) => (IDEMPOTENCY_KEY.to_string(), value),
        (None, Some(value)) => (alias, value),
    };
    // A value that is not visible ASCII cannot be a key: the domain's check refuses it.
    let key = value.to_str().unwrap_or("\u{0}").to_string();
    validate_idempotency_key(&key).map_err(|e| {
        let mut named = ValidationErrors::new();
        for message in e.fields().values().flatten() {
            named.add(header.as_str(), message.clone());
        }
        ApiError::validation(&named)
    })?;
    Ok(Some(key))
}

/// The stored answer, as it was first sent, marked as a replay (header and audit event).
fn replay(answer: ReplayedResponse) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let response = HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .insert_header((REPLAYED, "true"))
        .body(answer.body);
    mark(response, AuditAction::RequestReplayed, answer.resources)
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            let value = HeaderValue::from_bytes(value).expect("value");
            map.append(header::HeaderName::from_static(name), value);
        }
        map
    }

    fn fields(e: &ApiError) -> Vec<String> {
        e.errors()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn either_header_or_both_alike_give_the_key() {
        for pairs in [
            &[("idempotency-key", &b"k-1"[..])][..],
            &[("svc-idempotency-key", &b"k-1"[..])][..],
            &[
                ("idempotency-key", &b"k-1"[..]),
                ("svc-idempotency-key", &b"k-1"[..]),
            ][..],
        ] {
            let key = presented_key(&headers(pairs), &svc()).expect("valid");
            assert_eq!(key.as_deref(), Some("k-1"), "{pairs:?}");
        }
        assert_eq!(presented_key(&headers(&[]), &svc()).expect("none"), None);
    }

    fn svc() -> HeaderNames {
        HeaderNames::default()
    }

    #[test]
    fn a_chosen_prefix_names_the_alias() {
        let bt = HeaderNames::new("BT").expect("prefix");
        let key = presented_key(&headers(&[("bt-idempotency-key", b"k-2")]), &bt);
        assert_eq!(key.expect("valid").as_deref(), Some("k-2"));
        // The default name is not read beside the chosen one.
        let other = presented_key(&headers(&[("svc-idempotency-key", b"k-2")]), &bt);
        assert_eq!(other.expect("none"), None);
        let both = headers(&[("idempotency-key", b"a"), ("bt-idempotency-key", b"b")]);
        let e = presented_key(&both, &bt).expect_err("differ");
        assert_eq!(fields(&e), vec!["BT-IDEMPOTENCY-KEY"]);
    }

    #[test]
    fn different_keys_and_malformed_keys_are_refused_naming_the_header() {
        let both = headers(&[("idempotency-key", b"a"), ("svc-idempotency-key", b"b")]);
        let e = presented_key(&both, &svc()).expect_err("differ");
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(fields(&e), vec![IDEMPOTENCY_KEY_ALIAS]);
        assert!(e.detail().contains(IDEMPOTENCY_KEY), "{}", e.detail());
        for (name, shown) in [
            ("idempotency-key", IDEMPOTENCY_KEY),
            ("svc-idempotency-key", IDEMPOTENCY_KEY_ALIAS),
        ] {
            for bad in [&b""[..], "é".as_bytes()] {
                let e = presented_key(&headers(&[(name, bad)]), &svc()).expect_err("malformed");
                assert_eq!(fields(&e), vec![shown], "{name}");
            }
        }
    }
}
