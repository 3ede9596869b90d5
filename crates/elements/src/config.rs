//! The hosted fields' settings and the `api serve` flags that set them.

use std::net::SocketAddr;

use tessera_domain::origin::Origin;

/// What the frame needs to know about its surroundings.
#[derive(Debug, Clone)]
pub struct ElementsConfig {
    /// The API origin the frame sends cards to: written into the frame's `connect-src`, and
    /// never taken from the page that embeds it.
    pub api_origin: Origin,
    /// The header the API key travels in (`<PREFIX>-API-KEY`).
    pub api_key_header: String,
}

/// The hosted fields' flags of `api serve`; each also reads `TESSERA_<FLAG>`.
#[derive(Debug, Clone, clap::Args)]
pub struct ElementsArgs {
    /// Do not serve the hosted card fields (`/elements/v1/` on the console's listener).
    #[arg(long, env = "TESSERA_NO_ELEMENTS")]
    pub no_elements: bool,
    /// The API's origin as browsers reach it (`https://vault.example`): the only place the
    /// hosted fields' frame may send a card. Default: `http://` and the `--listen` address
    /// (loopback when it listens on every interface), for development.
    #[arg(long, env = "TESSERA_ELEMENTS_API_ORIGIN", value_parser = parse_origin)]
    pub elements_api_origin: Option<Origin>,
    /// The hosted fields' own origin as browsers reach it (the console listener's,
    /// `https://fields.vault.example`): the API lets the frame on it create tokens with any
    /// public key. Default: `http://` and the `--console-listen` address.
    #[arg(long, env = "TESSERA_ELEMENTS_ORIGIN", value_parser = parse_origin)]
    pub elements_origin: Option<Origin>,
}

fn parse_origin(raw: &str) -> Result<Origin, String> {
    Origin::parse(raw).map_err(|why| format!("`{raw}`: {why}"))
}

impl ElementsArgs {
    /// The frame's settings when the API listens on `api_listen` and the fields are served on
    /// `console_listen`, with the fields' own origin (which the API allows for every public
    /// key). `None` with `--no-elements`, and when an origin is neither given nor derivable:
    /// a listener on an address other than loopback is reached by browsers over `https`, at a
    /// name only the operator knows.
    pub fn setup(
        &self,
        api_listen: SocketAddr,
        console_listen: SocketAddr,
        api_key_header: &str,
    ) -> Option<(ElementsConfig, Origin)> {
        if self.no_elements {
            return None;
        }
        let api_origin = self
            .elements_api_origin
            .clone()
            .or_else(|| Origin::loopback_for(api_listen));
        let frame_origin = self
            .elements_origin
            .clone()
            .or_else(|| Origin::loopback_for(console_listen));
        let (Some(api_origin), Some(frame_origin)) = (api_origin, frame_origin) else {
            tracing::warn!(
                "the hosted card fields are off: set --elements-api-origin and --elements-origin to the https origins browsers reach the API and the console at"
            );
            return None;
        };
        let config = ElementsConfig {
            api_origin,
            api_key_header: api_key_header.to_string(),
        };
        Some((config, frame_origin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ElementsArgs {
        ElementsArgs {
            no_elements: false,
            elements_api_origin: None,
            elements_origin: None,
        }
    }

    fn addr(raw: &str) -> SocketAddr {
        raw.parse().expect("addr")
    }

    #[test]
    fn defaults_are_the_listeners_over_loopback() {
        let (config, frame) = args()
            .setup(addr("0.0.0.0:8080"), addr("127.0.0.1:8082"), "svc-api-key")
            .expect("on");
        assert_eq!(config.api_origin.as_str(), "http://127.0.0.1:8080");
        assert_eq!(frame.as_str(), "http://127.0.0.1:8082");
        let off = ElementsArgs {
            no_elements: true,
            ..args()
        };
        assert!(off
            .setup(addr("127.0.0.1:1"), addr("127.0.0.1:2"), "k")
            .is_none());
    }

    #[test]
    fn a_listener_on_another_address_needs_its_origin_given() {
        let lan = addr("10.0.0.5:8080");
        assert!(
            args().setup(lan, addr("127.0.0.1:8082"), "k").is_none(),
            "off, not a panic"
        );
        let given = ElementsArgs {
            elements_api_origin: Some(Origin::parse("https://vault.example").expect("origin")),
            elements_origin: Some(Origin::parse("https://fields.example").expect("origin")),
            ..args()
        };
        let (config, frame) = given.setup(lan, addr("10.0.0.5:8082"), "k").expect("on");
        assert_eq!(config.api_origin.as_str(), "https://vault.example");
        assert_eq!(frame.as_str(), "https://fields.example");
    }

    #[test]
    fn origins_are_checked_at_start_up() {
        assert!(parse_origin("https://vault.example").is_ok());
        assert!(parse_origin("https://vault.example/api").is_err());
        assert!(parse_origin("http://vault.example").is_err());
    }
}
