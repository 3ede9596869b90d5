//! Listening sockets, bound before anything else happens.
//!
//! `api serve` binds every port it will answer on before it opens the database: a port that is
//! taken then stops start-up before a database, a master key or a bootstrap tenant is created
//! (docs/operations.md, "Start-up"). The sockets are made as actix-web makes its own
//! (`SO_REUSEADDR`, a deep backlog) and handed to the servers with `listen`.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

/// Pending connections the kernel may queue per listener (actix-web's default).
const BACKLOG: i32 = 2048;

/// Why a socket could not be bound: names the address and the flag that chooses it.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} ({hint}): {source}")]
pub struct BindError {
    /// The address asked for.
    pub addr: SocketAddr,
    /// What to do about it (`choose another with --listen`).
    pub hint: &'static str,
    /// The operating system's answer (`Address already in use`).
    #[source]
    pub source: std::io::Error,
}

/// A listening TCP socket on `addr`; `hint` tells the operator which flag moves it.
pub fn bind(addr: SocketAddr, hint: &'static str) -> Result<TcpListener, BindError> {
    let fail = |source| BindError { addr, hint, source };
    let socket =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(fail)?;
    #[cfg(unix)]
    socket.set_reuse_address(true).map_err(fail)?;
    socket.bind(&addr.into()).map_err(fail)?;
    socket.listen(BACKLOG).map_err(fail)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_names_the_address_the_flag_and_the_cause() {
        let first = bind(
            "127.0.0.1:0".parse().expect("address"),
            "choose another with --listen",
        )
        .expect("a free port");
        let addr = first.local_addr().expect("address");
        let err = bind(addr, "choose another with --listen").expect_err("the port is taken");
        let text = err.to_string();
        assert!(text.contains(&addr.to_string()), "{text}");
        assert!(text.contains("--listen"), "{text}");
        assert_eq!(err.source.kind(), std::io::ErrorKind::AddrInUse, "{text}");
    }
}
