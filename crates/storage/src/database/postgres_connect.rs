//! A PostgreSQL URL made into connections. libpq's TLS parameters (`sslmode`, `sslrootcert`)
//! are taken out of the URL and applied with rustls ([`super::tls`]); the rest of the URL is
//! tokio-postgres's to read. See docs/operations.md, "TLS to the database".

use std::str::FromStr;

use diesel::{ConnectionError, ConnectionResult};
use diesel_async::AsyncPgConnection;
use percent_encoding::percent_decode_str;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::tls::{self, RootCerts, SslMode, TlsError};

/// The libpq parameters naming client certificates and revocation lists, which Tessera does
/// not implement: refused rather than silently ignored.
const UNSUPPORTED: [&str; 5] = ["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir"];

/// A PostgreSQL URL's TLS parameters, and the URL without them.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PgUrl {
    /// The URL without `sslmode` and `sslrootcert`.
    rest: String,
    /// `sslmode` (libpq's default: `prefer`).
    pub(crate) mode: SslMode,
    /// `sslrootcert`, if given.
    pub(crate) roots: Option<RootCerts>,
}

/// What is wrong with a PostgreSQL URL.
#[derive(Debug, thiserror::Error)]
pub enum PgUrlError {
    /// Not a URL at all.
    #[error("{0}")]
    Url(#[from] ::url::ParseError),
    /// A TLS parameter that cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// tokio-postgres cannot read the rest.
    #[error("{0}")]
    Config(String),
}

impl PgUrl {
    /// Splits `url`'s TLS parameters from the rest and checks the rest.
    pub(crate) fn parse(url: &str) -> Result<Self, PgUrlError> {
        let mut parsed = ::url::Url::parse(url)?;
        let mut mode = SslMode::Prefer;
        let mut roots = None;
        // The other parameters stay byte for byte as written: tokio-postgres reads them.
        let mut kept = Vec::new();
        for pair in parsed
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode_str(raw_key).decode_utf8_lossy();
            let value = percent_decode_str(raw_value).decode_utf8_lossy();
            match key.as_ref() {
                "sslmode" => mode = SslMode::parse(&value)?,
                "sslrootcert" if value == "system" => roots = Some(RootCerts::System),
                "sslrootcert" => roots = Some(RootCerts::File(value.as_ref().into())),
                other if UNSUPPORTED.contains(&other) => {
                    return Err(TlsError::Unsupported(other.to_string()).into())
                }
                _ => kept.push(pair.to_string()),
            }
        }
        parsed.set_query((!kept.is_empty()).then(|| kept.join("&")).as_deref());
        let rest = parsed.to_string();
        tokio_postgres::Config::from_str(&rest).map_err(|e| PgUrlError::Config(error_chain(&e)))?;
        Ok(Self { rest, mode, roots })
    }
}

/// Makes connections to one PostgreSQL server, with the TLS its URL asks for; built once
/// per database (it holds the loaded root certificates).
#[derive(Clone)]
pub(crate) struct PgConnector {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
}

impl PgConnector {
    /// The connector for `url`; reads `sslrootcert`'s file (or the system's store) now.
    pub(crate) fn new(url: &str) -> Result<Self, PgUrlError> {
        let url = PgUrl::parse(url)?;
        let mut config = tokio_postgres::Config::from_str(&url.rest)
            .map_err(|e| PgUrlError::Config(error_chain(&e)))?;
        config.ssl_mode(match url.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        let client = tls::client_config(url.mode, url.roots.as_ref())?;
        Ok(Self {
            config,
            tls: MakeRustlsConnect::new(client),
        })
    }

    /// A new connection, encrypted and checked as the URL asks.
    pub(crate) async fn connect(&self) -> ConnectionResult<AsyncPgConnection> {
        let (client, connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(|e| ConnectionError::BadConnection(error_chain(&e)))?;
        AsyncPgConnection::try_from_client_and_connection(client, connection).await
    }

    /// The TLS connector, for a cancel request (which opens a connection of its own).
    pub(crate) fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }
}

/// One connection to the PostgreSQL server at `url`, outside any pool, with the URL's TLS:
/// for tools and tests that run SQL of their own.
pub async fn postgres_connection(
    url: &str,
) -> Result<AsyncPgConnection, tessera_domain::store::StoreError> {
    let unavailable =
        |e: &dyn std::fmt::Display| tessera_domain::store::StoreError::Unavailable(e.to_string());
    PgConnector::new(url)
        .map_err(|e| unavailable(&e))?
        .connect()
        .await
        .map_err(|e| unavailable(&e))
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The rest may hold a password: only the TLS parameters are shown.
        f.debug_struct("PgUrl")
            .field("mode", &self.mode)
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PgConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // tokio-postgres's Config hides its password in Debug.
        f.debug_struct("PgConnector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// `e` and its causes on one line (`error performing TLS handshake: invalid peer
/// certificate: UnknownIssuer`).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_leave_the_url_and_the_rest_stays() {
        let url = PgUrl::parse(
            "postgres://u:pw@db:5432/t?options=-c%20x%3D1+2&sslmode=verify-full&sslrootcert=/etc/c%20a.pem",
        )
        .expect("parses");
        assert_eq!(url.mode, SslMode::VerifyFull);
        assert_eq!(url.roots, Some(RootCerts::File("/etc/c a.pem".into())));
        assert_eq!(url.rest, "postgres://u:pw@db:5432/t?options=-c%20x%3D1+2");
        let plain = PgUrl::parse("postgres://u@db/t").expect("parses");
        assert_eq!((plain.mode, plain.roots), (SslMode::Prefer, None));
        let system = PgUrl::parse("postgres://u@db/t?sslrootcert=system").expect("parses");
        assert_eq!(system.roots, Some(RootCerts::System));
    }

    #[test]
    fn debug_never_shows_the_password() {
        let url = "postgres://u:hunter2@db/t?sslmode=require";
        let connector = PgConnector::new(url).expect("connector");
        let shown = format!("{connector:?} {:?}", PgUrl::parse(url).expect("url"));
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn unknown_modes_and_client_certificates_are_refused() {
        let error = PgUrl::parse("postgres://u@db/t?sslmode=verify").expect_err("mode");
        assert!(error.to_string().contains("sslmode=verify"), "{error}");
        let error = PgUrl::parse("postgres://u@db/t?sslcert=/c.pem").expect_err("cert");
        assert!(error.to_string().contains("sslcert"), "{error}");
        let error = PgUrl::parse("postgres://u@db/t?nosuch=1").expect_err("option");
        assert!(error.to_string().contains("nosuch"), "{error}");
    }
}
