//! The binaries together, one test binary: `api` and `proxy-gateway` as processes on one
//! database.

mod processes;
