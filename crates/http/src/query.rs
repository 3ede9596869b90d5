//! List query strings: `page`, `size`, and for tokens repeatable `id`/`type` plus
//! `metadata.<key>=<value>` (docs/api.md, "Pagination"). Unknown parameters are a 400 so typos surface.
//! Metadata filters may also be written `metadata[<key>]=<value>` (docs/migrating.md).

use tessera_domain::{
    audit::{Actor, AuditAction, AuditFilter, Outcome},
    cursor::CursorRequest,
    proxy::name_like_pattern,
    search::{TokenSearchRequest, ValidWalk},
    store::{ApplicationFilter, ProxyFilter, TokenFilter},
    timestamp,
    validation::{has_nul, NUL_MESSAGE},
    PageRequest, ProxyId, TokenId, TokenType, ValidationErrors,
};

use crate::problem::ApiError;

/// `page` and `size`, as every list accepts them (OpenAPI description only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct PageParams {
    /// Page number, from 1.
    #[param(minimum = 1, default = 1)]
    page: Option<u32>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    size: Option<u32>,
}

/// The token-list filters [`token_list`] accepts besides [`PageParams`] (OpenAPI description
/// only). Up to 10 metadata pairs may be added; they AND together and match exactly.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct TokenListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode)]
    id: Option<Vec<uuid::Uuid>>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    token_type: Option<Vec<TokenType>>,
    /// Only tokens whose metadata holds each of these pairs, exactly (at most 10):
    /// `metadata[<key>]=<value>`, or equally `metadata.<key>=<value>`.
    #[param(style = DeepObject, explode)]
    metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// The proxy-list filters [`proxy_list`] accepts besides [`PageParams`] (OpenAPI description
/// only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct ProxyListParams {
    /// Only these ids (repeat the key for several).
    #[param(style = Form, explode)]
    id: Option<Vec<uuid::Uuid>>,
    /// Case-insensitive substring of the name; `*` matches any run of characters.
    name: Option<String>,
}

/// A parsed token-list query.
#[derive(Debug, Clone)]
pub(crate) struct TokenListQuery {
    /// Filters.
    pub filter: TokenFilter,
    /// Page.
    pub page: PageRequest,
}

fn parse_int(raw: &str) -> Option<i64> {
    raw.trim().parse::<i64>().ok()
}

/// Collects `page` and `size` (anything unparsable is out of range).
fn page_param(key: &str, value: &str, page: &mut Option<i64>, size: &mut Option<i64>) {
    let n = Some(parse_int(value).unwrap_or(i64::MIN));
    if key == "page" {
        *page = n;
    } else {
        *size = n;
    }
}

fn finish_page(
    page: Option<i64>,
    size: Option<i64>,
    errors: &mut ValidationErrors,
) -> Option<PageRequest> {
    match PageRequest::new(page, size) {
        Ok(p) => Some(p),
        Err(e) => {
            errors.extend_under("", e);
            None
        }
    }
}

/// The metadata key a token-list parameter filters on: `metadata.<key>`, or the deepObject
/// form `metadata[<key>]` that Basis Theory's Python SDK sends (everything between the first
/// `[` and the last `]` is the key, brackets included). `None` for any other parameter.
fn metadata_key(parameter: &str) -> Option<&str> {
    parameter.strip_prefix("metadata.").or_else(|| {
        parameter
            .strip_prefix("metadata[")
            .and_then(|rest| rest.strip_suffix(']'))
    })
}

/// Parses a token-list query.
pub(crate) fn token_list(query: &str) -> Result<TokenListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = TokenFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<TokenId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a token id")),
            },
            "type" => match TokenType::parse(&value) {
                Some(t) => filter.types.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not a token type (token, card, bank)"),
                ),
            },
            k => match metadata_key(k) {
                Some(meta_key) if has_nul(meta_key) || has_nul(&value) => {
                    errors.add("metadata", format!("filters {NUL_MESSAGE}"));
                }
                Some(meta_key) if !meta_key.is_empty() => {
                    filter
                        .metadata
                        .push((meta_key.to_string(), value.into_owned()));
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    tessera_domain::metadata::bound_filter(filter.metadata.len(), "metadata", &mut errors);
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(TokenListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

/// The query of `GET /v2/tokens` [`token_list_v2`] accepts (OpenAPI description only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct TokenListV2Params {
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    token_type: Option<Vec<TokenType>>,
    /// A container path the token's container must start with (`/pci/` matches `/pci/high/`).
    container: Option<String>,
    /// The fingerprint a token must have (64 hexadecimal digits).
    fingerprint: Option<String>,
    /// Exact metadata pairs, all of which must be present (at most 10), as a JSON object of
    /// strings: `metadata={"customer":"c_42"}` (URL-encoded), as Basis Theory's node SDK sends
    /// it. `metadata.<key>=<value>` and `metadata[<key>]=<value>` are accepted too.
    metadata: Option<String>,
    /// The cursor a previous page answered as `pagination.next`; absent: the first page.
    start: Option<String>,
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 20)]
    size: Option<u32>,
}

/// Records that `key` was given twice when `present`; `true` when it was not.
fn first_time(present: bool, key: &str, errors: &mut ValidationErrors) -> bool {
    if present {
        errors.add(key.to_string(), "may be given once");
    }
    !present
}

/// Parses a `GET /v2/tokens` query into criteria (checked as `POST /tokens/search` checks
/// them) and a cursor page.
pub(crate) fn token_list_v2(query: &str) -> Result<ValidWalk, ApiError> {
    let mut input = TokenSearchRequest::default();
    let (mut start, mut size) = (None, None);
    let mut metadata = tessera_domain::metadata::Metadata::new();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "type" => match TokenType::parse(&value) {
                Some(t) => input.types.get_or_insert_with(Vec::new).push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not a token type (token, card, bank)"),
                ),
            },
            "container" if first_time(input.container.is_some(), "container", &mut errors) => {
                input.container = Some(value.into_owned());
            }
            "fingerprint"
                if first_time(input.fingerprint.is_some(), "fingerprint", &mut errors) =>
            {
                input.fingerprint = Some(value.into_owned());
            }
            "start" if first_time(start.is_some(), "start", &mut errors) => {
                start = Some(value.into_owned());
            }
            "size" if first_time(size.is_some(), "size", &mut errors) => {
                size = Some(parse_int(&value).unwrap_or(i64::MIN));
            }
            "metadata" => {
                match serde_json::from_str::<tessera_domain::metadata::Metadata>(&value) {
                    Ok(pairs) => metadata.extend(pairs),
                    Err(_) => errors.add("metadata", "must be a JSON object of strings"),
                }
            }
            "container" | "fingerprint" | "start" | "size" => {}
            k => match metadata_key(k) {
                Some(meta_key) if !meta_key.is_empty() => {
                    metadata.insert(meta_key.to_string(), value.into_owned());
                }
                _ => errors.add(k.to_string(), "is not a known query parameter"),
            },
        }
    }
    if !metadata.is_empty() {
        input.metadata = Some(metadata);
    }
    input.size = size;
    let valid = input.validate();
    if let Err(e) = &valid {
        errors.extend_under("", e.clone());
    }
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    let valid = valid.map_err(|e| ApiError::validation(&e))?;
    Ok(ValidWalk {
        search: valid.search,
        page: CursorRequest {
            start,
            size: valid.page.size(),
        },
    })
}

/// A parsed proxy-list query.
#[derive(Debug, Clone)]
pub(crate) struct ProxyListQuery {
    /// Filters.
    pub filter: ProxyFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses a proxy-list query: `id` (repeatable), `name` (case-insensitive substring, `*`
/// matches any run), `page`, `size`.
pub(crate) fn proxy_list(query: &str) -> Result<ProxyListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = ProxyFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<ProxyId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not a proxy id")),
            },
            "name" if filter.name_like.is_some() => errors.add("name", "may be given once"),
            "name" if has_nul(&value) => errors.add("name", NUL_MESSAGE),
            "name" => filter.name_like = Some(name_like_pattern(&value)),
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ProxyListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

/// The application-list filters [`application_list`] accepts besides [`PageParams`] (OpenAPI
/// description only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct ApplicationListParams {
    /// Only these ids (repeat the key for several; at most 100).
    #[param(style = Form, explode)]
    id: Option<Vec<uuid::Uuid>>,
    /// Only these types (repeat the key for several).
    #[param(rename = "type", style = Form, explode, inline)]
    app_type: Option<Vec<tessera_domain::ApplicationType>>,
}

/// Most `id` filters an application list takes.
const MAX_APPLICATION_IDS: usize = 100;

/// A parsed application-list query.
#[derive(Debug, Clone)]
pub(crate) struct ApplicationListQuery {
    /// Filters.
    pub filter: ApplicationFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses an application-list query: `id` and `type` (each repeatable, as Basis Theory's SDKs
/// send them), `page`, `size`.
pub(crate) fn application_list(query: &str) -> Result<ApplicationListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = ApplicationFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "id" => match value.parse::<tessera_domain::ApplicationId>() {
                Ok(id) => filter.ids.push(id),
                Err(_) => errors.add("id", format!("`{value}` is not an application id")),
            },
            "type" => match tessera_domain::ApplicationType::parse(&value) {
                Some(t) => filter.types.push(t),
                None => errors.add(
                    "type",
                    format!("`{value}` is not an application type (private, public, management)"),
                ),
            },
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if filter.ids.len() > MAX_APPLICATION_IDS {
        errors.add(
            "id",
            format!("may be given at most {MAX_APPLICATION_IDS} times"),
        );
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(ApplicationListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

/// Refuses any parameter of a query that takes none (a 400 naming each).
pub(crate) fn none(query: &str) -> Result<(), ApiError> {
    let mut errors = ValidationErrors::new();
    for (key, _) in form_urlencoded::parse(query.as_bytes()) {
        errors.add(key.to_string(), "is not a known query parameter");
    }
    errors.into_result().map_err(|e| ApiError::validation(&e))
}

/// The audit-event filters [`audit_list`] accepts besides [`PageParams`] (OpenAPI description
/// only).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the OpenAPI derive, never constructed
pub(crate) struct AuditListParams {
    /// Only these actions, e.g. `token.read` (repeat the key for several).
    #[param(style = Form, explode)]
    action: Option<Vec<String>>,
    /// Only events naming this token, application or proxy.
    resource_id: Option<uuid::Uuid>,
    /// Only events by this application id, or `anonymous`.
    actor: Option<String>,
    /// `success` or `denied`.
    outcome: Option<String>,
    /// Events at or after this instant (RFC 3339).
    from: Option<String>,
    /// Events before this instant (RFC 3339).
    to: Option<String>,
}

/// A parsed audit-event query.
#[derive(Debug, Clone)]
pub(crate) struct AuditListQuery {
    /// Filters.
    pub filter: AuditFilter,
    /// Page.
    pub page: PageRequest,
}

/// Parses an audit-event query: `action` (repeatable), `resource_id`, `actor`, `outcome`,
/// `from`, `to`, `page`, `size`.
pub(crate) fn audit_list(query: &str) -> Result<AuditListQuery, ApiError> {
    let (mut page, mut size) = (None, None);
    let mut filter = AuditFilter::default();
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        let once = |present: bool, errors: &mut ValidationErrors| {
            if present {
                errors.add(key.to_string(), "may be given once");
            }
            !present
        };
        match key.as_ref() {
            "page" | "size" => page_param(&key, &value, &mut page, &mut size),
            "action" => match value.parse::<AuditAction>() {
                Ok(action) => filter.actions.push(action),
                Err(e) => errors.add("action", e.to_string()),
            },
            "resource_id" if once(filter.resource_id.is_some(), &mut errors) => {
                match value.parse() {
                    Ok(id) => filter.resource_id = Some(id),
                    Err(_) => errors.add("resource_id", format!("`{value}` is not an id")),
                }
            }
            "actor" if once(filter.actor.is_some(), &mut errors) => match Actor::parse(&value) {
                Some(actor) => filter.actor = Some(actor),
                None => errors.add(
                    "actor",
                    format!("`{value}` is not an application id, `anonymous` or `operator`"),
                ),
            },
            "outcome" if once(filter.outcome.is_some(), &mut errors) => {
                match Outcome::parse(&value) {
                    Some(outcome) => filter.outcome = Some(outcome),
                    None => errors.add("outcome", "must be `success` or `denied`"),
                }
            }
            "from" if once(filter.from.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => filter.from = Some(at),
                None => errors.add("from", "must be an RFC 3339 date-time"),
            },
            "to" if once(filter.to.is_some(), &mut errors) => match timestamp::parse(&value) {
                Some(at) => filter.to = Some(at),
                None => errors.add("to", "must be an RFC 3339 date-time"),
            },
            "resource_id" | "actor" | "outcome" | "from" | "to" => {}
            other => errors.add(other.to_string(), "is not a known query parameter"),
        }
    }
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if from > to {
            errors.add("from", "must not be after `to`");
        }
    }
    let request = finish_page(page, size, &mut errors);
    errors.into_result().map_err(|e| ApiError::validation(&e))?;
    Ok(AuditListQuery {
        filter,
        page: request.ok_or_else(|| ApiError::field("page", "invalid"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "id=nope",
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
        assert_eq!(q.filter.resource_id, Some(resource));
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
            ("resource_id=nope", "resource_id"),
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
