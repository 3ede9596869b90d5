//! Serving the gateway with hyper-util on the multi-threaded tokio runtime: one outbound
//! connection pool shared by all cores. Routes `/proxy`, `/proxy/…`, `/healthz`, `/readyz`,
//! `/metrics`; drains in-flight requests on shutdown.

use std::{convert::Infallible, future::Future, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::{conn::auto, graceful::GracefulShutdown},
};
use serde_json::json;
use tokio::net::TcpListener;
use tracing::Instrument;

use super::{Gateway, ProxyBody};
use crate::{metrics::METRICS_CONTENT_TYPE, problem::ApiError, request_id};

/// How long shutdown waits for in-flight requests.
const DRAIN: Duration = Duration::from_secs(30);

fn buffered(status: StatusCode, content_type: &'static str, body: String) -> Response<ProxyBody> {
    let mut res = Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
    *res.status_mut() = status;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

fn problem(status: StatusCode, detail: &str) -> Response<ProxyBody> {
    // The management API's problem type (actix's `http` 0.2 status, hence the conversion).
    let actix_status = actix_web::http::StatusCode::from_u16(status.as_u16())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let body =
        serde_json::to_string(&ApiError::new(actix_status, detail).problem()).unwrap_or_default();
    buffered(status, crate::problem::PROBLEM_JSON, body)
}

async fn route(gateway: Arc<Gateway>, req: Request<Incoming>, id: &str) -> Response<ProxyBody> {
    let path = req.uri().path();
    if path == "/proxy" || path.starts_with("/proxy/") {
        let (parts, body) = req.into_parts();
        let limit = gateway.max_body_bytes();
        return match Limited::new(body, limit).collect().await {
            Ok(collected) => {
                gateway
                    .handle(Request::from_parts(parts, collected.to_bytes()), id)
                    .await
            }
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                gateway.body_too_large()
            }
            Err(e) => super::ProxyError::new(
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {e}"),
            )
            .into_response(),
        };
    }
    let res = match (req.method().as_str(), path) {
        ("GET", "/healthz") => buffered(
            StatusCode::OK,
            "application/json",
            json!({"status": "ok"}).to_string(),
        ),
        ("GET", "/readyz") => match gateway.vault().store().ping().await {
            Ok(()) => buffered(
                StatusCode::OK,
                "application/json",
                json!({"status": "ready"}).to_string(),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "readiness check failed");
                problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the database is unreachable",
                )
            }
        },
        ("GET", "/metrics") => buffered(
            StatusCode::OK,
            METRICS_CONTENT_TYPE,
            gateway.metrics().render(),
        ),
        (_, "/healthz" | "/readyz" | "/metrics") => problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "this route does not accept that method",
        ),
        _ => problem(StatusCode::NOT_FOUND, "no such route"),
    };
    gateway
        .metrics()
        .record_request("gateway", res.status().as_u16());
    res
}

/// Handles one accepted connection on the current runtime.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    gateway: Arc<Gateway>,
    graceful: &GracefulShutdown,
) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req: Request<Incoming>| {
        let gateway = gateway.clone();
        async move {
            let id = request_id::choose(
                req.headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok()),
            );
            // Per-request spans and log lines cost measurable time on the hot path: only when
            // debug logging is on (errors and warnings are logged regardless).
            let mut res = if tracing::enabled!(tracing::Level::DEBUG) {
                let span = tracing::debug_span!("proxy", request_id = %id, method = %req.method(), path = %req.uri().path());
                let started = std::time::Instant::now();
                let res = route(gateway, req, &id).instrument(span.clone()).await;
                span.in_scope(|| {
                    tracing::debug!(
                        status = res.status().as_u16(),
                        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                        "handled"
                    );
                });
                res
            } else {
                route(gateway, req, &id).await
            };
            super::add_request_id(res.headers_mut(), &id);
            Ok::<_, Infallible>(res)
        }
    });
    let conn = auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(TokioIo::new(stream), service)
        .into_owned();
    let conn = graceful.watch(conn);
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        }
    });
}

/// Accepts on `listener` until `shutdown` resolves, then drains (up to 30 s).
async fn accept_loop(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        spawn_connection(stream, peer, gateway.clone(), &graceful);
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open after 30 s");
    }
}

/// Serves `gateway` on `listener` within the current runtime until `shutdown` resolves, then
/// drains (up to 30 s). Used by tests and embedders; the binary uses [`serve_per_core`].
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    accept_loop(listener, gateway, shutdown).await;
    Ok(())
}

/// Serves `gateway` with one single-threaded runtime per worker thread, all accepting on
/// `listener`, each with its own outbound connection pool ([`Gateway::fork`]). A request and
/// its forwarded request stay on one thread, avoiding cross-thread wake-ups (the model nginx
/// uses). Storage work still runs on the runtime that opened the database. Returns after
/// `shutdown` flips to `true` and every worker has drained.
pub fn serve_per_core(
    listener: std::net::TcpListener,
    gateway: &Gateway,
    workers: usize,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut threads = Vec::with_capacity(workers);
    for i in 0..workers.max(1) {
        let listener = listener.try_clone()?;
        let gateway = Arc::new(gateway.fork().map_err(std::io::Error::other)?);
        let mut shutdown = shutdown.clone();
        let thread = std::thread::Builder::new()
            .name(format!("gateway-{i}"))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener)?;
                    let stop = async move {
                        let _ = shutdown.wait_for(|stop| *stop).await;
                    };
                    accept_loop(listener, gateway, stop).await;
                    Ok::<_, std::io::Error>(())
                })
            })?;
        threads.push(thread);
    }
    for thread in threads {
        match thread.join() {
            Ok(result) => result?,
            Err(_) => return Err(std::io::Error::other("a gateway worker panicked")),
        }
    }
    Ok(())
}
