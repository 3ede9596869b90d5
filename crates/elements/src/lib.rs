//! # tessera-elements
//!
//! Hosted card fields: a merchant's checkout page embeds Tessera's iframes, a person types a
//! card into them, and the page gets back a token id. The card never reaches the page's
//! scripts or the merchant's servers (docs/elements.md).
//!
//! ```text
//!   merchant page ── tessera-elements.js (the library, pinned by its SRI hash)
//!        │  creates <iframe src=".../elements/v1/frame.html?key=…&origin=…&field=…">
//!        ▼
//!   frame.html (this origin; CSP: our scripts only, connect-src = the configured API,
//!        │      frame-ancestors = the embedding origin, if the key's application lists it)
//!        │  frame.js validates as the person types, talks to the page by postMessage
//!        │  (exact origins, no digit of the value), and itself sends
//!        ▼
//!   POST {api}/tokens with the public key ─► the token, without data, to the page
//! ```
//!
//! Served on the console's listener, never on the origin of `/proxy`: a script on that origin
//! (a destination's answer) could otherwise register a service worker over the frame.

mod assets;
mod config;
mod frame;
mod markup;

use actix_web::web;
use tessera_domain::Vault;

pub use assets::{library_integrity, LIBRARY};
pub use config::{ElementsArgs, ElementsConfig};

/// Where the fields are served; the version is part of every path, so that a page pinning
/// the library's hash keeps getting the same file.
pub const MOUNT: &str = "/elements/v1";

/// The hosted fields: what their routes share.
#[derive(Debug, Clone)]
pub struct Elements {
    vault: web::Data<Vault>,
    config: web::Data<ElementsConfig>,
}

impl Elements {
    /// The fields over `vault` (to check the public keys that frames are loaded with).
    pub fn new(vault: Vault, config: ElementsConfig) -> Self {
        Self {
            vault: web::Data::new(vault),
            config: web::Data::new(config),
        }
    }

    /// Registers `/elements/v1/*`.
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::scope(MOUNT)
                .app_data(self.vault.clone())
                .app_data(self.config.clone())
                .service(
                    web::resource("/tessera-elements.js")
                        .wrap(assets::public_cors())
                        .route(web::get().to(assets::library)),
                )
                .service(
                    web::resource("/config.json")
                        .wrap(assets::public_cors())
                        .route(web::get().to(assets::config)),
                )
                .route("/frame.html", web::get().to(frame::frame))
                .route("/{name}", web::get().to(assets::serve)),
        );
    }
}
