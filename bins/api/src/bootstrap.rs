//! The `default` tenant of a fresh deployment, and how a created tenant is printed.

use anyhow::Context;
use serde::Serialize;
use tessera_domain::vault::CreatedTenant;
use tessera_startup::secret_file;

/// Creates the `default` tenant on an empty database: its admin key is printed on stdout and
/// written to `<data-dir>/admin-key`.
pub(crate) async fn bootstrap(
    vault: &tessera_domain::Vault,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let Some(created) = vault
        .bootstrap()
        .await
        .context("bootstrapping the default tenant")?
    else {
        return Ok(());
    };
    // Print first: the tenant exists now, and its key must not be lost if the file cannot be
    // written.
    println!("{}", tenant_json(&created)?);
    let path = data_dir.join("admin-key");
    match secret_file::replace(&path, created.api_key.expose().as_bytes()) {
        Ok(()) => tracing::warn!(
            path = %path.display(),
            "created tenant `default`; its admin API key was printed above and written to the file (mode 0600). It is not shown again."
        ),
        Err(e) => tracing::error!(
            path = %path.display(),
            error = %e,
            "created tenant `default`; its admin API key was printed above but could not be written to the file: keep the printed key"
        ),
    }
    Ok(())
}

/// A created tenant as printed: its id, its admin application's and the admin key.
#[derive(Serialize)]
struct TenantOutput<'a> {
    tenant_id: String,
    application_id: String,
    api_key: &'a str,
}

/// `created` as the one JSON line `tenants create` and the bootstrap print.
pub(crate) fn tenant_json(created: &CreatedTenant) -> anyhow::Result<String> {
    Ok(serde_json::to_string(&TenantOutput {
        tenant_id: created.tenant.id.to_string(),
        application_id: created.admin.id.to_string(),
        api_key: created.api_key.expose(),
    })?)
}
