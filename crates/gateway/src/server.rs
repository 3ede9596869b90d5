//! Serving the gateway with hyper, as nginx serves: one worker thread per core, each with its
//! own listening socket on the same address (`SO_REUSEPORT`: the kernel spreads connections
//! and no accept is shared), its own single-threaded runtime and its own outbound connection
//! pool ([`Gateway::fork`]), so that a request, its forwarded request and the pooled
//! connection's task stay on one thread. Routes `/proxy`, `/proxy/…`, `/healthz`, `/readyz`,
//! `/metrics`; on shutdown, stops accepting and drains in-flight requests.

use std::{convert::Infallible, future::Future, net::SocketAddr, rc::Rc, time::Duration};

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::{conn::auto, graceful::GracefulShutdown},
};
use tessera_service::{
    metrics::{self, Registry},
    mount::{BoxError, LocalBody, ResponseBody},
    problem::{Problem, PROBLEM_JSON},
    request_id,
};
use tokio::net::TcpListener;
use tracing::Instrument;

use crate::{headers::add_request_id, Gateway};

/// How long shutdown waits for in-flight requests.
const DRAIN: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A socket could not be created, configured or bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A worker could not start.
    #[error("cannot start a gateway worker: {0}")]
    Worker(String),
}

/// One listening socket per worker on the same address, with `SO_REUSEPORT` (the first binds,
/// so port 0 picks one port for all). Nonblocking, ready for [`serve_per_core`].
pub fn bind(addr: SocketAddr, workers: usize) -> Result<Vec<std::net::TcpListener>, ServeError> {
    let fail = |addr, source| ServeError::Listen { addr, source };
    let mut listeners: Vec<std::net::TcpListener> = Vec::with_capacity(workers.max(1));
    let mut at = addr;
    for _ in 0..workers.max(1) {
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(at),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .map_err(|e| fail(at, e))?;
        socket.set_reuse_address(true).map_err(|e| fail(at, e))?;
        socket.set_reuse_port(true).map_err(|e| fail(at, e))?;
        socket.set_nonblocking(true).map_err(|e| fail(at, e))?;
        socket.set_tcp_nodelay(true).map_err(|e| fail(at, e))?;
        socket.bind(&at.into()).map_err(|e| fail(at, e))?;
        socket.listen(4096).map_err(|e| fail(at, e))?;
        let listener: std::net::TcpListener = socket.into();
        at = listener.local_addr().map_err(|e| fail(at, e))?;
        listeners.push(listener);
    }
    Ok(listeners)
}

/// What the workers serve besides the gateway itself.
#[derive(Debug, Clone)]
pub struct Served {
    /// The process's metrics, rendered at `/metrics`.
    pub registry: Registry,
}

/// Serves `gateway` with one worker thread per listener (see [`bind`]), each with its own
/// single-threaded runtime and a fork of the gateway. Returns after `shutdown` flips to `true`
/// and every worker has drained.
pub fn serve_per_core(
    listeners: Vec<std::net::TcpListener>,
    gateway: &Gateway,
    served: Served,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ServeError> {
    let mut threads = Vec::with_capacity(listeners.len());
    for (i, listener) in listeners.into_iter().enumerate() {
        let gateway = gateway
            .fork()
            .map_err(|e| ServeError::Worker(e.to_string()))?;
        let (served, mut shutdown) = (served.clone(), shutdown.clone());
        let thread = std::thread::Builder::new()
            .name(format!("gateway-{i}"))
            .spawn(move || -> Result<(), String> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    let listener = TcpListener::from_std(listener).map_err(|e| e.to_string())?;
                    let stop = async move {
                        let _ = shutdown.wait_for(|stop| *stop).await;
                    };
                    accept_loop(listener, Rc::new(gateway), served, stop).await;
                    Ok(())
                })
            })
            .map_err(|e| ServeError::Worker(e.to_string()))?;
        threads.push(thread);
    }
    for thread in threads {
        match thread.join() {
            Ok(result) => result.map_err(ServeError::Worker)?,
            Err(_) => return Err(ServeError::Worker("a gateway worker panicked".into())),
        }
    }
    Ok(())
}

/// Accepts on `listener` until `shutdown` resolves, then drains (up to 30 s). Runs inside a
/// `LocalSet`: connections are spawned on this thread.
async fn accept_loop(
    listener: TcpListener,
    gateway: Rc<Gateway>,
    served: Served,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let served = Rc::new(served);
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
        let _ = stream.set_nodelay(true);
        let (gateway, served) = (gateway.clone(), served.clone());
        let service = service_fn(move |req: Request<Incoming>| {
            let (gateway, served) = (gateway.clone(), served.clone());
            async move { Ok::<_, Infallible>(route(&gateway, &served, req).await) }
        });
        let mut builder = auto::Builder::new(LocalExec);
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::task::spawn_local(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open after 30 s");
    }
}

/// Spawns HTTP/2 stream tasks on the current thread (the futures are not `Send`).
#[derive(Debug, Clone, Copy)]
struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: Future + 'static,
{
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

async fn route(
    gateway: &Gateway,
    served: &Served,
    req: Request<Incoming>,
) -> Response<ResponseBody> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let id = request_id::choose_either(
        header(request_id::HEADER),
        header(gateway.shared.config.names.trace_id.as_str()),
    );
    let path = req.uri().path();
    if tessera_service::mount::is_proxy_path(path) {
        let req = req.map(|body| Box::pin(body.map_err(|e| Box::new(e) as BoxError)) as LocalBody);
        // Per-request spans cost measurable time on the hot path: only with debug logging on
        // (failures are logged by the gateway regardless).
        return if tracing::enabled!(tracing::Level::DEBUG) {
            let span = tracing::debug_span!("proxy", request_id = %id, method = %req.method(), path = %req.uri().path());
            gateway.handle(req, &id).instrument(span).await
        } else {
            gateway.handle(req, &id).await
        };
    }
    let mut res = match (req.method().as_str(), path) {
        ("GET", "/healthz") => {
            let build = tessera_service::build_info::current();
            let body = serde_json::json!({
                "status": "ok",
                "version": build.version,
                "build": build.commit,
            });
            buffered(StatusCode::OK, "application/json", body.to_string())
        }
        ("GET", "/readyz") => match gateway.vault().store().ping().await {
            Ok(()) => buffered(
                StatusCode::OK,
                "application/json",
                r#"{"status":"ready"}"#.into(),
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
            metrics::CONTENT_TYPE,
            served.registry.render(),
        ),
        (_, "/healthz" | "/readyz" | "/metrics") => problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "this route does not accept that method",
        ),
        _ => problem(StatusCode::NOT_FOUND, "no such route"),
    };
    add_request_id(res.headers_mut(), &id);
    gateway.metrics().answered(res.status().as_u16());
    res
}

fn buffered(
    status: StatusCode,
    content_type: &'static str,
    body: String,
) -> Response<ResponseBody> {
    let mut res = Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
    *res.status_mut() = status;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

fn problem(status: StatusCode, detail: &str) -> Response<ResponseBody> {
    let body = Problem::new(status, detail).to_json();
    buffered(
        status,
        PROBLEM_JSON,
        String::from_utf8(body).unwrap_or_default(),
    )
}
