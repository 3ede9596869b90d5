//! Database URLs: `sqlite://PATH` or `postgres://…`.

use std::{fmt, path::PathBuf, str::FromStr};

/// Where the data lives.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// An embedded SQLite file.
    Sqlite {
        /// Path of the database file (created with its directory if missing).
        path: PathBuf,
    },
    /// A PostgreSQL server.
    Postgres {
        /// The connection URL as given (may hold a password: print with `Display`, which hides it).
        url: String,
    },
}

/// The URL names no supported database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseUrlError {
    /// Neither `sqlite:` nor `postgres:`/`postgresql:`.
    #[error("unsupported database URL; use sqlite://PATH or postgres://USER@HOST:PORT/DB")]
    Scheme,
    /// `sqlite://` with no path.
    #[error("the sqlite URL names no file; use sqlite://PATH")]
    EmptyPath,
    /// A `postgres://` URL that does not parse, or whose TLS parameters cannot be used
    /// (docs/operations.md, "TLS to the database").
    #[error("the postgres URL is malformed: {0}")]
    Malformed(String),
}

impl FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s
            .strip_prefix("sqlite://")
            .or_else(|| s.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err(DatabaseUrlError::EmptyPath);
            }
            return Ok(DatabaseUrl::Sqlite {
                path: PathBuf::from(path),
            });
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            crate::database::PgUrl::parse(s)
                .map_err(|e| DatabaseUrlError::Malformed(e.to_string()))?;
            return Ok(DatabaseUrl::Postgres { url: s.to_string() });
        }
        Err(DatabaseUrlError::Scheme)
    }
}

/// Prints the URL with any password replaced by `***`, so it is safe to log.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseUrl::Sqlite { path } => write!(f, "sqlite://{}", path.display()),
            DatabaseUrl::Postgres { url } => match ::url::Url::parse(url) {
                Ok(mut parsed) => {
                    if parsed.password().is_some() {
                        let _ = parsed.set_password(Some("***"));
                    }
                    write!(f, "{parsed}")
                }
                Err(_) => f.write_str("postgres://(unparseable)"),
            },
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_schemes() {
        assert_eq!(
            "sqlite://./data/t.db".parse::<DatabaseUrl>(),
            Ok(DatabaseUrl::Sqlite {
                path: "./data/t.db".into()
            })
        );
        assert!(matches!(
            "postgres://u@h/db".parse::<DatabaseUrl>(),
            Ok(DatabaseUrl::Postgres { .. })
        ));
        assert_eq!(
            "mysql://x".parse::<DatabaseUrl>(),
            Err(DatabaseUrlError::Scheme)
        );
        assert_eq!(
            "sqlite://".parse::<DatabaseUrl>(),
            Err(DatabaseUrlError::EmptyPath)
        );
        assert!(matches!(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem".parse::<DatabaseUrl>(),
            Ok(DatabaseUrl::Postgres { .. })
        ));
        assert!(matches!(
            "postgres://u@h/db?sslmode=on".parse::<DatabaseUrl>(),
            Err(DatabaseUrlError::Malformed(m)) if m.contains("sslmode=on")
        ));
    }

    #[test]
    fn display_hides_the_password() {
        let url: DatabaseUrl = "postgres://user:hunter2@db:5432/tessera"
            .parse()
            .expect("url");
        let shown = url.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("user:***@db:5432/tessera"), "{shown}");
        assert!(!format!("{url:?}").contains("hunter2"));
    }
}
