//! Reading an export: one token a line, in the shape Basis Theory's token object (and
//! Tessera's own) has. What a create takes is kept; what Tessera does not keep is counted, with
//! why, for the summary.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The fields a create takes, kept as exported.
const KEPT: &[&str] = &[
    "id",
    "type",
    "data",
    "metadata",
    "containers",
    "expires_at",
    "search_indexes",
    "fingerprint_expression",
];

/// Fields of an export that are not kept, and why (docs/migrating.md, "Importing tokens").
const NOT_KEPT: &[(&str, &str)] = &[
    ("tenant_id", "the tokens go to the tenant of the importing key"),
    ("created_at", "Tessera records when it stores a token (keep the old time in metadata if it matters)"),
    ("created_by", "the importing application is recorded as the creator"),
    ("modified_at", "Tessera records when it stores a token"),
    ("modified_by", "the importing application is recorded"),
    ("fingerprint", "recomputed under this tenant's own fingerprint key: another vault's values cannot be reproduced"),
    ("enrichments", "card enrichments (BIN details) are not offered"),
    ("privacy", "privacy settings are not offered: permissions are given per container"),
    ("mask", "token masks are not offered yet"),
    ("aliases", "aliases other than the id are not offered"),
];

/// One row to store: where it came from and the create request it becomes.
#[derive(Clone)]
pub(crate) struct Row {
    /// Its line in the file, from 1.
    pub(crate) line: usize,
    /// The id it asks for, if any.
    pub(crate) id: Option<String>,
    /// The create request.
    pub(crate) request: Map<String, Value>,
}

impl std::fmt::Debug for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The request holds token data: only where it came from is printed.
        f.debug_struct("Row")
            .field("line", &self.line)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What reading one line gave.
#[derive(Debug)]
pub(crate) enum Read {
    /// A row to store.
    Row(Row),
    /// A line that is no token, and why.
    Refused(String),
    /// A blank line.
    Blank,
}

/// Fields dropped from the rows read, by name: how many rows had each, and why it is not kept.
#[derive(Debug, Default, Clone)]
pub(crate) struct NotKept(pub(crate) BTreeMap<String, (u64, &'static str)>);

impl NotKept {
    fn note(&mut self, field: &str) {
        let why = NOT_KEPT
            .iter()
            .find(|(name, _)| *name == field)
            .map_or("not a field of Tessera's tokens", |(_, why)| why);
        self.0.entry(field.to_string()).or_insert((0, why)).0 += 1;
    }
}

/// Reads line `line` (numbered from 1), noting in `not_kept` what is dropped from it.
pub(crate) fn read(line: usize, text: &str, not_kept: &mut NotKept) -> Read {
    if text.trim().is_empty() {
        return Read::Blank;
    }
    let object = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Read::Refused("the line is not a JSON object".into()),
        Err(e) => return Read::Refused(format!("the line is not JSON ({e})")),
    };
    let mut request = Map::new();
    for (field, value) in object {
        if KEPT.contains(&field.as_str()) {
            request.insert(field, value);
        } else {
            not_kept.note(&field);
        }
    }
    let id = match request.get("id") {
        Some(Value::String(id)) => Some(id.clone()),
        _ => None,
    };
    Read::Row(Row { line, id, request })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_fields_pass_and_the_others_are_counted() {
        let mut not_kept = NotKept::default();
        let line = r#"{"id":"1234_phone","type":"token","data":"x","tenant_id":"t","created_at":"2024-01-01T00:00:00Z","fingerprint":"abc","custom":1}"#;
        let Read::Row(row) = read(7, line, &mut not_kept) else {
            panic!("a row")
        };
        assert_eq!(row.line, 7);
        assert_eq!(row.id.as_deref(), Some("1234_phone"));
        let mut kept: Vec<&String> = row.request.keys().collect();
        kept.sort();
        assert_eq!(kept, vec!["data", "id", "type"]);
        let fields: Vec<&String> = not_kept.0.keys().collect();
        assert_eq!(
            fields,
            vec!["created_at", "custom", "fingerprint", "tenant_id"]
        );
        assert!(not_kept.0["fingerprint"].1.contains("recomputed"));
        assert!(matches!(read(1, "[1]", &mut not_kept), Read::Refused(_)));
        assert!(matches!(read(1, "{oops", &mut not_kept), Read::Refused(_)));
        assert!(matches!(read(1, "  ", &mut not_kept), Read::Blank));
    }
}
