//! Forms as the API's request bodies: each form is turned into the JSON body the management
//! API would receive and deserialised into the same domain input type, so that the same rules
//! apply and problems come back keyed and worded as the API keys and words them
//! (`name`, `data.number`, `rules[0].container`).

pub(crate) mod application;
pub(crate) mod proxy;
pub(crate) mod token;

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tessera_domain::ValidationErrors;

/// Deserialises the API body `value` as `T`, naming the field of the first problem as the
/// API's JSON parser does.
pub(crate) fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ValidationErrors> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let mut field = if path == "." { String::new() } else { path };
        // serde reports a missing field at its parent's path: key it by the field itself.
        if let Some(missing) = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name)
        {
            field = if field.is_empty() {
                missing.to_string()
            } else {
                format!("{field}.{missing}")
            };
        }
        if field.is_empty() {
            field = "body".to_string();
        }
        ValidationErrors::single(field, inner)
    })
}

/// `key=value` lines (metadata as the console edits it); blank lines are skipped. Problems
/// are recorded under `field`.
pub(crate) fn pairs(
    text: &str,
    field: &str,
    errors: &mut ValidationErrors,
) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line.split_once('=') {
            Some((k, v)) => {
                map.insert(k.trim().to_string(), v.trim().to_string());
            }
            None => errors.add(
                field,
                format!("line {} is not of the form key=value", n + 1),
            ),
        }
    }
    map
}

/// `map` as `key=value` lines.
pub(crate) fn lines<'a>(map: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    map.into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_domain::ApplicationInput;

    use super::*;

    #[test]
    fn problems_are_keyed_like_the_api() {
        let e = from_json::<ApplicationInput>(json!({"type": "private"})).expect_err("no name");
        assert_eq!(e.fields().keys().collect::<Vec<_>>(), vec!["name"]);
        let e = from_json::<ApplicationInput>(json!({"name": "a", "type": "private",
            "rules": [{"priority": 1, "container": "nope", "permissions": []}]}))
        .expect_err("bad container");
        assert_eq!(
            e.fields().keys().collect::<Vec<_>>(),
            vec!["rules[0].container"]
        );
    }

    #[test]
    fn metadata_lines() {
        let mut errors = ValidationErrors::new();
        let m = pairs("a = 1\n\nb=x=y\nbroken", "metadata", &mut errors);
        assert_eq!(m.get("a").map(String::as_str), Some("1"));
        assert_eq!(m.get("b").map(String::as_str), Some("x=y"));
        assert_eq!(
            errors.fields()["metadata"],
            vec!["line 4 is not of the form key=value"]
        );
        assert_eq!(lines(&m), "a=1\nb=x=y");
    }
}
