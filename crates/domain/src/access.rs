//! Permission evaluation: who may do what, and on which containers.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
};

use serde::{Deserialize, Serialize};

use crate::{
    application::{Application, ApplicationType, Rule},
    container::Container,
    data_transform::DataTransform,
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
    /// What permissions granted without rules show of token data (the deployment's
    /// `--implicit-transform`; [`DataTransform::Reveal`] unless set).
    implicit: DataTransform,
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
    /// Being shown at least `transform` of the data in `container`, acting with `permission`
    /// ([`Principal::shown_on`]): a replay shows no more than the caller would see today.
    Shown {
        /// The permission acted with.
        permission: Permission,
        /// The container.
        container: Container,
        /// What the answer showed.
        transform: DataTransform,
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
    ///
    /// An application holding every other permission holds those added since
    /// ([`Permission::LATER`]: `token:search`, the `webhook:*` ones) too: it was written down
    /// before they existed (the bootstrap admin of an older tenant is one).
    pub fn new(app: &Application) -> Self {
        let mut rules = app.rules.clone();
        rules.sort_by_key(|r| r.priority);
        let mut permissions: BTreeSet<Permission> = app.permissions.iter().copied().collect();
        if Permission::ALL
            .iter()
            .all(|p| Permission::LATER.contains(p) || permissions.contains(p))
        {
            permissions.extend(Permission::LATER);
        }
        Self {
            tenant_id: app.tenant_id,
            application_id: app.id,
            app_type: app.app_type,
            permissions,
            rules,
            expires_at: app.expires_at,
            allowed_origins: app.allowed_origins.iter().cloned().collect(),
            implicit: DataTransform::Reveal,
            log: None,
        }
    }

    /// This caller under a deployment whose permissions granted without rules show token data
    /// as `implicit` (`--implicit-transform`; docs/api.md, "Transforms").
    pub fn with_implicit_transform(mut self, implicit: DataTransform) -> Self {
        self.implicit = implicit;
        self
    }

    /// What the answers to this caller show of the data of a token in `container`, for an
    /// operation needing `permission`: the first rule by priority that covers the container
    /// decides, as it decides the permission; without one, `token:use` reveals (proxies) and
    /// every other permission takes the deployment's implicit transform.
    pub fn transform_on(&self, permission: Permission, container: &Container) -> DataTransform {
        match self.rules.iter().find(|r| r.container.contains(container)) {
            Some(rule) => rule.transform,
            None if permission == Permission::TokenUse => DataTransform::Reveal,
            None => self.implicit,
        }
    }

    /// The most a caller may give another application to see of the data in `container`: its
    /// deciding rule's transform, or `reveal` where its permissions come without rules. The
    /// implicit transform is what such permissions show their holder by default, not a
    /// bound on what it may grant: under `--implicit-transform mask` the bootstrap admin still
    /// creates applications whose rules reveal (docs/api.md, "No escalation").
    pub fn transform_ceiling(&self, container: &Container) -> DataTransform {
        self.rules
            .iter()
            .find(|r| r.container.contains(container))
            .map_or(DataTransform::Reveal, |r| r.transform)
    }

    /// Whether the caller may read the plaintext of tokens in `container`: `token:read` there
    /// under a `reveal` transform. What answers whether a guess equals stored data (a
    /// fingerprint, deduplication, `data:` and `fingerprint:` search terms) needs it, or a
    /// mask reader could recover what its mask hides (docs/api.md, "Transforms").
    pub fn may_reveal(&self, container: &Container) -> bool {
        self.may_reveal_by(Permission::TokenRead, container)
    }

    /// [`Principal::may_reveal`] for a search (`permission` `token:search`, which
    /// `token:read` also allows) or a read (`token:read`).
    pub fn may_reveal_by(&self, permission: Permission, container: &Container) -> bool {
        self.may_access(permission, container)
            && self.transform_on(permission, container) == DataTransform::Reveal
    }

    /// Whether [`Principal::may_reveal_by`] holds on some container: `permission` granted
    /// without rules under an implicit `reveal`, or by a rule that reveals.
    pub fn may_reveal_somewhere(&self, permission: Permission) -> bool {
        let grants = |ps: &[Permission]| {
            ps.contains(&permission)
                || (permission == Permission::TokenSearch && ps.contains(&Permission::TokenRead))
        };
        let plain: Vec<Permission> = self.permissions.iter().copied().collect();
        (self.implicit == DataTransform::Reveal && grants(&plain))
            || self
                .rules
                .iter()
                .any(|r| r.transform == DataTransform::Reveal && grants(&r.permissions))
    }

    /// [`Principal::may_on`], where `token:read` allows searching too
    /// ([`Principal::may_search_on`]).
    pub fn may_access(&self, permission: Permission, container: &Container) -> bool {
        match permission {
            Permission::TokenSearch => self.may_search_on(container),
            p => self.may_on(p, container),
        }
    }

    /// `Ok` when the caller may read the plaintext in `container` ([`Principal::may_reveal`]),
    /// else 403 naming `token:read` there (with a `reveal` transform).
    pub fn require_reveal(&self, container: &Container) -> Result<(), VaultError> {
        self.require_on(Permission::TokenRead, container)?;
        if self.may_reveal(container) {
            self.passed(|| GrantCheck::Shown {
                permission: Permission::TokenRead,
                container: container.clone(),
                transform: DataTransform::Reveal,
            });
            Ok(())
        } else {
            Err(VaultError::RevealNeeded(container.clone()))
        }
    }

    /// Whether the caller may search tokens in `container`: `token:search` or `token:read`
    /// there.
    pub fn may_search_on(&self, container: &Container) -> bool {
        self.may_on(Permission::TokenSearch, container)
            || self.may_on(Permission::TokenRead, container)
    }

    /// `Ok` when the caller may act with `permission` somewhere; for `token:search`,
    /// `token:read` somewhere does too. Else 403.
    pub fn require_access_somewhere(&self, permission: Permission) -> Result<(), VaultError> {
        if permission == Permission::TokenSearch && !self.may_somewhere(permission) {
            self.require_somewhere(Permission::TokenRead)
        } else {
            self.require_somewhere(permission)
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
            GrantCheck::Shown {
                permission,
                container,
                transform,
            } => {
                self.require_on(*permission, container)?;
                if self.transform_on(*permission, container) >= *transform {
                    Ok(())
                } else {
                    Err(VaultError::RevealNeeded(container.clone()))
                }
            }
            GrantCheck::Covers { permissions, rules } => {
                self.require_covers(Grants { permissions, rules })
            }
        }
    }

    /// Whether the caller may be shown what only holders of `permission` on `container` see
    /// (a token's fingerprint): [`Principal::may_on`], and for `token:read` a `reveal`
    /// transform there too ([`Principal::may_reveal`]); written down when it is shown.
    pub fn may_see(&self, permission: Permission, container: &Container) -> bool {
        let may = self.may_on(permission, container)
            && (permission != Permission::TokenRead || self.may_reveal(container));
        if may {
            self.passed(|| GrantCheck::Shown {
                permission,
                container: container.clone(),
                transform: self.transform_on(permission, container),
            });
        }
        may
    }

    /// What an answer shows this caller, acting with `permission`, of the data of a token in
    /// `container` ([`Principal::transform_on`]), written down when it shows anything.
    pub fn shown_on(&self, permission: Permission, container: &Container) -> DataTransform {
        let transform = self.transform_on(permission, container);
        if transform > DataTransform::Redact {
            self.passed(|| GrantCheck::Shown {
                permission,
                container: container.clone(),
                transform,
            });
        }
        transform
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
        match self.deciding_rule(container) {
            Some(rule) => rule.permissions.contains(&permission),
            None => self.permissions.contains(&permission),
        }
    }

    /// What these grants show of the data in `container` (the deciding rule's transform, else
    /// `implicit`), when they allow an operation whose answers carry data there.
    fn shown(&self, container: &Container, implicit: DataTransform) -> Option<DataTransform> {
        let shows_data = [
            Permission::TokenRead,
            Permission::TokenSearch,
            Permission::TokenCreate,
            Permission::TokenUpdate,
        ]
        .into_iter()
        .any(|p| self.allow(p, container));
        shows_data.then(|| {
            self.deciding_rule(container)
                .map_or(implicit, |r| r.transform)
        })
    }

    fn deciding_rule(&self, container: &Container) -> Option<&'a Rule> {
        self.rules
            .iter()
            .filter(|r| r.container.contains(container))
            .min_by_key(|r| r.priority)
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
            let held = self.transform_ceiling(container);
            match grants.shown(container, self.implicit) {
                Some(transform) if transform > held => {
                    return Err(VaultError::TransformEscalation {
                        transform,
                        held,
                        container: container.clone(),
                    })
                }
                _ => {}
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
                    transform: DataTransform::Reveal,
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
            transform: DataTransform::Reveal,
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

    fn with_transform(mut rule: Rule, transform: DataTransform) -> Rule {
        rule.transform = transform;
        rule
    }

    fn principal_with(permissions: Vec<Permission>, rules: Vec<Rule>) -> Principal {
        let id = ApplicationId::new();
        Principal::new(&Application {
            permissions,
            rules,
            ..Application::new(
                id,
                TenantId::new(),
                "t",
                ApplicationType::Private,
                (id, timestamp::now()),
            )
        })
    }

    #[test]
    fn the_deciding_rule_gives_the_transform_and_plain_permissions_the_implicit_one() {
        use DataTransform::*;
        let p = principal_with(
            vec![TokenRead],
            vec![
                with_transform(rule(1, "/pci/high/", vec![TokenRead]), Mask),
                with_transform(rule(2, "/pci/", vec![TokenRead, TokenUse]), Redact),
            ],
        );
        assert_eq!(p.transform_on(TokenRead, &c("/pci/high/x/")), Mask);
        assert_eq!(p.transform_on(TokenRead, &c("/pci/low/")), Redact);
        assert_eq!(p.transform_on(TokenRead, &c("/general/")), Reveal);
        let masked = p.clone().with_implicit_transform(Mask);
        assert_eq!(masked.transform_on(TokenRead, &c("/general/")), Mask);
        assert_eq!(masked.transform_on(TokenSearch, &c("/general/")), Mask);
        assert_eq!(
            masked.transform_on(TokenUse, &c("/general/")),
            Reveal,
            "proxies reveal"
        );
        assert!(!masked.may_reveal(&c("/general/")));
        assert!(p.may_reveal(&c("/general/")));
        assert!(!p.may_reveal(&c("/pci/high/")));
        assert!(matches!(
            p.require_reveal(&c("/pci/high/")),
            Err(VaultError::RevealNeeded(_))
        ));
        assert!(!masked.may_reveal_somewhere(TokenRead));
        assert!(p.may_reveal_somewhere(TokenRead));
    }

    #[test]
    fn token_search_is_its_own_and_read_allows_it_too() {
        let searcher = principal_with(vec![TokenSearch], vec![]);
        assert!(searcher.may_search_on(&c("/pci/")));
        assert!(!searcher.may_on(TokenRead, &c("/pci/")));
        assert!(searcher.require_access_somewhere(TokenSearch).is_ok());
        assert!(searcher.require_access_somewhere(TokenRead).is_err());
        let reader = principal_with(vec![TokenRead], vec![]);
        assert!(reader.may_search_on(&c("/pci/")));
        assert!(reader.require_access_somewhere(TokenSearch).is_ok());
        // Holding every other permission (written before token:search existed) holds it.
        let all_but: Vec<Permission> = Permission::ALL
            .into_iter()
            .filter(|p| *p != TokenSearch)
            .collect();
        let mut admin = principal_with(all_but.clone(), vec![]);
        admin.app_type = ApplicationType::Management;
        assert!(admin.require(TokenSearch).is_ok());
        let short = principal_with(all_but[1..].to_vec(), vec![]);
        assert!(short.require(TokenSearch).is_err());
    }

    #[test]
    fn no_grant_shows_more_than_the_granters_deciding_rule() {
        use DataTransform::*;
        let granter = principal_with(
            vec![ApplicationCreate],
            vec![with_transform(rule(1, "/pci/", vec![TokenRead]), Mask)],
        );
        let grant = |t: DataTransform| vec![with_transform(rule(1, "/pci/a/", vec![TokenRead]), t)];
        assert!(covers(&granter, &[], &grant(Mask)));
        assert!(covers(&granter, &[], &grant(Redact)));
        assert!(matches!(
            granter.require_covers(Grants {
                permissions: &[],
                rules: &grant(Reveal),
            }),
            Err(VaultError::TransformEscalation {
                transform: Reveal,
                held: Mask,
                ..
            })
        ));
        // Plain permissions are no ceiling: the implicit transform is a default.
        let admin = principal_with(vec![TokenRead, ApplicationCreate], vec![])
            .with_implicit_transform(Mask);
        assert!(covers(&admin, &[], &grant(Reveal)));
        assert!(covers(&admin, &[TokenRead], &[]));
        // A grant of token:use alone carries no data in answers: its transform is moot.
        let user = principal_with(
            vec![],
            vec![with_transform(rule(1, "/pci/", vec![TokenUse]), Redact)],
        );
        let use_grant = vec![with_transform(rule(1, "/pci/", vec![TokenUse]), Reveal)];
        assert!(covers(&user, &[], &use_grant));
    }

    #[test]
    fn a_replay_shows_no_more_than_the_caller_sees_today() {
        use DataTransform::*;
        let p = principal_with(vec![TokenRead], vec![]).recording();
        assert_eq!(p.shown_on(TokenRead, &c("/pci/")), Reveal);
        let checks = p.checks_passed();
        let masked = principal_with(vec![TokenRead], vec![]).with_implicit_transform(Mask);
        assert!(checks.iter().any(|c| matches!(c, GrantCheck::Shown { .. })));
        for check in &checks {
            assert!(p.require_again(check).is_ok());
        }
        assert!(checks.iter().any(|c| masked.require_again(c).is_err()));
    }
}
