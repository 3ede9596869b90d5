//! `POST /tokenize` and bulk creates: up to [`MAX_BULK`] tokens, all or none.

use std::collections::HashMap;

use time::OffsetDateTime;

use crate::{
    access::Principal,
    container::Container,
    error::VaultError,
    ids::TokenId,
    permission::Permission,
    store::StoredToken,
    timestamp,
    token::{IdChoice, NewToken, Token, TokenType, ValidToken},
    validation::ValidationErrors,
};

use super::{
    new_tokens::{fingerprint_of, Drawn},
    tokens::{may_create, may_name_id},
    Vault,
};

/// Most tokens one `POST /tokenize` may create.
pub const MAX_BULK: usize = 100;

/// What makes two tokens of one bulk create equal for `deduplicate_token`: type, container,
/// fingerprint expression (`None`: the type's) and fingerprint.
type Identity = (TokenType, Container, Option<String>, String);

/// What one request of a bulk create is answered with.
enum Answer {
    /// The token created for it (or for an equal earlier one): its position among those
    /// created.
    Created(usize),
    /// The existing token it duplicates.
    Found(Box<Token>),
}

impl Vault {
    /// Creates 1–[`MAX_BULK`] tokens, all or none, returned in request order. Every element is
    /// validated first (problems keyed `[i].field`); `token:create` is needed on every target
    /// container. Elements asking to deduplicate are answered with an existing equal token
    /// (or an earlier element of the same request) instead.
    pub async fn create_tokens(
        &self,
        caller: &Principal,
        inputs: Vec<NewToken>,
    ) -> Result<Vec<Token>, VaultError> {
        let labelled = inputs
            .into_iter()
            .enumerate()
            .map(|(i, input)| (format!("[{i}]."), input))
            .collect();
        self.create_labelled_tokens(caller, labelled).await
    }

    /// As [`Vault::create_tokens`], each request with the prefix its problems are keyed under
    /// (`card.` for a member of an object, `` for a lone request).
    pub async fn create_labelled_tokens(
        &self,
        caller: &Principal,
        inputs: Vec<(String, NewToken)>,
    ) -> Result<Vec<Token>, VaultError> {
        caller.require_somewhere(Permission::TokenCreate)?;
        if inputs.is_empty() || inputs.len() > MAX_BULK {
            return Err(ValidationErrors::single(
                "body",
                format!("must hold 1 to {MAX_BULK} token requests"),
            )
            .into());
        }
        for (_, input) in &inputs {
            may_name_id(caller, input)?;
        }
        let now = timestamp::now();
        let valid = validate_all(inputs, now)?;
        for (_, v) in &valid {
            may_create(caller, v)?;
        }
        let key = self
            .keys
            .data_key(self.store.as_ref(), caller.tenant_id())
            .await?;
        // Each answer: a token created here (its position in `drawn`), or an existing one.
        let mut answers: Vec<Answer> = Vec::with_capacity(valid.len());
        let mut drawn = Drawn::with_capacity(valid.len(), self.cvc);
        // (type, container, fingerprint expression, fingerprint) → the answer of the token
        // created for it.
        let mut created_here: HashMap<Identity, usize> = HashMap::new();
        for (label, v) in valid {
            let fingerprint = fingerprint_of(&key, &v);
            let identity = (
                v.token_type,
                v.container.clone(),
                v.indexing.fingerprint_expression.clone(),
                fingerprint.clone(),
            );
            if v.deduplicate {
                if let Some(&earlier) = created_here.get(&identity) {
                    answers.push(Answer::Created(earlier));
                    continue;
                }
                if let Some(found) = self
                    .find_duplicate(caller, &key, &v, &fingerprint, now)
                    .await?
                {
                    answers.push(Answer::Found(Box::new(found)));
                    continue;
                }
            }
            let at = drawn.push(caller, &key, label, v, fingerprint)?;
            created_here.entry(identity).or_insert(at);
            answers.push(Answer::Created(at));
        }
        if !drawn.rows.is_empty() {
            let insert = async |rows: &[StoredToken]| self.store.insert_tokens(rows).await;
            self.insert_settled(caller, &key, &mut drawn, insert)
                .await?;
        }
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                Answer::Created(at) => drawn.tokens[at].clone(),
                Answer::Found(found) => *found,
            })
            .collect())
    }
}

/// Every request validated at `now`, or every problem keyed under its request's label (a
/// chosen id given twice names the first request that gave it).
fn validate_all(
    inputs: Vec<(String, NewToken)>,
    now: OffsetDateTime,
) -> Result<Vec<(String, ValidToken)>, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut valid = Vec::with_capacity(inputs.len());
    let mut chosen: HashMap<TokenId, String> = HashMap::new();
    for (label, input) in inputs {
        match input.validate_at(now) {
            Ok(v) => {
                if let IdChoice::Chosen(id) = &v.id {
                    if let Some(first) = chosen.insert(id.clone(), label.clone()) {
                        errors.add(format!("{label}id"), format!("repeats {first}id"));
                    }
                }
                valid.push((label, v));
            }
            Err(e) => errors.extend_under(&label, e),
        }
    }
    errors.into_result()?;
    Ok(valid)
}
