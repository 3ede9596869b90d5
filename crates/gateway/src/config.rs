//! The gateway's settings, and the flags that set them (every flag also reads
//! `TESSERA_<FLAG>`; `api serve` accepts them too, since it mounts the gateway).

use std::{path::PathBuf, time::Duration};

use clap::Args;
use tessera_domain::{proxy::DestinationPolicy, Vault};
use tessera_service::seconds::SecondsRange;
use tessera_service::{
    header_names::HeaderNames, rate_limit::RateLimit, unsafe_settings::UnsafeSetting,
};
use tessera_transform_runtime::{EngineConfig, Isolation, SandboxCommand};

use crate::client::ClientConfig;

/// Default bound on what detokenization may expand a proxied request to (10 MiB).
pub const DEFAULT_MAX_RENDERED_BYTES: u64 = 10 * 1024 * 1024;
/// Default time a request body may take to arrive, from the start of the request.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(15);
/// What `--body-timeout` and `--destination-timeout` accept: more than 0, at most an hour.
pub const REQUEST_TIMEOUT: SecondsRange = SecondsRange::positive(3600.0);
/// What `--transform-timeout` accepts: more than 0, at most a minute.
pub const TRANSFORM_TIMEOUT: SecondsRange = SecondsRange::positive(60.0);

/// Gateway settings.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Most distinct tokens one request may detokenize.
    pub max_tokens: usize,
    /// Largest request (body and header values) detokenization may produce; a request whose
    /// rendering could exceed it is refused (413) before any token is decrypted.
    pub max_rendered_bytes: u64,
    /// How long the request body may take to arrive, counted from the start of the request
    /// (408 after).
    pub body_timeout: Duration,
    /// Outbound client settings.
    pub client: ClientConfig,
    /// Whether `/proxy` with `SVC-PROXY-URL` (an ephemeral proxy) is served.
    pub ephemeral_proxy: bool,
    /// Whether an ephemeral proxy may detokenize tokens without a destination binding.
    pub ephemeral_unbound_tokens: bool,
    /// The prefixed header names (`--header-prefix`).
    pub names: HeaderNames,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: tessera_service::DEFAULT_MAX_BODY_BYTES,
            max_tokens: tessera_detokenize::DEFAULT_MAX_TOKENS,
            max_rendered_bytes: DEFAULT_MAX_RENDERED_BYTES,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            client: ClientConfig::default(),
            ephemeral_proxy: true,
            ephemeral_unbound_tokens: false,
            names: HeaderNames::default(),
        }
    }
}

/// The default of `--transform-isolation`: sandbox processes where they are available (Linux,
/// seccomp), inline elsewhere.
pub const DEFAULT_ISOLATION: TransformIsolation = if cfg!(target_os = "linux") {
    TransformIsolation::Process
} else {
    TransformIsolation::Inline
};

/// `--transform-isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransformIsolation {
    /// On the serving thread.
    Inline,
    /// In key-less sandbox processes.
    Process,
}

/// A flag value clap cannot check by itself.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidFlag(std::borrow::Cow<'static, str>);

/// Flags of the proxy gateway (also accepted by `api serve`, which mounts it at `/proxy`).
#[derive(Debug, Clone, Args)]
pub struct GatewayArgs {
    /// Largest request body accepted, in bytes (413 above).
    #[arg(long, env = "TESSERA_MAX_BODY_BYTES", default_value_t = tessera_service::DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Largest size, in bytes, detokenization may expand a proxied request to (body and header
    /// values); a request whose expressions could expand past it is refused with 413 before
    /// any token is decrypted.
    #[arg(long, env = "TESSERA_MAX_RENDERED_BYTES", default_value_t = DEFAULT_MAX_RENDERED_BYTES)]
    pub max_rendered_bytes: u64,
    /// Seconds a proxied request's body may take to arrive, from the start of the request
    /// (408 after); more than 0, at most 3600.
    #[arg(long, env = "TESSERA_BODY_TIMEOUT", default_value_t = DEFAULT_BODY_TIMEOUT.as_secs_f64(),
          value_parser = REQUEST_TIMEOUT.parser())]
    pub body_timeout: f64,
    /// Accept proxy destinations over plain `http` and in private, loopback and link-local
    /// ranges (tests and internal deployments only).
    #[arg(long, env = "TESSERA_ALLOW_PRIVATE_DESTINATIONS")]
    pub allow_private_destinations: bool,
    /// Do not serve ephemeral proxies (`/proxy` with `SVC-PROXY-URL`): such requests get 400.
    #[arg(long, env = "TESSERA_NO_EPHEMERAL_PROXY")]
    pub no_ephemeral_proxy: bool,
    /// UNSAFE: let ephemeral proxies detokenize tokens that carry no destination binding, so
    /// that any key with `token:use` on them can send their data to any host it names.
    #[arg(long, env = "TESSERA_EPHEMERAL_UNBOUND_TOKENS")]
    pub ephemeral_unbound_tokens: bool,
    /// Seconds to wait for a destination's response headers, from the start of the connect
    /// (504 after); more than 0, at most 3600.
    #[arg(long, env = "TESSERA_DESTINATION_TIMEOUT", default_value_t = 25.0,
          value_parser = REQUEST_TIMEOUT.parser())]
    pub destination_timeout: f64,
    /// Extra trusted CA certificate(s), PEM, for destinations on a private PKI.
    #[arg(long, env = "TESSERA_DESTINATION_CA_FILE")]
    pub destination_ca_file: Option<PathBuf>,
    /// Seconds that API-key and proxy-key lookups and the (encrypted) token rows detokenization
    /// reads are cached; changes made through other processes are obeyed within this. 0
    /// disables caching; at most 2.
    #[arg(long, env = "TESSERA_CACHE_TTL", default_value_t = 1.0)]
    pub cache_ttl: f64,
    /// Seconds the encrypted token rows detokenization reads are cached, when it should differ
    /// from --cache-ttl (default: --cache-ttl). 0 reads every token from storage; at most 2.
    #[arg(long, env = "TESSERA_TOKEN_CACHE_TTL")]
    pub token_cache_ttl: Option<f64>,
    /// Seconds one transform invocation may run (its runtime is discarded after); more than 0,
    /// at most 60.
    #[arg(long, env = "TESSERA_TRANSFORM_TIMEOUT", default_value_t = 2.0,
          value_parser = TRANSFORM_TIMEOUT.parser())]
    pub transform_timeout: f64,
    /// Where transforms run: `process` (the default on Linux), in sandbox processes that hold
    /// no key material, may not open files or sockets, and are killed when a transform
    /// outlives its time limit; or `inline`, on the thread serving the request: about 2.5 times
    /// the throughput, for single-organization deployments (a transform stuck in some native
    /// builtins holds its core past --transform-timeout, and a fault of the JavaScript engine
    /// would be inside the process that holds the keys). See docs/operations.md.
    #[arg(long, env = "TESSERA_TRANSFORM_ISOLATION", value_enum, default_value_t = DEFAULT_ISOLATION)]
    pub transform_isolation: TransformIsolation,
    /// Most sandbox processes per serving thread (process isolation).
    #[arg(long, env = "TESSERA_TRANSFORM_PROCESSES", default_value_t = 4)]
    pub transform_processes: usize,
    /// The executable sandbox processes run (process isolation); default: this binary, which
    /// becomes a sandbox when started with its hidden sandbox argument. The standalone
    /// `tessera-transform-sandbox` works too.
    #[arg(long, env = "TESSERA_TRANSFORM_SANDBOX")]
    pub transform_sandbox: Option<PathBuf>,
    /// `UID:GID` that sandbox processes switch to when the gateway runs as root (process
    /// isolation); never 0.
    #[arg(
        long,
        env = "TESSERA_TRANSFORM_SANDBOX_USER",
        default_value = "65534:65534"
    )]
    pub transform_sandbox_user: String,
    /// Memory one transform invocation may allocate, in MiB (1 to 4096).
    #[arg(long, env = "TESSERA_TRANSFORM_MEMORY_MB", default_value_t = 32,
          value_parser = parse_memory_mb)]
    pub transform_memory_mb: usize,
    /// Most distinct tokens one proxied request may detokenize.
    #[arg(long, env = "TESSERA_MAX_TOKENS_PER_REQUEST", default_value_t = 100)]
    pub max_tokens_per_request: usize,
    /// Requests per second allowed per application on the management API and per proxy on
    /// `/proxy`, in this process (429 with `Retry-After` above it). 0 (the default): no limit.
    #[arg(long, env = "TESSERA_RATE_LIMIT", default_value_t = 0.0)]
    pub rate_limit: f64,
    /// Requests allowed at once above `--rate-limit` after a quiet period (default: the rate,
    /// at least 1).
    #[arg(long, env = "TESSERA_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<f64>,
    /// The prefix of Tessera's own headers, the proxy-key query parameter and the transform
    /// client (`req.<prefix>` beside `req.svc`): `BT` lets clients built for Basis Theory send
    /// `BT-API-KEY`, `BT-PROXY-KEY`, `BT-IDEMPOTENCY-KEY`… unchanged. 2 to 16 letters and
    /// digits; names of standard header families (`X`, `CONTENT`, `SEC`…) are refused. Only
    /// the chosen names are read; `SVC-*` headers are still never forwarded. See
    /// docs/migrating.md.
    #[arg(long, env = "TESSERA_HEADER_PREFIX", default_value = "SVC",
          value_parser = HeaderNames::new)]
    pub header_prefix: HeaderNames,
}

impl GatewayArgs {
    /// Checks the values clap cannot, so that a bad flag stops the process before it touches
    /// the database.
    pub fn validate(&self) -> Result<(), InvalidFlag> {
        // The flags' parsers check these too; a `GatewayArgs` built in code is checked here,
        // before `config` turns them into durations.
        let timeouts = [
            (
                "--destination-timeout",
                self.destination_timeout,
                REQUEST_TIMEOUT,
            ),
            ("--body-timeout", self.body_timeout, REQUEST_TIMEOUT),
            (
                "--transform-timeout",
                self.transform_timeout,
                TRANSFORM_TIMEOUT,
            ),
        ];
        for (flag, secs, range) in timeouts {
            range
                .check(secs)
                .map_err(|e| InvalidFlag(format!("{flag} {e}").into()))?;
        }
        if !(0.0..=2.0).contains(&self.cache_ttl) {
            return Err(InvalidFlag(
                "--cache-ttl must be between 0 and 2 seconds".into(),
            ));
        }
        if self
            .token_cache_ttl
            .is_some_and(|ttl| !(0.0..=2.0).contains(&ttl))
        {
            return Err(InvalidFlag(
                "--token-cache-ttl must be between 0 and 2 seconds".into(),
            ));
        }
        if self.transform_processes == 0 {
            return Err(InvalidFlag(
                "--transform-processes must be at least 1".into(),
            ));
        }
        if self.sandbox_user().is_none() {
            return Err(InvalidFlag(
                "--transform-sandbox-user must be UID:GID, neither of them 0".into(),
            ));
        }
        self.rate_limit().map(|_| ())
    }

    /// `--transform-sandbox-user` as numbers, when valid.
    fn sandbox_user(&self) -> Option<(u32, u32)> {
        let (uid, gid) = self.transform_sandbox_user.split_once(':')?;
        let ids = (uid.trim().parse().ok()?, gid.trim().parse().ok()?);
        (ids.0 != 0 && ids.1 != 0).then_some(ids)
    }

    /// The configured rate limit, if any.
    pub fn rate_limit(&self) -> Result<Option<RateLimit>, InvalidFlag> {
        if self.rate_limit == 0.0 {
            return Ok(None);
        }
        let burst = self.rate_limit_burst.unwrap_or(self.rate_limit);
        match RateLimit::new(self.rate_limit, burst) {
            Some(limit) if burst.is_finite() && burst >= 0.0 => Ok(Some(limit)),
            _ => Err(InvalidFlag(
                "--rate-limit must be a positive number of requests per second (0 for none) and --rate-limit-burst a positive number".into(),
            )),
        }
    }

    /// The gateway's settings (call [`GatewayArgs::validate`] first).
    pub fn config(&self) -> GatewayConfig {
        GatewayConfig {
            max_body_bytes: self.max_body_bytes,
            max_tokens: self.max_tokens_per_request,
            max_rendered_bytes: self.max_rendered_bytes,
            body_timeout: Duration::from_secs_f64(self.body_timeout),
            client: ClientConfig {
                allow_private_destinations: self.allow_private_destinations,
                extra_ca_file: self.destination_ca_file.clone(),
                destination_timeout: Duration::from_secs_f64(self.destination_timeout),
                ..ClientConfig::default()
            },
            ephemeral_proxy: !self.no_ephemeral_proxy,
            ephemeral_unbound_tokens: self.ephemeral_unbound_tokens,
            names: self.header_prefix.clone(),
        }
    }

    /// The transform engine's settings. Process isolation runs `--transform-sandbox`, else
    /// this executable with the sandbox argument.
    pub fn engine_config(&self) -> std::io::Result<EngineConfig> {
        let (isolation, sandbox) = match self.transform_isolation {
            TransformIsolation::Inline => (Isolation::Inline, None),
            TransformIsolation::Process => {
                let command = match &self.transform_sandbox {
                    Some(program) => SandboxCommand {
                        program: program.clone(),
                        args: Vec::new(),
                    },
                    None => SandboxCommand::current_exe()?,
                };
                (Isolation::Process, Some(command))
            }
        };
        Ok(EngineConfig {
            isolation,
            sandbox,
            processes_per_thread: self.transform_processes,
            time_limit: Duration::from_secs_f64(self.transform_timeout),
            memory_limit: self.transform_memory_mb.max(1) * 1024 * 1024,
            client_alias: self.header_prefix.client_alias(),
            sandbox_user: self
                .sandbox_user()
                .unwrap_or(EngineConfig::default().sandbox_user),
            ..EngineConfig::default()
        })
    }

    /// The settings of these flags that weaken a protection, for the start-up warning and the
    /// `tessera_unsafe_setting` gauge ([`tessera_service::unsafe_settings::announce`]).
    pub fn unsafe_settings(&self) -> Vec<UnsafeSetting> {
        let mut settings = Vec::new();
        if self.allow_private_destinations {
            settings.push(UnsafeSetting {
                flag: "allow-private-destinations",
                consequence: "proxies may reach plain http and private, loopback and link-local addresses; for development and closed networks only, never on an internet-facing deployment",
            });
        }
        if self.ephemeral_unbound_tokens {
            settings.push(UnsafeSetting {
                flag: "ephemeral-unbound-tokens",
                consequence: "any key with token:use may send tokens without a destination binding to any host it names through an ephemeral proxy",
            });
        }
        settings
    }

    /// `vault` with the destination policy and cache lifetime these flags set (they govern
    /// the management API of the same process too).
    pub fn apply_to(&self, vault: Vault) -> Vault {
        vault
            .with_destination_policy(DestinationPolicy {
                allow_private_destinations: self.allow_private_destinations,
            })
            .with_cache_ttl(Duration::from_secs_f64(self.cache_ttl))
            .with_token_cache_ttl(Duration::from_secs_f64(
                self.token_cache_ttl.unwrap_or(self.cache_ttl),
            ))
    }
}

/// Why the gateway could not be built from its flags.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A flag value is out of range.
    #[error(transparent)]
    Flag(#[from] InvalidFlag),
    /// The outbound client could not be built (CA file, TLS).
    #[error(transparent)]
    Client(#[from] crate::client::ClientBuildError),
    /// The transform engine could not start.
    #[error("starting the transform engine: {0}")]
    Engine(#[from] tessera_transform_runtime::TransformError),
    /// The sandbox executable could not be found.
    #[error("finding the transform sandbox executable: {0}")]
    Sandbox(#[from] std::io::Error),
}

/// Most memory a transform invocation may be given, in MiB.
const MAX_TRANSFORM_MEMORY_MB: usize = 4096;

/// `--transform-memory-mb`: a whole number of MiB from 1 to [`MAX_TRANSFORM_MEMORY_MB`], so the
/// limit in bytes never overflows.
fn parse_memory_mb(raw: &str) -> Result<usize, String> {
    let mb: usize = raw
        .parse()
        .map_err(|_| format!("`{raw}` is not a whole number of MiB"))?;
    if (1..=MAX_TRANSFORM_MEMORY_MB).contains(&mb) {
        Ok(mb)
    } else {
        Err(format!("must be from 1 to {MAX_TRANSFORM_MEMORY_MB} MiB"))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{parse_memory_mb, GatewayArgs};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gateway: GatewayArgs,
    }

    fn validate(args: &[&str]) -> Result<(), String> {
        let cli = Cli::try_parse_from(std::iter::once("gateway").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.gateway.validate().map_err(|e| e.to_string())
    }

    /// Huge timeouts panicked at start-up (`Duration::from_secs_f64`) or on every request
    /// (`Instant + Duration`): the parsers refuse them, and anything not a positive number.
    #[test]
    fn transform_memory_is_bounded_when_parsed() {
        assert_eq!(parse_memory_mb("32"), Ok(32));
        assert_eq!(parse_memory_mb("4096"), Ok(4096));
        for bad in ["0", "4097", "18446744073709551615", "-1", "1.5", "lots"] {
            assert!(parse_memory_mb(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timeouts_are_bounded_when_parsed() {
        let cases = [
            ("--destination-timeout", "3600"),
            ("--body-timeout", "3600"),
            ("--transform-timeout", "60"),
        ];
        for (flag, max) in cases {
            assert_eq!(validate(&[flag, max]), Ok(()), "{flag}");
            assert_eq!(validate(&[flag, "0.5"]), Ok(()), "{flag}");
            let bound = format!("must be more than 0 and at most {max} seconds");
            for bad in [
                "0", "-1", "3600.5", "61", "1e19", "9.2e18", "NaN", "inf", "-inf",
            ] {
                if bad == "61" && max == "3600" {
                    continue;
                }
                let error = validate(&[&format!("{flag}={bad}")]).expect_err(bad);
                assert!(
                    error.contains(&format!("invalid value '{bad}' for '{flag}"))
                        && error.contains(&bound),
                    "{flag}={bad}: {error}"
                );
            }
            let error = validate(&[flag, "soon"]).expect_err("not a number");
            assert!(
                error.contains("`soon` is not a number of seconds"),
                "{error}"
            );
        }
    }

    /// Arguments built in code, past the parsers, are checked by `validate`.
    #[test]
    fn validate_bounds_timeouts_set_in_code() {
        let mut cli = Cli::try_parse_from(["gateway"]).expect("defaults");
        cli.gateway.destination_timeout = 1e19;
        assert_eq!(
            cli.gateway.validate().map_err(|e| e.to_string()),
            Err("--destination-timeout must be more than 0 and at most 3600 seconds".to_string())
        );
        cli.gateway.destination_timeout = 25.0;
        cli.gateway.transform_timeout = f64::NAN;
        assert_eq!(
            cli.gateway.validate().map_err(|e| e.to_string()),
            Err("--transform-timeout must be more than 0 and at most 60 seconds".to_string())
        );
    }

    #[test]
    fn the_token_cache_ttl_defaults_to_the_cache_ttl_and_is_bounded_like_it() {
        assert_eq!(validate(&[]), Ok(()));
        assert_eq!(validate(&["--token-cache-ttl", "0"]), Ok(()));
        assert_eq!(validate(&["--token-cache-ttl", "2"]), Ok(()));
        for bad in ["2.5", "-1", "NaN"] {
            assert_eq!(
                validate(&[&format!("--token-cache-ttl={bad}")]),
                Err("--token-cache-ttl must be between 0 and 2 seconds".to_string()),
                "{bad}"
            );
        }
        assert_eq!(
            validate(&["--cache-ttl", "3"]),
            Err("--cache-ttl must be between 0 and 2 seconds".to_string())
        );
    }
}
