//! The stylesheet, script and icon, compiled into the binary (`include_bytes!`): the console
//! loads nothing from any other host, and no build step beyond `cargo build` makes them.

use actix_web::{web, HttpResponse};

/// `(name, content type, bytes)` of every asset.
const ASSETS: [(&str, &str, &[u8]); 3] = [
    (
        "console.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/console.css"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/console.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../assets/favicon.svg"),
    ),
];

/// `GET /console/assets/{name}`: the asset, or 404. Like every console response it carries
/// `Cache-Control: no-store` (set by the security middleware): the files are small.
pub(crate) async fn serve(name: web::Path<String>) -> HttpResponse {
    match ASSETS.iter().find(|(n, _, _)| *n == name.as_str()) {
        Some((_, content_type, bytes)) => {
            HttpResponse::Ok().content_type(*content_type).body(*bytes)
        }
        None => crate::views::errors::status_page(actix_web::http::StatusCode::NOT_FOUND),
    }
}
