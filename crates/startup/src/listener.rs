//! Listening sockets, bound before anything else happens and listening only once the process
//! can serve.
//!
//! `api serve` binds every port it will answer on before it opens the database: a port that is
//! taken then stops start-up before a database, a master key or a bootstrap tenant is created
//! (docs/operations.md, "Start-up"). A bound socket that does not listen yet accepts no
//! connection, so while migrations run a client is refused at once rather than left waiting,
//! and a TCP health check does not pass early. The sockets are made as actix-server makes its
//! own (`SO_REUSEADDR`, no `SO_REUSEPORT`: a second process on the port is refused) and handed
//! to the servers.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

/// Pending connections the kernel may queue per listener (as actix-server's builder sets).
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

/// A socket bound to its address, not yet listening.
#[derive(Debug)]
pub struct Bound {
    socket: Socket,
    addr: SocketAddr,
    hint: &'static str,
}

/// A TCP socket bound to `addr`, not listening yet; `hint` tells the operator which flag moves
/// it.
pub fn bind(addr: SocketAddr, hint: &'static str) -> Result<Bound, BindError> {
    let fail = |source| BindError { addr, hint, source };
    let socket =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(fail)?;
    #[cfg(unix)]
    socket.set_reuse_address(true).map_err(fail)?;
    socket.bind(&addr.into()).map_err(fail)?;
    Ok(Bound { socket, addr, hint })
}

impl Bound {
    /// Starts listening: connections are accepted into the backlog from now on.
    pub fn listen(self) -> Result<TcpListener, BindError> {
        let (addr, hint) = (self.addr, self.hint);
        self.socket
            .listen(BACKLOG)
            .map_err(|source| BindError { addr, hint, source })?;
        Ok(self.socket.into())
    }
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
        .expect("a free port")
        .listen()
        .expect("listening");
        let addr = first.local_addr().expect("address");
        let err = bind(addr, "choose another with --listen").expect_err("the port is taken");
        let text = err.to_string();
        assert!(text.contains(&addr.to_string()), "{text}");
        assert!(text.contains("--listen"), "{text}");
        assert_eq!(err.source.kind(), std::io::ErrorKind::AddrInUse, "{text}");
    }

    #[test]
    fn a_bound_socket_refuses_connections_until_it_listens() {
        let bound = bind("127.0.0.1:0".parse().expect("address"), "--listen").expect("bound");
        let addr = bound
            .socket
            .local_addr()
            .expect("address")
            .as_socket()
            .expect("inet");
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "refused while not listening"
        );
        let listener = bound.listen().expect("listening");
        assert!(std::net::TcpStream::connect(addr).is_ok());
        drop(listener);
    }
}
