//! The database pools' gauges on `/metrics`, read when scraped: connections in use and idle,
//! the pool's size, and the callers waiting for a connection.

use prometheus::proto::MetricFamily;
use tessera_service::metrics::{gauge_family, Family};
use tessera_storage::Database;

/// `tessera_db_pool_connections{pool, state}`, `tessera_db_pool_max_connections{pool}` and
/// `tessera_db_pool_waiting{pool}` of one database.
#[derive(Debug, Clone)]
pub struct PoolMetrics(pub Database);

impl Family for PoolMetrics {
    fn families(&self) -> Vec<MetricFamily> {
        let status = self.0.pool_status();
        let mut connections = Vec::new();
        let mut max = Vec::new();
        let mut waiting = Vec::new();
        for s in &status {
            connections.push((vec![s.pool, "in_use"], s.open.saturating_sub(s.idle) as f64));
            connections.push((vec![s.pool, "idle"], s.idle as f64));
            max.push((vec![s.pool], s.max as f64));
            waiting.push((vec![s.pool], s.waiting as f64));
        }
        vec![
            gauge_family(
                "tessera_db_pool_connections",
                "Database connections open, by pool (main: writes and scans; reads: point reads) and state.",
                &["pool", "state"],
                &connections,
            ),
            gauge_family(
                "tessera_db_pool_max_connections",
                "The most connections each pool may open (reads on PostgreSQL: summed over the threads that read).",
                &["pool"],
                &max,
            ),
            gauge_family(
                "tessera_db_pool_waiting",
                "Callers waiting for a database connection now; above zero for long, the pool is too small.",
                &["pool"],
                &waiting,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_service::metrics::Registry;
    use tessera_storage::{DatabaseUrl, PoolOptions};

    use super::*;

    #[tokio::test]
    async fn the_pools_are_rendered_with_their_connections() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url: DatabaseUrl = format!("sqlite://{}", dir.path().join("t.db").display())
            .parse()
            .expect("url");
        let db = Database::connect(&url, PoolOptions::default_for(&url))
            .await
            .expect("open");
        db.batch_execute("SELECT 1").await.expect("query");
        let registry = Registry::new();
        registry.register(Arc::new(PoolMetrics(db)));
        let text = registry.render();
        assert!(
            text.contains(r#"tessera_db_pool_connections{pool="main",state="idle"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tessera_db_pool_connections{pool="main",state="in_use"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tessera_db_pool_max_connections{pool="main"} 4"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tessera_db_pool_waiting{pool="reads"} 0"#),
            "{text}"
        );
    }
}
