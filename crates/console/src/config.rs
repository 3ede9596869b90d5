//! The console's settings and the `api serve` flags that set them.

use std::{net::SocketAddr, time::Duration};

/// A session ends after this long whatever its activity (12 h, docs/console.md).
pub const MAX_SESSION_AGE: Duration = Duration::from_secs(12 * 60 * 60);

/// Default idle lifetime of a session, in seconds (15 minutes).
pub const DEFAULT_SESSION_TTL_SECS: f64 = 900.0;

/// What the console needs to know about its surroundings.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// A session ends after this long without a request.
    pub session_idle: Duration,
    /// A session ends after this long in any case.
    pub session_max_age: Duration,
    /// Base URL (`http://host:port`) of the gateway that "Try it" sends test requests to
    /// (`/proxy` is appended); `None`: "Try it" is unavailable.
    pub gateway_url: Option<String>,
    /// Largest form body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
    /// Reverse proxies whose `X-Forwarded-For` names the client (for the sign-in throttle).
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            session_idle: Duration::from_secs_f64(DEFAULT_SESSION_TTL_SECS),
            session_max_age: MAX_SESSION_AGE,
            gateway_url: None,
            max_body_bytes: tessera_service::DEFAULT_MAX_BODY_BYTES,
            trusted_proxies: Vec::new(),
        }
    }
}

/// Where the console listens unless told otherwise: its own port, so that it never shares an
/// origin with `/proxy` (docs/console.md, "Its own origin").
pub const DEFAULT_CONSOLE_LISTEN: &str = "127.0.0.1:8082";

/// The console's flags of `api serve`; each also reads `TESSERA_<FLAG>`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConsoleArgs {
    /// Do not serve the web console.
    #[arg(long, env = "TESSERA_NO_CONSOLE")]
    pub no_console: bool,
    /// Address the web console listens on, at `/console`: a listener of its own that serves
    /// nothing else, so the console never shares an origin with `/proxy`. Must differ from
    /// `--listen`.
    #[arg(long, env = "TESSERA_CONSOLE_LISTEN", default_value = DEFAULT_CONSOLE_LISTEN)]
    pub console_listen: SocketAddr,
    /// Seconds a console session survives without a request (1 to 43200); a session ends
    /// after 12 hours whatever its activity.
    #[arg(long, env = "TESSERA_CONSOLE_SESSION_TTL", default_value_t = DEFAULT_SESSION_TTL_SECS,
          value_parser = parse_ttl)]
    pub console_session_ttl: f64,
    /// Base URL (`http://host:port`) of the gateway that the console's "Try it" calls. Default:
    /// this process's own `/proxy` over loopback; with `--no-gateway` and no URL, "Try it" is
    /// unavailable.
    #[arg(long, env = "TESSERA_CONSOLE_GATEWAY_URL", value_parser = parse_gateway_url)]
    pub console_gateway_url: Option<String>,
    /// IP addresses of reverse proxies in front of the console (comma-separated): from these
    /// peers only, `X-Forwarded-For` names the client whose failed sign-ins are throttled.
    #[arg(long, env = "TESSERA_CONSOLE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub console_trusted_proxies: Vec<std::net::IpAddr>,
}

fn parse_ttl(raw: &str) -> Result<f64, String> {
    let secs: f64 = raw
        .parse()
        .map_err(|_| format!("`{raw}` is not a number of seconds"))?;
    if (1.0..=MAX_SESSION_AGE.as_secs_f64()).contains(&secs) {
        Ok(secs)
    } else {
        Err("must be from 1 to 43200 seconds".to_string())
    }
}

/// Accepts `http://host:port` (optionally with a trailing `/`): the console's client speaks
/// plain HTTP to a gateway it is deployed beside.
fn parse_gateway_url(raw: &str) -> Result<String, String> {
    let uri: http::Uri = raw
        .parse()
        .map_err(|e| format!("`{raw}` is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return Err("must be an http:// URL with a host and port".to_string());
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err("must have no path or query (`/proxy` is appended)".to_string());
    }
    Ok(raw.trim_end_matches('/').to_string())
}

impl ConsoleArgs {
    /// The settings of a console served by a process listening on `listen`, which serves
    /// `/proxy` itself when `gateway_mounted`; `None` with `--no-console`.
    pub fn config(
        &self,
        listen: SocketAddr,
        gateway_mounted: bool,
        max_body_bytes: usize,
    ) -> Option<ConsoleConfig> {
        if self.no_console {
            return None;
        }
        // The console's server calls this process's own `/proxy`: by the address it listens on
        // (loopback for an unspecified one), whatever interface that is.
        let gateway_url = self.console_gateway_url.clone().or_else(|| {
            gateway_mounted.then(|| {
                format!(
                    "http://{}",
                    tessera_domain::origin::reachable_address(listen)
                )
            })
        });
        Some(ConsoleConfig {
            session_idle: Duration::from_secs_f64(self.console_session_ttl),
            session_max_age: MAX_SESSION_AGE,
            gateway_url,
            max_body_bytes,
            trusted_proxies: self.console_trusted_proxies.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_bounds() {
        assert_eq!(parse_ttl("900"), Ok(900.0));
        assert!(parse_ttl("0").is_err());
        assert!(parse_ttl("43201").is_err());
        assert!(parse_ttl("soon").is_err());
    }

    #[test]
    fn gateway_urls() {
        assert_eq!(
            parse_gateway_url("http://127.0.0.1:8081/").as_deref(),
            Ok("http://127.0.0.1:8081")
        );
        for bad in [
            "https://x:1",
            "127.0.0.1:8081",
            "http://x:1/proxy",
            "http://x:1/?a",
        ] {
            assert!(parse_gateway_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_default_gateway_is_this_process_over_loopback() {
        let args = ConsoleArgs {
            no_console: false,
            console_listen: DEFAULT_CONSOLE_LISTEN.parse().expect("addr"),
            console_session_ttl: 60.0,
            console_gateway_url: None,
            console_trusted_proxies: vec![],
        };
        let c = args
            .config("0.0.0.0:8080".parse().expect("addr"), true, 10)
            .expect("on");
        assert_eq!(c.gateway_url.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(c.session_idle, Duration::from_secs(60));
        let c = args
            .config("[::]:9000".parse().expect("addr"), true, 10)
            .expect("on");
        assert_eq!(c.gateway_url.as_deref(), Some("http://[::1]:9000"));
        let c = args
            .config("10.1.2.3:80".parse().expect("addr"), true, 10)
            .expect("on");
        assert_eq!(
            c.gateway_url.as_deref(),
            Some("http://10.1.2.3:80"),
            "a process listening on one interface is called on it"
        );
        let c = args
            .config("10.1.2.3:80".parse().expect("addr"), false, 10)
            .expect("on");
        assert_eq!(
            c.gateway_url, None,
            "no gateway in this process and none named"
        );
        let off = ConsoleArgs {
            no_console: true,
            ..args
        };
        assert!(off
            .config("127.0.0.1:1".parse().expect("addr"), true, 10)
            .is_none());
    }
}
