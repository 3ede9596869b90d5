//! Storing one batch: a `POST /tokenize` of its rows, then, by what the server answered, the
//! rows it refused reported alone and the rest sent again; rows whose ids are taken counted as
//! stored before (which makes a rerun resume); a batch refused as a whole split in halves until
//! the row at fault stands alone.

use std::{collections::BTreeMap, time::Duration};

use http::StatusCode;
use serde_json::Value;

use crate::{
    client::{NoAnswer, Server},
    rows::Row,
    tally::Tally,
    ImportError,
};

/// How many times a batch is sent before the import gives up on the server.
const ATTEMPTS: u32 = 8;

/// What the server made of a batch.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Every row is stored.
    Stored,
    /// These rows (by position) are refused, each with its reasons; nothing was stored.
    Refused(BTreeMap<usize, Vec<String>>),
    /// These rows' ids are taken; nothing was stored.
    Taken(Vec<usize>),
    /// Refused as a whole, naming no row.
    Whole(String),
    /// Worth sending again later.
    Retry(String),
}

/// Stores `rows`, counting into `tally`.
pub(crate) async fn store(
    server: &Server,
    rows: Vec<Row>,
    tally: &Tally,
) -> Result<(), ImportError> {
    let mut pending = vec![rows];
    while let Some(batch) = pending.pop() {
        if batch.is_empty() {
            continue;
        }
        let requests: Vec<&serde_json::Map<String, Value>> =
            batch.iter().map(|r| &r.request).collect();
        let body = serde_json::to_vec(&requests).map_err(|e| ImportError::Io(e.to_string()))?;
        match send(server, body, batch.len()).await? {
            Outcome::Stored => tally.stored(batch.len()),
            Outcome::Refused(by_row) => {
                for (i, reasons) in &by_row {
                    tally.refuse_row(&batch[*i], reasons.join("; "));
                }
                pending.push(without(batch, |i| by_row.contains_key(&i)));
            }
            Outcome::Taken(rows) => {
                tally.skipped(rows.len());
                pending.push(without(batch, |i| rows.contains(&i)));
            }
            Outcome::Whole(reason) if batch.len() == 1 => tally.refuse_row(&batch[0], reason),
            Outcome::Whole(_) => {
                let mut first = batch;
                let second = first.split_off(first.len() / 2);
                pending.push(first);
                pending.push(second);
            }
            Outcome::Retry(why) => return Err(ImportError::Server(why)),
        }
    }
    Ok(())
}

/// `batch` without the rows whose position `drop` selects.
fn without(batch: Vec<Row>, drop: impl Fn(usize) -> bool) -> Vec<Row> {
    batch
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !drop(*i))
        .map(|(_, row)| row)
        .collect()
}

/// Sends `body` (`rows` create requests), again after a pause while the server asks for one,
/// up to [`ATTEMPTS`] times.
async fn send(server: &Server, body: Vec<u8>, rows: usize) -> Result<Outcome, ImportError> {
    let mut pause = Duration::from_millis(200);
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let outcome = match server.tokenize(body.clone()).await {
            Ok((status, answer)) => classify(status, &answer, rows)?,
            Err(NoAnswer::Transient(why)) => Outcome::Retry(why),
            Err(NoAnswer::Tls(why)) => {
                return Err(ImportError::Config(format!(
                    "TLS refused the server ({why}); for a certificate of a private CA, give \
                     --ca-file"
                )))
            }
        };
        match outcome {
            Outcome::Retry(why) => {
                last = why;
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(10));
            }
            settled => return Ok(settled),
        }
    }
    Ok(Outcome::Retry(format!(
        "the server kept failing ({ATTEMPTS} attempts): {last}"
    )))
}

/// What an answer to `rows` create requests says of the batch. Only `/tokenize`'s own success,
/// a 201 with one token (an `id`) per request, counts as stored: any other success (a wrong
/// `--url` answered by something else) stops the import rather than count rows as stored.
fn classify(status: StatusCode, answer: &Value, rows: usize) -> Result<Outcome, ImportError> {
    let detail = || answer["detail"].as_str().unwrap_or("").to_string();
    let errors = answer["errors"].as_object();
    Ok(match status {
        StatusCode::CREATED if stored_all(answer, rows) => Outcome::Stored,
        s if s.is_success() => {
            return Err(ImportError::Server(format!(
                "{s} without the {rows} tokens a POST /tokenize answers: is --url a Tessera API?"
            )))
        }
        StatusCode::BAD_REQUEST => match errors.map(by_row) {
            Some(Some(rows)) if !rows.is_empty() => Outcome::Refused(rows),
            _ => Outcome::Whole(detail()),
        },
        StatusCode::CONFLICT => match errors.map(by_row) {
            Some(Some(rows)) if !rows.is_empty() => Outcome::Taken(rows.into_keys().collect()),
            _ => Outcome::Retry(detail()),
        },
        StatusCode::PAYLOAD_TOO_LARGE => Outcome::Whole(detail()),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(ImportError::Refused(format!("{status}: {}", detail())))
        }
        s if s == StatusCode::TOO_MANY_REQUESTS || s.is_server_error() => {
            Outcome::Retry(format!("{status}: {}", detail()))
        }
        other => return Err(ImportError::Server(format!("{other}: {}", detail()))),
    })
}

/// Whether `answer` holds `rows` tokens, each with its id.
fn stored_all(answer: &Value, rows: usize) -> bool {
    answer.as_array().is_some_and(|tokens| {
        tokens.len() == rows && tokens.iter().all(|t| t["id"].as_str().is_some())
    })
}

/// A problem's `errors` by row: `{"[3].data.number": ["…"]}` as row 3's `data.number: …`;
/// `None` when a member names no row.
fn by_row(errors: &serde_json::Map<String, Value>) -> Option<BTreeMap<usize, Vec<String>>> {
    let mut rows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (key, messages) in errors {
        let rest = key.strip_prefix('[')?;
        let (index, field) = rest.split_once(']')?;
        let index: usize = index.parse().ok()?;
        let field = field.trim_start_matches('.');
        for message in messages.as_array().into_iter().flatten() {
            let message = message.as_str().unwrap_or_default();
            let reason = if field.is_empty() {
                message.to_string()
            } else {
                format!("{field}: {message}")
            };
            rows.entry(index).or_default().push(reason);
        }
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_say_what_became_of_each_row() {
        let refused = json!({"detail": "x", "errors": {"[3].data.number": ["fails the Luhn check"], "[0].id": ["must be 3 to 400 characters"]}});
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, &refused, 5).expect("outcome"),
            Outcome::Refused(BTreeMap::from([
                (0, vec!["id: must be 3 to 400 characters".to_string()]),
                (3, vec!["data.number: fails the Luhn check".to_string()]),
            ]))
        );
        let taken =
            json!({"errors": {"[1].id": ["is already in use"], "[4].id": ["is already in use"]}});
        assert_eq!(
            classify(StatusCode::CONFLICT, &taken, 5).expect("outcome"),
            Outcome::Taken(vec![1, 4])
        );
        let whole =
            json!({"detail": "must hold 1 to 100 token requests", "errors": {"body": ["…"]}});
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, &whole, 5),
            Ok(Outcome::Whole(_))
        ));
        assert!(matches!(
            classify(StatusCode::SERVICE_UNAVAILABLE, &json!({}), 5),
            Ok(Outcome::Retry(_))
        ));
        assert!(matches!(
            classify(StatusCode::TOO_MANY_REQUESTS, &json!({}), 5),
            Ok(Outcome::Retry(_))
        ));
        assert!(classify(StatusCode::FORBIDDEN, &json!({"detail": "no"}), 5).is_err());
        let tokens = json!([{"id": "a"}, {"id": "b"}]);
        assert_eq!(
            classify(StatusCode::CREATED, &tokens, 2).expect("ok"),
            Outcome::Stored
        );
        // Any other success is not `/tokenize`'s: nothing is counted as stored.
        for (status, answer) in [
            (StatusCode::OK, tokens.clone()),
            (StatusCode::CREATED, json!([{"id": "a"}])),
            (StatusCode::CREATED, json!({"ok": true})),
            (StatusCode::NO_CONTENT, Value::Null),
        ] {
            assert!(classify(status, &answer, 2).is_err(), "{status} {answer}");
        }
    }
}
