//! The application form: `POST /applications` and `PUT /applications/{id}`'s body, with its
//! container rules as rows (`rule.N.description`, `.priority`, `.container`, `.permissions`).

use serde_json::{json, Value};
use tessera_domain::{Application, ApplicationInput, ValidationErrors};

use super::from_json;
use crate::form::Form;

/// One rule row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RuleRow {
    pub(crate) description: String,
    pub(crate) priority: String,
    pub(crate) container: String,
    pub(crate) permissions: Vec<String>,
}

impl RuleRow {
    fn is_blank(&self) -> bool {
        self.description.trim().is_empty()
            && self.priority.trim().is_empty()
            && self.container.trim().is_empty()
            && self.permissions.is_empty()
    }
}

/// The application form as shown or submitted. Rules are kept in the order submitted, blank
/// rows left out, so that a problem keyed `rules[i]` belongs to the i-th row shown.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApplicationForm {
    pub(crate) name: String,
    pub(crate) app_type: String,
    pub(crate) permissions: Vec<String>,
    pub(crate) rules: Vec<RuleRow>,
}

impl ApplicationForm {
    /// A new application's form.
    pub(crate) fn blank() -> Self {
        Self {
            app_type: "private".into(),
            ..Self::default()
        }
    }

    /// The form of an existing application, its rules in priority order.
    pub(crate) fn of(app: &Application) -> Self {
        let mut rules = app.rules.clone();
        rules.sort_by_key(|r| r.priority);
        Self {
            name: app.name.clone(),
            app_type: app.app_type.as_str().to_string(),
            permissions: app.permissions.iter().map(|p| p.to_string()).collect(),
            rules: rules
                .into_iter()
                .map(|r| RuleRow {
                    description: r.description.unwrap_or_default(),
                    priority: r.priority.to_string(),
                    container: r.container.as_str().to_string(),
                    permissions: r.permissions.iter().map(|p| p.to_string()).collect(),
                })
                .collect(),
        }
    }

    /// Reads the submitted form.
    pub(crate) fn read(form: &Form) -> Self {
        let rules = form
            .rows("rule")
            .into_iter()
            .map(|i| RuleRow {
                description: form.get(&format!("rule.{i}.description")).to_string(),
                priority: form.get(&format!("rule.{i}.priority")).trim().to_string(),
                container: form.get(&format!("rule.{i}.container")).trim().to_string(),
                permissions: form
                    .all(&format!("rule.{i}.permissions"))
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            })
            .filter(|r| !r.is_blank())
            .collect();
        Self {
            name: form.get("name").to_string(),
            app_type: form.get("type").to_string(),
            permissions: form
                .all("permissions")
                .into_iter()
                .map(str::to_string)
                .collect(),
            rules,
        }
    }

    /// The API body, deserialised as [`ApplicationInput`].
    pub(crate) fn to_input(&self) -> Result<ApplicationInput, ValidationErrors> {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|r| {
                // A priority that is not an integer goes as text, for the API's parser to
                // word the problem.
                let priority = r
                    .priority
                    .parse::<i64>()
                    .map_or_else(|_| json!(r.priority), Value::from);
                let mut rule = json!({
                    "priority": priority,
                    "container": r.container,
                    "permissions": r.permissions,
                });
                if !r.description.trim().is_empty() {
                    rule["description"] = json!(r.description);
                }
                rule
            })
            .collect();
        from_json(json!({
            "name": self.name,
            "type": self.app_type,
            "permissions": self.permissions,
            "rules": rules,
        }))
    }
}

#[cfg(test)]
mod tests {
    use tessera_domain::Permission;

    use super::*;

    #[test]
    fn rules_are_rows_in_submitted_order() {
        let form = Form::parse(
            b"name=svc&type=private&permissions=token%3Acreate&rule.0.priority=2&rule.0.container=%2Fpci%2F&rule.0.permissions=token%3Aread&rule.0.permissions=token%3Ause&rule.1.priority=&rule.1.container=&rule.2.priority=1&rule.2.container=%2Fbank%2F&rule.2.description=bank",
        );
        let f = ApplicationForm::read(&form);
        assert_eq!(f.rules.len(), 2, "the blank row is left out");
        let input = f.to_input().expect("valid");
        assert_eq!(input.permissions, vec![Permission::TokenCreate]);
        assert_eq!(input.rules[0].priority, 2);
        assert_eq!(
            input.rules[0].permissions,
            vec![Permission::TokenRead, Permission::TokenUse]
        );
        assert_eq!(input.rules[1].description.as_deref(), Some("bank"));
    }

    #[test]
    fn problems_name_the_row() {
        let form = Form::parse(
            b"name=svc&type=private&rule.5.priority=x&rule.5.container=%2Fa%2F&rule.9.priority=1&rule.9.container=bad",
        );
        let e = ApplicationForm::read(&form)
            .to_input()
            .expect_err("bad priority");
        assert_eq!(
            e.fields().keys().collect::<Vec<_>>(),
            vec!["rules[0].priority"]
        );
    }
}
