//! The library, the frame's script and stylesheet (compiled into the binary: committed,
//! reviewed, no build step), and the small configuration document the library reads.

use actix_web::{http::header, web, HttpResponse};
use base64::Engine;
use sha2::{Digest, Sha384};

use crate::config::ElementsConfig;

/// The library merchant pages load: `window.TesseraElements`.
pub const LIBRARY: &str = include_str!("../assets/tessera-elements.js");
const FRAME_JS: &str = include_str!("../assets/frame.js");
const FRAME_CSS: &str = include_str!("../assets/frame.css");

/// The library's Subresource Integrity value (`sha384-…`), as docs/elements.md publishes it.
pub fn library_integrity() -> String {
    let digest = Sha384::digest(LIBRARY.as_bytes());
    format!(
        "sha384-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// `GET /elements/v1/tessera-elements.js`: the library, readable by any page (see
/// [`public_cors`]).
pub(crate) async fn library() -> HttpResponse {
    static_file(LIBRARY, "text/javascript; charset=utf-8")
}

/// `GET /elements/v1/{name}`: the frame's script and stylesheet, or 404.
pub(crate) async fn serve(name: web::Path<String>) -> HttpResponse {
    match name.as_str() {
        "frame.js" => static_file(FRAME_JS, "text/javascript; charset=utf-8"),
        "frame.css" => static_file(FRAME_CSS, "text/css; charset=utf-8"),
        _ => HttpResponse::NotFound().finish(),
    }
}

fn static_file(body: &'static str, content_type: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("x-content-type-options", "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(body)
}

/// `GET /elements/v1/config.json`: the API origin the frame sends cards to, so that
/// `TesseraElements.init` can check that its `baseUrl` is that one.
pub(crate) async fn config(config: web::Data<ElementsConfig>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(serde_json::json!({ "api_origin": config.api_origin.as_str() }))
}

/// CORS for the library and its configuration: public files any page may read (a
/// `<script integrity=… crossorigin>` needs a CORS answer), for `GET` only and never with
/// credentials.
pub(crate) fn public_cors() -> actix_cors::Cors {
    actix_cors::Cors::default()
        .allow_any_origin()
        .allowed_methods(["GET"])
        .max_age(600)
}
