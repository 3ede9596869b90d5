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
    /// The frame's settings when the API listens on `api_listen`; `None` with
    /// `--no-elements`.
    pub fn config(&self, api_listen: SocketAddr, api_key_header: &str) -> Option<ElementsConfig> {
        if self.no_elements {
            return None;
        }
        Some(ElementsConfig {
            api_origin: self
                .elements_api_origin
                .clone()
                .unwrap_or_else(|| loopback_origin(api_listen)),
            api_key_header: api_key_header.to_string(),
        })
    }

    /// The origin the API allows for the frame, when the fields are served from the console
    /// listener at `console_listen`.
    pub fn frame_origin(&self, console_listen: SocketAddr) -> Option<Origin> {
        if self.no_elements {
            return None;
        }
        Some(
            self.elements_origin
                .clone()
                .unwrap_or_else(|| loopback_origin(console_listen)),
        )
    }
}

/// `http://` and the address a browser on this machine reaches `listen` at.
fn loopback_origin(listen: SocketAddr) -> Origin {
    let ip = match listen.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    let raw = format!("http://{}", SocketAddr::new(ip, listen.port()));
    // A loopback address with a port is always an origin.
    Origin::parse(&raw).unwrap_or_else(|_| unreachable!("`{raw}` is an origin"))
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

    #[test]
    fn defaults_are_the_listeners_over_loopback() {
        let config = args()
            .config("0.0.0.0:8080".parse().expect("addr"), "svc-api-key")
            .expect("on");
        assert_eq!(config.api_origin.as_str(), "http://127.0.0.1:8080");
        let frame = args().frame_origin("127.0.0.1:8082".parse().expect("addr"));
        assert_eq!(frame.expect("on").as_str(), "http://127.0.0.1:8082");
        let off = ElementsArgs {
            no_elements: true,
            ..args()
        };
        assert!(off
            .config("127.0.0.1:1".parse().expect("addr"), "k")
            .is_none());
    }

    #[test]
    fn origins_are_checked_at_start_up() {
        assert!(parse_origin("https://vault.example").is_ok());
        assert!(parse_origin("https://vault.example/api").is_err());
        assert!(parse_origin("http://vault.example").is_err());
    }
}
