//! What a token is found and deduplicated by (docs/api.md, "Search indexes" and "Fingerprint
//! expressions"): its `search_indexes`, templates over its data whose rendered values `data:`
//! search terms match exactly, and its `fingerprint_expression`, a template over its data and
//! metadata whose rendered text is fingerprinted. Both default by type, as Basis Theory's do;
//! a type's defaults are never stored with a token.
//!
//! Only the rendered values are secret: they are kept as [`Secret`]s until the vault hashes
//! them under the tenant's keys. The templates themselves are stored in clear.

use serde_json::Value;
use tessera_expressions::{Scope, Template, TemplateError, MAX_RENDERED};

use super::{
    fingerprint::{expression_input, fingerprint_input},
    token_type::TokenType,
};
use crate::{metadata::Metadata, secret::Secret, validation::ValidationErrors};

/// The keyed hash of one search index value, under the tenant's search key.
pub type SearchHash = [u8; 32];

/// Most search indexes one token may have.
pub const MAX_SEARCH_INDEXES: usize = 10;
/// Longest template, in characters, of a search index or a fingerprint expression.
pub(crate) const MAX_TEMPLATE_CHARS: usize = 1000;

/// A token's search indexes and fingerprint expression, as its create or update named them,
/// and what they render to over its data.
#[derive(Debug, Clone, Default)]
pub struct Indexing {
    /// The search index templates named (`None`: the type's defaults).
    pub search_indexes: Option<Vec<String>>,
    /// The fingerprint expression named (`None`: the type's default).
    pub fingerprint_expression: Option<String>,
    /// The distinct values the indexes render to, to be hashed.
    pub search_values: Secret<Vec<String>>,
    /// What the fingerprint is computed over.
    pub fingerprint_input: Secret<Vec<u8>>,
}

impl Indexing {
    /// The keyed hashes of its search index values under the tenant's `key`: what the index
    /// stores (docs/api.md, "Search indexes").
    pub(crate) fn search_hashes(&self, key: &crate::crypto::DataKey) -> Vec<SearchHash> {
        self.search_values
            .expose()
            .iter()
            .map(|v| key.search_hash(v))
            .collect()
    }

    /// Renders `search_indexes` (or the type's defaults) and `fingerprint_expression` (or the
    /// type's default) over `data` and `metadata`, recording problems under the fields'
    /// names (`search_indexes[2]`, `fingerprint_expression`). A card renders without its CVC,
    /// which is kept for less long than what is rendered (docs/operations.md, "CVC retention").
    pub(crate) fn read(
        token_type: TokenType,
        search_indexes: Option<Vec<String>>,
        fingerprint_expression: Option<String>,
        data: &Value,
        metadata: &Metadata,
        errors: &mut ValidationErrors,
    ) -> Self {
        let data = super::cvc::without_cvc(token_type, data);
        let data = data.as_ref();
        // One budget for all of the token's templates: their number does not multiply the
        // work one write may ask for.
        let mut budget = MAX_RENDERED;
        let search_values = search_values(
            token_type,
            search_indexes.as_deref(),
            data,
            &mut budget,
            errors,
        );
        let fingerprint_input = match &fingerprint_expression {
            None => fingerprint_input(token_type, data),
            Some(expression) => {
                rendered_fingerprint(token_type, expression, data, metadata, &mut budget)
                    .unwrap_or_else(|message| {
                        errors.add("fingerprint_expression", message);
                        Vec::new()
                    })
            }
        };
        Self {
            search_indexes,
            fingerprint_expression: named_expression(token_type, fingerprint_expression),
            search_values: Secret::new(search_values),
            fingerprint_input: Secret::new(fingerprint_input),
        }
    }
}

/// The search index templates in force for a token of `token_type` that named `named`.
pub fn effective_search_indexes(token_type: TokenType, named: Option<&[String]>) -> Vec<String> {
    match named {
        Some(named) => named.to_vec(),
        None => token_type
            .default_search_indexes()
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}

/// The fingerprint expression in force for a token of `token_type` that named `named`: the
/// one named, else Basis Theory's default where Tessera's default reads the same (the types
/// it added with Basis Theory's defaults), else `None` (`token`, `card`, `bank`, whose
/// fingerprints Tessera computed before expressions existed, and keeps).
pub fn effective_fingerprint_expression(
    token_type: TokenType,
    named: Option<&str>,
) -> Option<String> {
    if let Some(named) = named {
        return Some(named.to_string());
    }
    match token_type {
        TokenType::CardNumber | TokenType::UsBankAccountNumber | TokenType::UsBankRoutingNumber => {
            Some("{{ data }}".into())
        }
        TokenType::SocialSecurityNumber | TokenType::EmployerIdNumber => {
            Some("{{ data | remove: '-' }}".into())
        }
        TokenType::Token | TokenType::Card | TokenType::Bank => None,
    }
}

/// The fingerprint expression a token keeps when `named` was given: `None` (its type's) when
/// `named` computes exactly what the type's default does (a card's `{{ data.number }}`, an
/// SSN's `{{ data | remove: '-' }}`), so that deduplication, which compares tokens of one
/// expression only, finds tokens created either way.
pub(crate) fn named_expression(token_type: TokenType, named: Option<String>) -> Option<String> {
    let named = named?;
    let default = match token_type {
        TokenType::Card => Some("{{ data.number }}".to_string()),
        other => effective_fingerprint_expression(other, None),
    };
    (default.as_deref() != Some(named.as_str())).then_some(named)
}

/// Whether a fingerprint expression reads the token's metadata, so that changing the
/// metadata changes the fingerprint. An expression that does not parse reads nothing.
pub fn reads_metadata(expression: &str) -> bool {
    Template::parse(expression, &["data", "metadata"]).is_ok_and(|t| t.reads("metadata"))
}

/// The distinct values the search indexes in force render to over `data`; problems under
/// `search_indexes[i]`.
fn search_values(
    token_type: TokenType,
    named: Option<&[String]>,
    data: &Value,
    budget: &mut u64,
    errors: &mut ValidationErrors,
) -> Vec<String> {
    if let Some(named) = named {
        if named.len() > MAX_SEARCH_INDEXES {
            errors.add(
                "search_indexes",
                format!("must hold at most {MAX_SEARCH_INDEXES} templates"),
            );
            return Vec::new();
        }
    }
    let mut values: Vec<String> = Vec::new();
    for (i, template) in effective_search_indexes(token_type, named)
        .iter()
        .enumerate()
    {
        match rendered_index(template, data, budget) {
            Ok(value) if !values.contains(&value) => values.push(value),
            Ok(_) => {}
            Err(message) => errors.add(format!("search_indexes[{i}]"), message),
        }
    }
    values
}

/// One search index's value over `data`: a non-empty string.
fn rendered_index(template: &str, data: &Value, budget: &mut u64) -> Result<String, String> {
    let rendered = render(
        template,
        &["data"],
        &Scope::new().with("data", data),
        budget,
    )?;
    match rendered {
        Value::Null => Err("renders null: an index needs a value".into()),
        Value::String(s) if s.is_empty() => Err("renders an empty string".into()),
        Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

/// The fingerprint input of `expression` over `data` and `metadata`.
fn rendered_fingerprint(
    token_type: TokenType,
    expression: &str,
    data: &Value,
    metadata: &Metadata,
    budget: &mut u64,
) -> Result<Vec<u8>, String> {
    let metadata = Value::Object(
        metadata
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    );
    let scope = Scope::new().with("data", data).with("metadata", &metadata);
    let rendered = render(expression, &["data", "metadata"], &scope, budget)?;
    let text = match rendered {
        Value::Null => return Err("renders null: a fingerprint needs a value".into()),
        Value::String(s) if s.is_empty() => return Err("renders an empty string".into()),
        Value::String(s) => s,
        other => other.to_string(),
    };
    Ok(expression_input(token_type, &text))
}

/// `template` parsed (its paths starting at `roots`) and rendered over `scope`, its cost
/// spent from `budget`.
fn render(
    template: &str,
    roots: &[&str],
    scope: &Scope<'_>,
    budget: &mut u64,
) -> Result<Value, String> {
    if template.chars().count() > MAX_TEMPLATE_CHARS {
        return Err(format!("must be at most {MAX_TEMPLATE_CHARS} characters"));
    }
    let parsed = Template::parse(template, roots).map_err(|e| format!("invalid template {e}"))?;
    parsed.render_within(scope, budget).map_err(|e| match e {
        TemplateError::TooLarge { max } => format!(
            "could render more than {max} bytes, with the token's other search indexes \
                 and fingerprint expression"
        ),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(
        token_type: TokenType,
        indexes: Option<&[&str]>,
        expression: Option<&str>,
        data: Value,
    ) -> Result<Indexing, Vec<String>> {
        let mut errors = ValidationErrors::new();
        let indexing = Indexing::read(
            token_type,
            indexes.map(|i| i.iter().map(ToString::to_string).collect()),
            expression.map(ToString::to_string),
            &data,
            &Metadata::new(),
            &mut errors,
        );
        errors
            .into_result()
            .map(|()| indexing)
            .map_err(|e| e.fields().keys().cloned().collect())
    }

    /// Basis Theory's documented examples (docs/expressions/search-indexes).
    #[test]
    fn indexes_render_as_documented() {
        let ssn = read(
            TokenType::Token,
            Some(&[
                "{{ data }}",
                "{{ data | last4 }}",
                "{{ data | remove: '-' }}",
            ]),
            None,
            json!("111-22-3333"),
        )
        .expect("indexes");
        assert_eq!(
            ssn.search_values.expose(),
            &["111-22-3333", "3333", "111223333"]
        );
        let person = json!({"card": {"card_number": "4000056655665556", "owner": {"first_name": "John", "last_name": "Smith"}},
            "billing_address": {"zip": "10010"}});
        let complex = read(
            TokenType::Token,
            Some(&[
                "{{ data.card.card_number | last4 }}",
                "{{ data.card.owner.last_name | upcase }}",
                "{{ data.card.owner.first_name | upcase }} {{ data.card.owner.last_name | upcase }}",
                "{{ data.billing_address.zip | slice: 0, 5 }}",
            ]),
            None,
            person,
        )
        .expect("indexes");
        assert_eq!(
            complex.search_values.expose(),
            &["5556", "SMITH", "JOHN SMITH", "10010"]
        );
        // The SSN's defaults, each value once.
        let default = read(
            TokenType::SocialSecurityNumber,
            None,
            None,
            json!("123-45-6789"),
        )
        .expect("defaults");
        assert_eq!(
            default.search_values.expose(),
            &["123-45-6789", "123456789", "6789"]
        );
        let plain =
            read(TokenType::EmployerIdNumber, None, None, json!("123456789")).expect("defaults");
        assert_eq!(plain.search_values.expose(), &["123456789", "6789"]);
    }

    #[test]
    fn bad_indexes_and_expressions_name_themselves() {
        let many: Vec<&str> = vec!["{{ data }}"; 11];
        assert_eq!(
            read(TokenType::Token, Some(&many), None, json!("x")).err(),
            Some(vec!["search_indexes".to_string()])
        );
        assert_eq!(
            read(
                TokenType::Token,
                Some(&["{{ data }}", "{{ data.missing }}"]),
                None,
                json!({"a": 1})
            )
            .err(),
            Some(vec!["search_indexes[1]".to_string()])
        );
        assert_eq!(
            read(
                TokenType::Token,
                Some(&["{{ data | shout }}"]),
                None,
                json!("x")
            )
            .err(),
            Some(vec!["search_indexes[0]".to_string()])
        );
        assert_eq!(
            read(
                TokenType::Token,
                Some(&["{{ data | remove: 'x' }}"]),
                None,
                json!("x")
            )
            .err(),
            Some(vec!["search_indexes[0]".to_string()]),
            "an empty value"
        );
        assert_eq!(
            read(
                TokenType::Token,
                None,
                Some("{{ data.missing }}"),
                json!({})
            )
            .err(),
            Some(vec!["fingerprint_expression".to_string()])
        );
    }

    /// An expression that renders what a type's default reads fingerprints alike; another
    /// type, or a prefix (`customer-`), does not.
    /// An expression naming what its type's default computes is kept as the default, so that
    /// deduplication, which compares tokens of one expression, finds tokens created either way.
    #[test]
    fn a_named_default_is_the_default() {
        for (t, named) in [
            (TokenType::Card, "{{ data.number }}"),
            (TokenType::SocialSecurityNumber, "{{ data | remove: '-' }}"),
            (TokenType::CardNumber, "{{ data }}"),
        ] {
            assert_eq!(named_expression(t, Some(named.into())), None, "{named}");
        }
        for (t, named) in [
            (TokenType::Card, "{{ data.number | last4 }}"),
            (TokenType::Token, "{{ data }}"),
            (TokenType::Bank, "{{ data.account_number }}"),
        ] {
            assert_eq!(named_expression(t, Some(named.into())), Some(named.into()));
        }
        assert_eq!(named_expression(TokenType::Card, None), None);
    }

    /// A token's templates share one rendering budget: ten costly indexes are not ten times
    /// the work one index may ask for.
    #[test]
    fn a_tokens_templates_share_one_budget() {
        let costly = "{{ data | pad_left: 10000, 'x' | size }}";
        assert!(read(TokenType::Token, Some(&[costly; 8]), None, json!("a")).is_ok());
        let over = read(TokenType::Token, Some(&[costly; 9]), None, json!("a"));
        assert_eq!(over.err(), Some(vec!["search_indexes[8]".to_string()]));
        let with_expression = read(
            TokenType::Token,
            Some(&[costly; 8]),
            Some(costly),
            json!("a"),
        );
        assert_eq!(
            with_expression.err(),
            Some(vec!["fingerprint_expression".to_string()])
        );
    }

    #[test]
    fn fingerprint_inputs_follow_the_expression() {
        let card = json!({"number": "4242424242424242"});
        let by_default = read(TokenType::Card, None, None, card.clone()).expect("default");
        let by_number = read(TokenType::Card, None, Some("{{ data.number }}"), card).expect("expr");
        assert_eq!(
            by_default.fingerprint_input.expose(),
            by_number.fingerprint_input.expose()
        );
        let ssn = read(
            TokenType::SocialSecurityNumber,
            None,
            None,
            json!("123-45-6789"),
        )
        .expect("ssn");
        let bare = read(
            TokenType::SocialSecurityNumber,
            None,
            None,
            json!("123456789"),
        )
        .expect("ssn");
        assert_eq!(
            ssn.fingerprint_input.expose(),
            bare.fingerprint_input.expose(),
            "dashes do not count"
        );
        let prefixed = read(
            TokenType::Token,
            None,
            Some("customer-{{ data }}"),
            json!("111-22-3333"),
        )
        .expect("expr");
        assert_eq!(
            prefixed.fingerprint_input.expose(),
            b"token\0customer-111-22-3333"
        );
        let with_metadata = {
            let mut errors = ValidationErrors::new();
            let metadata: Metadata = [("customer".to_string(), "c_1".to_string())]
                .into_iter()
                .collect();
            let i = Indexing::read(
                TokenType::Token,
                None,
                Some("{{ metadata.customer }}|{{ data }}".into()),
                &json!("x"),
                &metadata,
                &mut errors,
            );
            assert!(errors.into_result().is_ok());
            i
        };
        assert_eq!(with_metadata.fingerprint_input.expose(), b"token\0c_1|x");
    }
}
