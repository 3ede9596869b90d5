//! `api data-keys rotate|status|retire` (docs/operations.md, "Rotating data keys"): each opens
//! the vault with the default audit trail (sync), so each step is committed to the tenant's
//! chain as it happens.

use std::time::Duration;

use anyhow::Context;
use serde_json::{json, Value};
use tessera_domain::{DataKeyStatus, JobSettings, TenantId, Vault};

use crate::cli::DataKeysCommand;

/// Runs one `data-keys` command.
pub(crate) async fn run(command: DataKeysCommand) -> anyhow::Result<()> {
    match command {
        DataKeysCommand::Rotate {
            tenant,
            all: _,
            rows_per_second,
            lease_seconds,
            db,
        } => {
            let vault = crate::open_recording(&db).await?;
            let tenants = match tenant {
                Some(tenant) => vec![tenant],
                None => all_tenants(&vault).await?,
            };
            let settings = JobSettings {
                owner: uuid::Uuid::new_v4().to_string(),
                rows_per_second,
                lease: Duration::try_from_secs_f64(lease_seconds)
                    .ok()
                    .filter(|lease| *lease >= Duration::from_secs(1))
                    .context("--lease-seconds must be at least 1")?,
            };
            let mut done = Vec::new();
            for tenant in tenants {
                let job = vault.rotate_data_key(tenant).await;
                let job = job.with_context(|| format!("rotating tenant {tenant}'s data key"))?;
                tracing::info!(tenant = %tenant, version = job.target_version, "re-encrypting under the new data-key version");
                vault
                    .run_data_key_job(tenant, &settings)
                    .await
                    .with_context(|| {
                        format!("re-encrypting tenant {tenant}'s rows (run again to resume)")
                    })?;
                done.push(status_json(&vault.data_key_status(tenant).await?));
            }
            vault.audit().flush().await;
            println!(
                "{}",
                if done.len() == 1 {
                    done.remove(0)
                } else {
                    Value::Array(done)
                }
            );
            Ok(())
        }
        DataKeysCommand::Status { tenant, db } => {
            let vault = crate::open_recording(&db).await?;
            let shown = match tenant {
                Some(tenant) => status_json(&vault.data_key_status(tenant).await?),
                None => {
                    let mut all = Vec::new();
                    for tenant in all_tenants(&vault).await? {
                        all.push(status_json(&vault.data_key_status(tenant).await?));
                    }
                    Value::Array(all)
                }
            };
            println!("{shown}");
            Ok(())
        }
        DataKeysCommand::Retire {
            tenant,
            version,
            db,
        } => {
            let vault = crate::open_recording(&db).await?;
            let retired = vault.retire_data_key(tenant, version).await;
            vault.audit().flush().await;
            let retired = retired.context("retiring the data-key version")?;
            println!("{}", json!({"tenant_id": tenant, "retired": retired}));
            Ok(())
        }
    }
}

async fn all_tenants(vault: &Vault) -> anyhow::Result<Vec<TenantId>> {
    Ok(vault.tenant_ids().await?)
}

/// `{"tenant_id", "current_version", "versions": [{"version", "rows"}], "job"}`.
fn status_json(status: &DataKeyStatus) -> Value {
    let job = status.job.as_ref().map(|job| {
        json!({
            "target_version": job.target_version,
            "stage": job.stage.map(|t| t.as_str()),
            "rows_done": job.rows_done,
            "started_at": tessera_domain::timestamp::format(job.started_at),
            "finished_at": job.finished_at.map(tessera_domain::timestamp::format),
        })
    });
    json!({
        "tenant_id": status.tenant_id,
        "current_version": status.current_version,
        "versions": status.versions.iter().map(|(version, rows)| json!({"version": version, "rows": rows})).collect::<Vec<_>>(),
        "job": job,
    })
}
