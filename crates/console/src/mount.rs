//! Where the console is mounted and what its cookies are called.

/// Where the console is mounted.
pub const MOUNT: &str = "/console";

/// The session cookie's name (`__Host-` before it over TLS).
pub const SESSION_COOKIE: &str = "tessera_console";

/// The cookie that carries the sign-in form's CSRF token before a session exists (`__Host-`
/// before it over TLS).
pub const SIGN_IN_COOKIE: &str = "tessera_console_signin";
