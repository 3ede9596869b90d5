//! Webhooks in the `api` process (docs/webhooks.md): the deliverer `serve` runs, sending
//! through the gateway's outbound client (its SSRF guard checks each address at connect
//! time, as for proxies), its figures on `/metrics`, and `api webhooks rotate-signing-key`.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use prometheus::proto::MetricFamily;
use tessera_domain::Vault;
use tessera_gateway::{client::SendError, ClientConfig, OutboundClient};
use tessera_service::metrics::{gauge_family, Family};
use tessera_webhooks::{
    Deliverer, DelivererConfig, DeliveryStats, Outgoing, Policy, Running, SendFailure, Transport,
};

use crate::cli::{ServeArgs, WebhooksCommand};

/// Sends deliveries with the gateway's outbound client.
#[derive(Debug)]
struct GatewayTransport(OutboundClient);

#[async_trait::async_trait]
impl Transport for GatewayTransport {
    async fn post(&self, request: Outgoing) -> Result<u16, SendFailure> {
        let mut builder = http::Request::post(&request.url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let req = builder
            .body(Full::new(Bytes::from(request.body)))
            .map_err(|_| SendFailure::Invalid)?;
        match self.0.send(req).await {
            // The answer's body is dropped unread.
            Ok(response) => Ok(response.status().as_u16()),
            Err(SendError::Blocked | SendError::InsecureScheme) => Err(SendFailure::Blocked),
            Err(SendError::Timeout) => Err(SendFailure::Timeout),
            Err(SendError::Unreachable(_)) => Err(SendFailure::Unreachable),
        }
    }
}

/// Starts this process's deliverer, unless `--no-webhooks` or the trail records nothing, and
/// puts its figures on `/metrics`.
pub(crate) fn start(
    args: &ServeArgs,
    vault: &Vault,
    database: &tessera_startup::Database,
    registry: &tessera_service::metrics::Registry,
) -> anyhow::Result<Option<Running>> {
    if args.webhooks.no_webhooks || !vault.audit().is_on() {
        return Ok(None);
    }
    let w = &args.webhooks;
    // A lease must outlast an attempt: renewed every third of it between sends, it then never
    // lapses while an attempt is in flight.
    anyhow::ensure!(
        w.webhook_lease_seconds >= 2 * w.webhook_timeout,
        "--webhook-lease-seconds ({}) must be at least twice --webhook-timeout ({})",
        w.webhook_lease_seconds,
        w.webhook_timeout
    );
    let gateway = args.gateway.config();
    let timeout = Duration::from_secs(w.webhook_timeout);
    let client = OutboundClient::new(ClientConfig {
        allow_private_destinations: gateway.client.allow_private_destinations,
        extra_ca_file: gateway.client.extra_ca_file.clone(),
        connect_timeout: timeout.min(Duration::from_secs(5)),
        destination_timeout: timeout,
    })
    .context("building the webhook client")?;
    let config = DelivererConfig {
        lease: Duration::from_secs(w.webhook_lease_seconds),
        policy: Policy {
            disable_after: Duration::from_secs(w.webhook_disable_after),
        },
        ..DelivererConfig::default()
    };
    let deliverer = Deliverer::new(
        vault.clone(),
        Arc::new(database.clone()),
        Arc::new(database.clone()),
        Arc::new(GatewayTransport(client)),
        args.gateway.header_prefix.prefix(),
    )
    .allowing_private_destinations(gateway.client.allow_private_destinations)
    .with_config(config);
    registry.register(Arc::new(WebhookMetrics(deliverer.stats())));
    Ok(Some(deliverer.spawn()))
}

/// How long shutdown waits for deliveries in flight: one attempt, and a little.
pub(crate) fn stop_within(args: &ServeArgs) -> Duration {
    Duration::from_secs(args.webhooks.webhook_timeout + 2)
}

/// Refuses to serve webhooks that nothing would deliver: enabled webhooks exist and the trail
/// records nothing (`--audit-durability off`), so their events would be lost.
pub(crate) async fn check_fed(
    vault: &Vault,
    database: &tessera_startup::Database,
) -> anyhow::Result<()> {
    use tessera_domain::store::WebhookStore;
    if vault.audit().is_on() {
        return Ok(());
    }
    let enabled = database.enabled_webhooks().await?;
    anyhow::ensure!(
        enabled.is_empty(),
        "{} webhooks are enabled, and --audit-durability off records no events for them: \
         disable or delete them, or record the trail",
        enabled.len()
    );
    Ok(())
}

/// `tessera_webhook_deliveries`, `tessera_webhook_failures` and `tessera_webhook_lag_events`
/// per webhook this process has delivered, and `tessera_webhooks_delivering`.
pub(crate) struct WebhookMetrics(pub(crate) DeliveryStats);

impl Family for WebhookMetrics {
    fn families(&self) -> Vec<MetricFamily> {
        let snapshot = self.0.snapshot();
        let ids: Vec<String> = snapshot.iter().map(|(id, _)| id.to_string()).collect();
        let per = |f: fn(&tessera_webhooks::HookFigures) -> f64| -> Vec<(Vec<&str>, f64)> {
            ids.iter()
                .zip(&snapshot)
                .map(|(id, (_, figures))| (vec![id.as_str()], f(figures)))
                .collect()
        };
        let held = snapshot.iter().filter(|(_, f)| f.held).count();
        vec![
            gauge_family(
                "tessera_webhook_deliveries",
                "Events this process delivered to the webhook (answered 2xx), since it started.",
                &["webhook"],
                &per(|f| f.delivered as f64),
            ),
            gauge_family(
                "tessera_webhook_failures",
                "Delivery attempts to the webhook that failed in this process, since it started.",
                &["webhook"],
                &per(|f| f.failed as f64),
            ),
            gauge_family(
                "tessera_webhook_lag_events",
                "Events of the tenant's audit chain after the webhook's cursor, when last looked at.",
                &["webhook"],
                &per(|f| f.lag as f64),
            ),
            gauge_family(
                "tessera_webhooks_delivering",
                "Webhooks this process delivers now (holds the lease of).",
                &[],
                &[(vec![], held as f64)],
            ),
        ]
    }
}

/// Runs one `webhooks` command.
pub(crate) async fn run(command: WebhooksCommand) -> anyhow::Result<()> {
    match command {
        WebhooksCommand::RotateSigningKey { overlap_hours, db } => {
            let vault = crate::open_recording(&db).await?;
            let overlap = time::Duration::hours(i64::from(overlap_hours));
            let key = vault
                .rotate_webhook_signing_key(overlap)
                .await
                .context("publishing a new webhook signing key")?;
            println!(
                "{}",
                serde_json::json!({
                    "version": key.version,
                    "activates_at": tessera_domain::timestamp::format(key.activates_at),
                    "public_key": key.public_pem,
                })
            );
            Ok(())
        }
    }
}
