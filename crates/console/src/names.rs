//! Application names for the ids pages show (who created a token, who acted in the audit
//! trail): looked up once per page, through the vault, as the signed-in application.
//!
//! The lookup is `Vault::find_applications` with an id filter: it needs `application:read`
//! and reads only the signed-in tenant's applications, so a key without that permission, an
//! id of another tenant and an application since deleted all show the bare id
//! (docs/console.md, "Names").

use std::collections::{BTreeMap, BTreeSet};

use tessera_domain::{
    store::ApplicationFilter, ApplicationId, PageRequest, Permission, Principal, Vault,
};

/// Names by application id; an id missing here is shown as itself.
#[derive(Debug, Default)]
pub(crate) struct Names {
    by_id: BTreeMap<ApplicationId, String>,
}

/// Most ids asked for in one lookup (the API's largest page).
const CHUNK: usize = tessera_domain::pagination::MAX_SIZE as usize;

impl Names {
    /// No name known: every id is shown as itself.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// The names of `ids`, looked up at once (one query per hundred distinct ids) as the
    /// signed-in application. Without `application:read`, or when the lookup fails, none.
    pub(crate) async fn of(
        vault: &Vault,
        principal: &Principal,
        ids: impl IntoIterator<Item = ApplicationId>,
    ) -> Self {
        let mut names = Self::none();
        if !principal.may_somewhere(Permission::ApplicationRead) {
            return names;
        }
        let wanted: Vec<ApplicationId> = ids
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for chunk in wanted.chunks(CHUNK) {
            let filter = ApplicationFilter {
                ids: chunk.to_vec(),
                ..ApplicationFilter::default()
            };
            let Ok(page) = PageRequest::new(Some(1), i64::try_from(chunk.len()).ok()) else {
                continue;
            };
            match vault.find_applications(principal, &filter, page).await {
                Ok(found) => names
                    .by_id
                    .extend(found.items.into_iter().map(|a| (a.id, a.name))),
                Err(e) => {
                    tracing::debug!(error = %e, "application names not looked up");
                    return names;
                }
            }
        }
        names
    }

    /// The name of `id`, when it was found.
    pub(crate) fn get(&self, id: &ApplicationId) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    /// With `id` named `name` (the signed-in application, whose name is known already).
    pub(crate) fn with(mut self, id: ApplicationId, name: Option<&str>) -> Self {
        if let Some(name) = name {
            self.by_id.entry(id).or_insert_with(|| name.to_string());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_id_has_no_name() {
        let id = ApplicationId::new();
        let names = Names::none();
        assert_eq!(names.get(&id), None);
        let names = names.with(id, Some("checkout"));
        assert_eq!(names.get(&id), Some("checkout"));
        assert_eq!(names.get(&ApplicationId::new()), None);
    }
}
