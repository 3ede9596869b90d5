//! Permission evaluation: who may do what, and on which containers.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
};

use serde::{Deserialize, Serialize};

use crate::{
    application::{Application, ApplicationType, Rule},
    container::Container,
    error::VaultError,
    ids::{ApplicationId, TenantId},
    origin::Origin,
    permission::Permission,
};

/// An authenticated caller: an application of one tenant, with its permissions resolved.
#[derive(Debug, Clone)]
pub struct Principal {
    tenant_id: TenantId,
    application_id: ApplicationId,
    app_type: ApplicationType,
    permissions: BTreeSet<Permission>,
    /// Sorted by priority, lowest first.
    rules: Vec<Rule>,
    /// After this instant the application's keys, and anything acting as it, are refused.
    expires_at: Option<time::OffsetDateTime>,
    /// A public application's browser origins (empty for other types).
    allowed_origins: Arc<[Origin]>,
    /// Where the checks this caller passes are written down, when asked (see
    /// [`Principal::recording`]); `None` on every hot path.
    log: Option<Arc<Mutex<Vec<GrantCheck>>>>,
}

/// A permission check a call passed. An idempotent request's checks are kept with its answer,
/// so that a replay is answered only to a caller that would pass them again today (otherwise a
/// replay would return a minted key after the permission to mint it was revoked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum GrantCheck {
    /// A tenant-wide permission ([`Principal::require`]).
    Tenant {
        /// The permission.
        permission: Permission,
    },
    /// A permission on some container ([`Principal::require_somewhere`]).
    Somewhere {
        /// The permission.
        permission: Permission,
    },
    /// A permission on one container ([`Principal::require_on`], or a fingerprint shown).
    On {
        /// The permission.
        permission: Permission,
        /// The container.
        container: Container,
    },
    /// Holding every grant of an application ([`Principal::require_covers`]).
    Covers {
        /// Its tenant-wide permissions.
        permissions: Vec<Permission>,
        /// Its rules.
        rules: Vec<Rule>,
    },
}

impl Principal {
    /// Resolves an application's grants.
    pub fn new(app: &Application) -> Self {
        let mut rules = app.rules.clone();
        rules.sort_by_key(|r| r.priority);
        Self {
            tenant_id: app.tenant_id,
            application_id: app.id,
            app_type: app.app_type,
            permissions: app.permissions.iter().copied().collect(),
            rules,
            expires_at: app.expires_at,
            allowed_origins: app.allowed_origins.iter().cloned().collect(),
            log: None,
        }
    }

    /// Whether a page on `origin` may use this caller's key from a browser: only a `public`
    /// application that lists that exact origin (docs/api.md, "Browsers and CORS").
    pub fn allows_browser_origin(&self, origin: &str) -> bool {
        self.app_type == ApplicationType::Public
            && self.allowed_origins.iter().any(|o| o.as_str() == origin)
    }

    /// The browser origins a public application lists (empty for other types).
    pub fn allowed_origins(&self) -> &[Origin] {
        &self.allowed_origins
    }

    /// Whether the application has expired at `now`: its keys are refused, and so is acting
    /// as it (a proxy's `req.svc`).
    pub fn is_expired(&self, now: time::OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// About how many bytes this principal owns on the heap (its permissions and rules), for
    /// the byte budgets of the caches that keep principals.
    pub fn heap_bytes(&self) -> usize {
        let permissions = self.permissions.len() * (std::mem::size_of::<Permission>() + 16);
        let rules = self.rules.capacity() * std::mem::size_of::<Rule>();
        let origins = self
            .allowed_origins
            .iter()
            .map(|o| o.as_str().len() + std::mem::size_of::<Origin>())
            .sum::<usize>();
        self.rules
            .iter()
            .fold(permissions + rules + origins, |n, rule| {
                n + rule.container.as_str().len()
                    + rule.description.as_ref().map_or(0, String::capacity)
                    + rule.permissions.capacity() * std::mem::size_of::<Permission>()
            })
    }

    /// This caller, writing down every check it passes from now on (the returned principal
    /// and its clones share one list; `self` is unaffected).
    pub fn recording(&self) -> Self {
        Self {
            log: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// The checks passed since [`Principal::recording`], in order.
    pub fn checks_passed(&self) -> Vec<GrantCheck> {
        self.log
            .as_ref()
            .and_then(|log| log.lock().ok().map(|l| l.clone()))
            .unwrap_or_default()
    }

    fn passed(&self, check: impl FnOnce() -> GrantCheck) {
        if let Some(log) = &self.log {
            if let Ok(mut log) = log.lock() {
                log.push(check());
            }
        }
    }

    /// Passes `check` again: `Ok` when this caller would pass it today.
    pub fn require_again(&self, check: &GrantCheck) -> Result<(), VaultError> {
        match check {
            GrantCheck::Tenant { permission } => self.require(*permission),
            GrantCheck::Somewhere { permission } => self.require_somewhere(*permission),
            GrantCheck::On {
                permission,
                container,
            } => self.require_on(*permission, container),
            GrantCheck::Covers { permissions, rules } => {
                self.require_covers(Grants { permissions, rules })
            }
        }
    }

    /// Whether the caller may be shown what only holders of `permission` on `container` see
    /// (a token's fingerprint): [`Principal::may_on`], written down when it is shown.
    pub fn may_see(&self, permission: Permission, container: &Container) -> bool {
        let may = self.may_on(permission, container);
        if may {
            self.passed(|| GrantCheck::On {
                permission,
                container: container.clone(),
            });
        }
        may
    }

    /// The caller's tenant; every operation is confined to it.
    pub fn tenant_id(&self) -> TenantId {
        self.tenant_id
    }

    /// The calling application, recorded as `created_by`/`modified_by`.
    pub fn application_id(&self) -> ApplicationId {
        self.application_id
    }

    /// The calling application's type.
    pub fn app_type(&self) -> ApplicationType {
        self.app_type
    }

    /// True when the caller has no container rules, so a token permission in `permissions`
    /// applies everywhere (lets list queries skip per-container filtering).
    pub fn is_unscoped(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether the caller holds `permission` on a token in `container`.
    ///
    /// Rules covering the container are taken in priority order and the first one decides;
    /// `token:*` entries of `permissions` act as a last rule on `/`.
    pub fn may_on(&self, permission: Permission, container: &Container) -> bool {
        match self.rules.iter().find(|r| r.container.contains(container)) {
            Some(rule) => rule.permissions.contains(&permission),
            None => self.permissions.contains(&permission),
        }
    }

    /// Whether the caller holds `permission` anywhere: tenant-wide or in some rule.
    pub fn may_somewhere(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
            || self
                .rules
                .iter()
                .any(|r| r.permissions.contains(&permission))
    }

    /// `Ok` when the caller holds the tenant-wide `permission`, else 403.
    pub fn require(&self, permission: Permission) -> Result<(), VaultError> {
        if self.permissions.contains(&permission) {
            self.passed(|| GrantCheck::Tenant { permission });
            Ok(())
        } else {
            Err(VaultError::Forbidden {
                permission,
                container: None,
            })
        }
    }

    /// `Ok` when the caller holds `permission` on some container (a cheap first check before
    /// looking anything up), else 403.
    pub fn require_somewhere(&self, permission: Permission) -> Result<(), VaultError> {
        if self.may_somewhere(permission) {
            self.passed(|| GrantCheck::Somewhere { permission });
            Ok(())
        } else {
            Err(VaultError::Forbidden {
                permission,
                container: None,
            })
        }
    }

    /// `Ok` when the caller holds `permission` on `container`, else 403 naming it.
    pub fn require_on(
        &self,
        permission: Permission,
        container: &Container,
    ) -> Result<(), VaultError> {
        if self.may_on(permission, container) {
            self.passed(|| GrantCheck::On {
                permission,
                container: container.clone(),
            });
            Ok(())
        } else {
            Err(VaultError::Forbidden {
                permission,
                container: Some(container.clone()),
            })
        }
    }
}

/// A set of grants another caller asks to hand out: an application's tenant-wide
/// `permissions` and its container `rules`, evaluated exactly as a [`Principal`]'s are.
#[derive(Debug, Clone, Copy)]
pub struct Grants<'a> {
    /// Tenant-wide permissions (`token:*` among them act as a last rule on `/`).
    pub permissions: &'a [Permission],
    /// Container rules, in any order (priority decides).
    pub rules: &'a [Rule],
}

impl<'a> Grants<'a> {
    /// An application's grants.
    pub fn of(app: &'a Application) -> Self {
        Self {
            permissions: &app.permissions,
            rules: &app.rules,
        }
    }

    /// Whether these grants allow `permission` on `container` (first rule by priority that
    /// covers it, else the tenant-wide permissions).
    fn allow(&self, permission: Permission, container: &Container) -> bool {
        match self
            .rules
            .iter()
            .filter(|r| r.container.contains(container))
            .min_by_key(|r| r.priority)
        {
            Some(rule) => rule.permissions.contains(&permission),
            None => self.permissions.contains(&permission),
        }
    }
}

impl Principal {
    /// `Ok` when the caller holds everything `grants` allow, so that it may create an
    /// application with them, give them to one, or issue a key for one (docs/api.md, "No escalation": no
    /// caller can grant, or obtain a key for, permissions it does not hold itself). Else 403
    /// naming the first permission (and container) the caller lacks.
    ///
    /// Token permissions depend on the container, but only through which rules cover it: every
    /// container is decided, on both sides, like the deepest rule container of either side that
    /// covers it, or like a container no rule covers. Checking those finitely many
    /// representatives checks every container.
    pub fn require_covers(&self, grants: Grants<'_>) -> Result<(), VaultError> {
        let escalation = |permission, container| VaultError::Escalation {
            permission,
            container,
        };
        for &p in grants.permissions.iter().filter(|p| !p.is_token()) {
            if !self.permissions.contains(&p) {
                return Err(escalation(p, None));
            }
        }
        let mut representatives: BTreeSet<Container> = grants
            .rules
            .iter()
            .chain(&self.rules)
            .map(|r| r.container.clone())
            .collect();
        representatives.insert(outside(&representatives));
        for container in &representatives {
            for &p in Permission::ALL.iter().filter(|p| p.is_token()) {
                if grants.allow(p, container) && !self.may_on(p, container) {
                    return Err(escalation(p, Some(container.clone())));
                }
            }
        }
        self.passed(|| GrantCheck::Covers {
            permissions: grants.permissions.to_vec(),
            rules: grants.rules.to_vec(),
        });
        Ok(())
    }
}

/// A container that none of `rule_containers` covers except the root: one whose first segment
/// is no rule's first segment.
fn outside(rule_containers: &BTreeSet<Container>) -> Container {
    let firsts: BTreeSet<&str> = rule_containers
        .iter()
        .filter_map(|c| c.as_str().split('/').nth(1).filter(|s| !s.is_empty()))
        .collect();
    let mut name = String::from("-");
    while firsts.contains(name.as_str()) {
        name.push('-');
    }
    // Hyphens are a valid segment, so this always parses.
    Container::parse(&format!("/{name}/")).unwrap_or_else(|_| Container::root())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp;
    use Permission::*;

    fn principal(
        permissions: Vec<Permission>,
        rules: Vec<(i32, &str, Vec<Permission>)>,
    ) -> Principal {
        let id = ApplicationId::new();
        let now = timestamp::now();
        Principal::new(&Application {
            permissions,
            rules: rules
                .into_iter()
                .map(|(priority, c, permissions)| Rule {
                    description: None,
                    priority,
                    container: Container::parse(c).expect("container"),
                    permissions,
                })
                .collect(),
            ..Application::new(
                id,
                TenantId::new(),
                "t",
                ApplicationType::Private,
                (id, now),
            )
        })
    }

    fn c(s: &str) -> Container {
        Container::parse(s).expect("container")
    }

    #[test]
    fn plain_permissions_apply_to_every_container() {
        let p = principal(vec![TokenRead], vec![]);
        assert!(p.may_on(TokenRead, &c("/pci/high/")));
        assert!(!p.may_on(TokenUse, &c("/pci/high/")));
        assert!(p.is_unscoped());
    }

    #[test]
    fn first_matching_rule_by_priority_decides() {
        // Priority 1 denies everything under /pci/high/, priority 2 allows /pci/.
        let p = principal(
            vec![],
            vec![
                (2, "/pci/", vec![TokenRead, TokenUse]),
                (1, "/pci/high/", vec![TokenUse]),
            ],
        );
        assert!(p.may_on(TokenUse, &c("/pci/high/")));
        assert!(
            !p.may_on(TokenRead, &c("/pci/high/")),
            "rule 1 decides and lacks read"
        );
        assert!(p.may_on(TokenRead, &c("/pci/low/")));
        assert!(!p.may_on(TokenRead, &c("/general/")), "no rule matches");
    }

    #[test]
    fn permissions_act_as_last_rule_on_root() {
        let p = principal(vec![TokenRead], vec![(1, "/pci/", vec![TokenUse])]);
        assert!(p.may_on(TokenRead, &c("/general/")));
        assert!(
            !p.may_on(TokenRead, &c("/pci/x/")),
            "the /pci/ rule shadows the fallback"
        );
        assert!(p.may_somewhere(TokenUse));
        assert!(!p.may_somewhere(TokenDelete));
    }

    fn rule(priority: i32, c: &str, permissions: Vec<Permission>) -> Rule {
        Rule {
            description: None,
            priority,
            container: Container::parse(c).expect("container"),
            permissions,
        }
    }

    fn covers(caller: &Principal, permissions: &[Permission], rules: &[Rule]) -> bool {
        caller.require_covers(Grants { permissions, rules }).is_ok()
    }

    #[test]
    fn management_permissions_are_granted_only_by_holders() {
        let caller = principal(vec![ApplicationCreate, ProxyRead], vec![]);
        assert!(covers(&caller, &[ProxyRead], &[]));
        assert!(covers(&caller, &[ApplicationCreate], &[]));
        match caller.require_covers(Grants {
            permissions: &[ProxyRead, ApplicationUpdate],
            rules: &[],
        }) {
            Err(VaultError::Escalation {
                permission,
                container,
            }) => assert_eq!((permission, container), (ApplicationUpdate, None)),
            other => panic!("expected an escalation, got {other:?}"),
        }
        assert!(!covers(&caller, &[TokenCreate], &[]), "no token grants");
    }

    #[test]
    fn token_grants_are_compared_container_by_container() {
        let pci_reader = principal(vec![], vec![(1, "/pci/", vec![TokenRead, TokenUse])]);
        assert!(covers(
            &pci_reader,
            &[],
            &[rule(1, "/pci/high/", vec![TokenRead])]
        ));
        assert!(!covers(
            &pci_reader,
            &[],
            &[rule(1, "/bank/", vec![TokenRead])]
        ));
        assert!(!covers(&pci_reader, &[TokenRead], &[]), "everywhere");
        // Narrowed by the grantee's own higher-priority rule: only /pci/ remains.
        assert!(covers(
            &pci_reader,
            &[TokenRead],
            &[rule(1, "/", vec![]), rule(0, "/pci/", vec![TokenRead])]
        ));
        assert!(!covers(
            &pci_reader,
            &[],
            &[rule(1, "/pci/", vec![TokenDelete])]
        ));
    }

    #[test]
    fn a_callers_rule_shadowing_its_permissions_is_respected() {
        // Reads everywhere except under /pci/, where a rule grants only use.
        let caller = principal(vec![TokenRead], vec![(1, "/pci/", vec![TokenUse])]);
        assert!(!covers(&caller, &[TokenRead], &[]), "not on /pci/");
        assert!(covers(&caller, &[], &[rule(1, "/bank/", vec![TokenRead])]));
        assert!(!covers(
            &caller,
            &[],
            &[rule(1, "/pci/x/", vec![TokenRead])]
        ));
        // A root rule covers every container, permissions or not.
        let root = principal(vec![], vec![(1, "/", vec![TokenRead, TokenCreate])]);
        assert!(covers(&root, &[TokenRead, TokenCreate], &[]));
        assert!(!covers(&root, &[TokenUse], &[]));
    }

    #[test]
    fn a_recording_caller_lists_the_checks_it_passed_and_they_can_be_run_again() {
        let app = principal(
            vec![ApplicationCreate],
            vec![(1, "/pci/", vec![TokenCreate])],
        );
        let recording = app.recording();
        let clone = recording.clone();
        clone.require(ApplicationCreate).expect("held");
        clone.require_on(TokenCreate, &c("/pci/x/")).expect("held");
        assert!(clone.require_on(TokenRead, &c("/pci/x/")).is_err());
        assert!(clone.may_see(TokenCreate, &c("/pci/")));
        let passed = recording.checks_passed();
        assert_eq!(passed.len(), 3, "refusals are not listed: {passed:?}");
        assert!(
            app.checks_passed().is_empty(),
            "the original does not record"
        );
        let json = serde_json::to_string(&passed).expect("serialise");
        let back: Vec<GrantCheck> = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, passed);
        for check in &back {
            app.require_again(check).expect("still held");
        }
        let narrower = principal(vec![], vec![(1, "/pci/", vec![TokenCreate])]);
        assert!(narrower.require_again(&back[0]).is_err());
        assert!(narrower.require_again(&back[1]).is_ok());
    }

    #[test]
    fn require_reports_permission_and_container() {
        let p = principal(vec![], vec![(1, "/pci/", vec![TokenRead])]);
        match p.require_on(TokenRead, &c("/bank/")) {
            Err(VaultError::Forbidden {
                permission,
                container,
            }) => {
                assert_eq!(permission, TokenRead);
                assert_eq!(container, Some(c("/bank/")));
            }
            other => panic!("expected forbidden, got {other:?}"),
        }
        assert!(p.require(ProxyRead).is_err());
        assert!(p.require_somewhere(TokenRead).is_ok());
    }
}
