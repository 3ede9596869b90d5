//! Storing one batch: a `POST /tokenize` of its rows, then, by what the server answered, the
//! rows it refused reported alone and the rest sent again; rows whose ids are taken counted as
//! stored before (which makes a rerun resume); a batch refused as a whole split in halves until
//! the row at fault stands alone.

use std::{collections::BTreeMap, time::Duration};

use http::StatusCode;
use serde_json::Value;

use crate::{
    client::{NoAnswer, Server},
    error::ImportError,
    rows::Row,
    tally::Tally,
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
        // A batch holding a row without an id gets an idempotency key, kept by its retries: if
        // the server stored it but the answer was lost, the retry is answered again instead
        // of storing those rows twice (docs/api.md, "Idempotency-Key"). Rows with ids need
        // none: a retry finds their ids taken and skips them, and the key would cost the
        // server a stored answer per batch.
        let key = batch
            .iter()
            .any(|row| row.id.is_none())
            .then(|| server.next_idempotency_key());
        match send(server, body, batch.len(), key.as_ref()).await? {
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

/// Sends `body` (`rows` create requests), under the idempotency key `key` if any, again after
/// a pause while the server asks for one, up to [`ATTEMPTS`] times.
async fn send(
    server: &Server,
    body: Vec<u8>,
    rows: usize,
    key: Option<&http::HeaderValue>,
) -> Result<Outcome, ImportError> {
    let mut pause = Duration::from_millis(200);
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let outcome = match server.tokenize(body.clone(), key).await {
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
        StatusCode::BAD_REQUEST => match errors.and_then(|e| by_row(e, rows)) {
            Some(by_row) => Outcome::Refused(by_row),
            None => Outcome::Whole(detail()),
        },
        // Taken ids (`[3].id`) name the rows to skip; another conflict (an idempotency key
        // still in use by an earlier attempt) passes.
        StatusCode::CONFLICT => match errors.and_then(|e| taken_ids(e, rows)) {
            Some(taken) => Outcome::Taken(taken),
            None => Outcome::Retry(detail()),
        },
        StatusCode::PAYLOAD_TOO_LARGE => Outcome::Whole(detail()),
        // A row in a container the key may not create in: found alone by splitting.
        StatusCode::FORBIDDEN => Outcome::Whole(format!("{status}: {}", detail())),
        StatusCode::UNAUTHORIZED => {
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

/// A member of a problem's `errors` that names a row of a batch of `rows`: its position and
/// the field (`[3].data.number`: 3, `data.number`).
fn row_member(key: &str, rows: usize) -> Option<(usize, &str)> {
    let rest = key.strip_prefix('[')?;
    let (index, field) = rest.split_once(']')?;
    let index: usize = index.parse().ok()?;
    (index < rows).then_some((index, field.trim_start_matches('.')))
}

/// The rows of a 409 whose ids are taken: every member must be a row's `id`.
fn taken_ids(errors: &serde_json::Map<String, Value>, rows: usize) -> Option<Vec<usize>> {
    let taken: Option<Vec<usize>> = errors
        .keys()
        .map(|key| row_member(key, rows).and_then(|(i, field)| (field == "id").then_some(i)))
        .collect();
    taken.filter(|t| !t.is_empty())
}

/// A problem's `errors` by row: `{"[3].data.number": ["…"]}` as row 3's `data.number: …`;
/// `None` when a member names no row of the batch, or none is named.
fn by_row(
    errors: &serde_json::Map<String, Value>,
    rows: usize,
) -> Option<BTreeMap<usize, Vec<String>>> {
    let mut by_row: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (key, messages) in errors {
        let (index, field) = row_member(key, rows)?;
        for message in messages.as_array().into_iter().flatten() {
            let message = message.as_str().unwrap_or_default();
            let reason = if field.is_empty() {
                message.to_string()
            } else {
                format!("{field}: {message}")
            };
            by_row.entry(index).or_default().push(reason);
        }
    }
    (!by_row.is_empty()).then_some(by_row)
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
        assert!(classify(StatusCode::UNAUTHORIZED, &json!({"detail": "no"}), 5).is_err());
        assert!(
            matches!(
                classify(StatusCode::FORBIDDEN, &json!({"detail": "no"}), 5),
                Ok(Outcome::Whole(_))
            ),
            "a row the key may not create is found alone by splitting"
        );
        // The server's answer names rows of this batch, or it is not trusted to.
        let beyond = json!({"errors": {"[9].data": ["x"]}});
        assert!(matches!(
            classify(StatusCode::BAD_REQUEST, &beyond, 5),
            Ok(Outcome::Whole(_))
        ));
        let not_ids = json!({"errors": {"[1].data": ["is already in use"]}});
        assert!(matches!(
            classify(StatusCode::CONFLICT, &not_ids, 5),
            Ok(Outcome::Retry(_))
        ));
        assert!(matches!(
            classify(
                StatusCode::CONFLICT,
                &json!({"errors": {"[7].id": ["taken"]}}),
                5
            ),
            Ok(Outcome::Retry(_))
        ));
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
