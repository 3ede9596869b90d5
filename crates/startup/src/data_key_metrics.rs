//! The data-key re-encryption jobs on `/metrics` (docs/operations.md, "Rotating data keys"):
//! read from the database every [`REFRESH`] by a task of the serving process (the jobs run in
//! `api data-keys rotate`, another process), and rendered from that reading when scraped.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use prometheus::proto::MetricFamily;
use tessera_domain::store::DataKeyStore;
use tessera_service::metrics::{gauge_family, Family};
use tessera_storage::Database;

/// How often the jobs are read.
pub const REFRESH: Duration = Duration::from_secs(15);

/// What the last reading found.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Reading {
    unfinished: u64,
    finished: u64,
    rows_reencrypted: u64,
    seconds_since_progress: f64,
}

/// `tessera_data_key_jobs{state}`, `tessera_data_key_rows_reencrypted` (rows re-encrypted by the
/// unfinished jobs) and `tessera_data_key_job_idle_seconds` (the longest an unfinished job has
/// made no progress: a job whose process stopped shows here).
#[derive(Debug, Clone, Default)]
pub struct DataKeyMetrics(Arc<Mutex<Reading>>);

impl DataKeyMetrics {
    /// Reads the jobs now, then every [`REFRESH`] for as long as the process runs.
    pub fn spawn(&self, database: Database) {
        let reading = self.0.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REFRESH);
            loop {
                every.tick().await;
                match read(&database).await {
                    Ok(now) => {
                        if let Ok(mut held) = reading.lock() {
                            *held = now;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "reading the data-key jobs for /metrics"),
                }
            }
        });
    }
}

async fn read(database: &Database) -> Result<Reading, tessera_domain::store::StoreError> {
    let now = tessera_domain::timestamp::now();
    let mut reading = Reading::default();
    for job in database.list_data_key_jobs().await? {
        if job.finished_at.is_some() {
            reading.finished += 1;
            continue;
        }
        reading.unfinished += 1;
        reading.rows_reencrypted += job.rows_done;
        let idle = (now - job.updated_at).as_seconds_f64().max(0.0);
        reading.seconds_since_progress = reading.seconds_since_progress.max(idle);
    }
    Ok(reading)
}

impl Family for DataKeyMetrics {
    fn families(&self) -> Vec<MetricFamily> {
        let r = self.0.lock().map(|r| *r).unwrap_or_default();
        vec![
            gauge_family(
                "tessera_data_key_jobs",
                "Data-key re-encryption jobs, unfinished and finished (one per tenant at most).",
                &["state"],
                &[
                    (vec!["unfinished"], r.unfinished as f64),
                    (vec!["finished"], r.finished as f64),
                ],
            ),
            gauge_family(
                "tessera_data_key_rows_reencrypted",
                "Rows the unfinished re-encryption jobs have re-encrypted so far.",
                &[],
                &[(vec![], r.rows_reencrypted as f64)],
            ),
            gauge_family(
                "tessera_data_key_job_idle_seconds",
                "The longest an unfinished re-encryption job has made no progress (a job whose process stopped grows here: run `api data-keys rotate` again).",
                &[],
                &[(vec![], r.seconds_since_progress)],
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use tessera_service::metrics::Registry;

    use super::*;

    #[test]
    fn the_reading_is_rendered() {
        let metrics = DataKeyMetrics::default();
        if let Ok(mut r) = metrics.0.lock() {
            *r = Reading {
                unfinished: 1,
                finished: 2,
                rows_reencrypted: 40,
                seconds_since_progress: 3.0,
            };
        }
        let registry = Registry::new();
        registry.register(Arc::new(metrics));
        let text = registry.render();
        for line in [
            r#"tessera_data_key_jobs{state="unfinished"} 1"#,
            r#"tessera_data_key_jobs{state="finished"} 2"#,
            "tessera_data_key_rows_reencrypted 40",
            "tessera_data_key_job_idle_seconds 3",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
