//! List query strings: `page`, `size`, and for tokens repeatable `id`/`type` plus
//! `metadata.<key>=<value>` (docs/api.md, "Pagination"). Unknown parameters are a 400 so typos surface.
//! Metadata filters may also be written `metadata[<key>]=<value>` (docs/migrating.md).
//!
//! The parameters every list shares (`page`, `size`) are parsed here; each list's own filters
//! in a file of their own (`tokens.rs`, `proxies.rs`, `applications.rs`, `audit.rs`). Each
//! list's `*Params` struct is both what its parser fills, one field per parameter, and what
//! the OpenAPI document describes (a test, `tests/it/query_params.rs`, checks every
//! documented parameter is accepted).

use tessera_domain::{PageRequest, ValidationErrors};

use crate::problem::ApiError;

mod applications;
mod audit;
mod proxies;
mod tokens;
mod webhooks;

pub(crate) use applications::{application_list, ApplicationListParams};
pub(crate) use audit::{audit_list, AuditListParams};
pub(crate) use proxies::{proxy_list, ProxyListParams};
pub(crate) use tokens::{token_list, token_list_v2, TokenListParams, TokenListV2Params};
pub(crate) use webhooks::webhook_list;

/// `page` and `size`, as every list accepts them: documented (OpenAPI) and collected here
/// (anything unparsable is out of range).
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageParams {
    /// Page number, from 1.
    #[param(minimum = 1, default = 1, value_type = Option<u32>)]
    page: Option<i64>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20, value_type = Option<u32>)]
    size: Option<i64>,
}

fn parse_int(raw: &str) -> Option<i64> {
    raw.trim().parse::<i64>().ok()
}

impl PageParams {
    /// Collects `page` or `size` (anything unparsable is out of range).
    fn take(&mut self, key: &str, value: &str) {
        let n = Some(parse_int(value).unwrap_or(i64::MIN));
        if key == "page" {
            self.page = n;
        } else {
            self.size = n;
        }
    }
}

fn finish_page(paging: &PageParams, errors: &mut ValidationErrors) -> Option<PageRequest> {
    match PageRequest::new(paging.page, paging.size) {
        Ok(p) => Some(p),
        Err(e) => {
            errors.extend_under("", e);
            None
        }
    }
}

/// Records that `key` was given twice when `present`; `true` when it was not.
fn first_time(present: bool, key: &str, errors: &mut ValidationErrors) -> bool {
    if present {
        errors.add(key.to_string(), "may be given once");
    }
    !present
}

/// Refuses any parameter of a query that takes none (a 400 naming each).
pub(crate) fn none(query: &str) -> Result<(), ApiError> {
    let mut errors = ValidationErrors::new();
    for (key, _) in form_urlencoded::parse(query.as_bytes()) {
        errors.add(key.to_string(), "is not a known query parameter");
    }
    errors.into_result().map_err(|e| ApiError::validation(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_domain::{
        audit::{Actor, AuditAction, Outcome},
        cursor::CursorRequest,
        TokenId, TokenType,
    };

    use super::applications::MAX_APPLICATION_IDS;

    #[test]
    fn parses_repeated_filters_and_metadata() {
        let a = TokenId::new();
        let b = TokenId::new();
        let q = token_list(&format!(
            "id={a}&id={b}&type=card&type=token&metadata.colour=red%20ish&page=2&size=50"
        ))
        .expect("valid");
        assert_eq!(q.filter.ids, vec![a, b]);
        assert_eq!(q.filter.types, vec![TokenType::Card, TokenType::Token]);
        assert_eq!(
            q.filter.metadata,
            vec![("colour".to_string(), "red ish".to_string())]
        );
        assert_eq!((q.page.page(), q.page.size()), (2, 50));
    }

    #[test]
    fn metadata_filters_may_be_written_as_deep_objects() {
        let dotted = token_list("metadata.colour=red%20ish&metadata.a%5Bb%5D=1").expect("valid");
        let deep = token_list("metadata%5Bcolour%5D=red%20ish&metadata[a[b]]=1").expect("valid");
        assert_eq!(deep.filter.metadata, dotted.filter.metadata);
        assert_eq!(
            deep.filter.metadata,
            vec![
                ("colour".to_string(), "red ish".to_string()),
                ("a[b]".to_string(), "1".to_string())
            ]
        );
        let mixed = token_list("metadata.a=1&metadata[b]=2").expect("valid");
        assert_eq!(mixed.filter.metadata.len(), 2);
        for bad in [
            "metadata[]=x",
            "metadata[colour=x",
            "metadata[colour]x=y",
            "metadata=x",
            "metadata[k%00]=x",
        ] {
            let e = token_list(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
        }
        let eleven: Vec<String> = (0..11).map(|i| format!("metadata[k{i}]=v")).collect();
        let e = token_list(&eleven.join("&")).expect_err("over the bound");
        assert_eq!(
            e.errors().map(|m| m.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["metadata".to_string()])
        );
    }

    #[test]
    fn rejects_bad_values_and_unknown_keys() {
        for bad in [
            "page=0",
            "size=101",
            "size=x",
            "id=no",
            "type=gold",
            "colour=red",
            "metadata.=x",
            "page=1.5",
        ] {
            let e = token_list(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
        }
        assert!(application_list("colour=red").is_err());
        assert!(none("").is_ok());
        assert_eq!(none("id=1").expect_err("id").status().as_u16(), 400);
        assert_eq!(application_list("").expect("defaults").page.size(), 20);
    }

    #[test]
    fn parses_a_v2_list_as_the_sdks_send_it() {
        let q = token_list_v2(
            "type=card&container=%2Fpci%2F&metadata=%7B%22k%22%3A%22v%22%7D&metadata.x=y&start=abc&size=3",
        )
        .expect("valid");
        assert_eq!(q.search.types, vec![TokenType::Card]);
        assert_eq!(
            q.search.container_prefix.map(|c| c.as_str().to_string()),
            Some("/pci/".to_string())
        );
        assert_eq!(
            q.search.metadata,
            vec![
                ("k".to_string(), "v".to_string()),
                ("x".to_string(), "y".to_string())
            ]
        );
        assert_eq!(
            q.page,
            CursorRequest {
                start: Some("abc".into()),
                size: 3
            }
        );
        assert_eq!(token_list_v2("").expect("defaults").page.size, 20);
        for (bad, field) in [
            ("metadata=%5B1%5D", "metadata"),
            ("metadata=%7B%22k%22%3A1%7D", "metadata"),
            ("size=0", "size"),
            ("size=101", "size"),
            ("start=a&start=b", "start"),
            ("container=pci", "container"),
            ("fingerprint=abc", "fingerprint"),
            ("type=gold", "type"),
            ("page=2", "page"),
            ("query=type:card", "query"),
        ] {
            let e = token_list_v2(bad).expect_err(bad);
            let fields: Vec<String> = e
                .errors()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            assert_eq!(fields, vec![field.to_string()], "{bad}");
        }
    }

    #[test]
    fn parses_application_filters_and_names_bad_ones() {
        let a = uuid::Uuid::new_v4();
        let b = uuid::Uuid::new_v4();
        let q = application_list(&format!("id={a}&id={b}&type=private&type=public&page=2"))
            .expect("valid");
        assert_eq!(q.filter.ids.len(), 2);
        assert_eq!(
            q.filter.types,
            vec![
                tessera_domain::ApplicationType::Private,
                tessera_domain::ApplicationType::Public
            ]
        );
        assert_eq!(q.page.page(), 2);
        for (bad, field) in [
            ("id=nope", "id"),
            ("type=admin", "type"),
            ("start=abc", "start"),
            ("size=0", "size"),
        ] {
            let e = application_list(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
            let body = serde_json::to_value(e.problem()).expect("json");
            assert!(body["errors"].get(field).is_some(), "{bad}: {body}");
        }
        let many: Vec<String> = (0..=MAX_APPLICATION_IDS)
            .map(|_| format!("id={}", uuid::Uuid::new_v4()))
            .collect();
        assert!(application_list(&many.join("&")).is_err());
    }

    #[test]
    fn parses_audit_filters() {
        let app = tessera_domain::ApplicationId::new();
        let resource = uuid::Uuid::new_v4();
        let q = audit_list(&format!(
            "action=token.read&action=token.detokenized&resource_id={resource}&actor={app}\
             &outcome=denied&from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00%2B01:00&size=5"
        ))
        .expect("valid");
        assert_eq!(
            q.filter.actions,
            vec![AuditAction::TokenRead, AuditAction::TokenDetokenized]
        );
        assert_eq!(q.filter.resource_id, Some(resource.into()));
        assert_eq!(q.filter.actor, Some(Actor::Application(app)));
        assert_eq!(q.filter.outcome, Some(Outcome::Denied));
        assert!(q.filter.from.is_some() && q.filter.to.is_some());
        assert_eq!(q.page.size(), 5);
        assert_eq!(
            audit_list("actor=anonymous").expect("valid").filter.actor,
            Some(Actor::Anonymous)
        );
    }

    #[test]
    fn rejects_bad_audit_filters() {
        for (bad, field) in [
            ("action=token.stolen", "action"),
            ("resource_id=no", "resource_id"),
            ("actor=someone", "actor"),
            ("outcome=maybe", "outcome"),
            ("from=yesterday", "from"),
            ("to=2026-13-01T00:00:00Z", "to"),
            ("from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"),
            ("outcome=success&outcome=denied", "outcome"),
            ("tenant_id=x", "tenant_id"),
            ("size=0", "size"),
        ] {
            let e = audit_list(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
            let fields: Vec<&String> = e.errors().map(|m| m.keys().collect()).unwrap_or_default();
            assert!(
                fields.iter().any(|f| f.as_str() == field),
                "{bad}: {fields:?}"
            );
        }
    }
}
