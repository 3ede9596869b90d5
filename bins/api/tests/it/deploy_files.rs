//! The dashboard and alert rules shipped in `deploy/` name only metrics that `/metrics` serves
//! (docs/operations.md, "Dashboards and alerts"): every `tessera_*` name in them is looked up
//! in a live `api serve`'s `/metrics`, with a webhook delivering so that its families render.

use std::{collections::BTreeSet, time::Duration};

use serde_json::json;
use tessera_testkit::{http_client, webhook_receiver::Receiver};

use crate::cli::{bootstrap, post, serve};

const FILES: [&str; 2] = [
    "deploy/grafana/tessera-dashboard.json",
    "deploy/prometheus/tessera-alerts.yml",
];

fn read(file: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{file}", env!("CARGO_MANIFEST_DIR"))).expect(file)
}

/// Every `tessera_…` name in `text` (not `tessera_*`, as prose writes the family).
fn names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("tessera_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        if !tail[..end].ends_with('_') {
            names.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    names
}

#[test]
fn the_dashboard_and_alerts_name_only_served_metrics() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read(FILES[0])).expect("the dashboard is JSON");
    assert!(dashboard["panels"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut api = serve(dir.path(), &["--allow-private-destinations"], &[]);
    let admin = bootstrap(&mut api)["api_key"]
        .as_str()
        .expect("key")
        .to_string();
    let receiver = Receiver::start();
    let hook = json!({"name": "m", "url": receiver.url, "events": ["token.created"]});
    assert_eq!(post(&format!("{}/webhooks", api.base), &admin, hook).0, 201);
    let token = json!({"type": "token", "data": "x"});
    assert_eq!(post(&format!("{}/tokens", api.base), &admin, token).0, 201);
    receiver.wait_for(Duration::from_secs(30), "a delivery", |seen| {
        !seen.is_empty()
    });
    let metrics = http_client::get(&format!("{}/metrics", api.base), &[]).text();
    let served: BTreeSet<&str> = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for file in FILES {
        let names = names_in(&read(file));
        assert!(!names.is_empty(), "{file} names no metric");
        for name in names {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|b| served.contains(b)))
                .unwrap_or(&name);
            assert!(served.contains(base), "{file}: {name} is not on /metrics");
        }
    }
}
