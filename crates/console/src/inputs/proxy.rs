//! The proxy form: `POST /proxies` and `PUT /proxies/{id}`'s body. The compile check of its
//! transforms is the vault's, as for the management API.

use serde_json::{json, Map, Value};
use tessera_domain::{Proxy, ProxyInput, Secret, ValidationErrors};

use super::from_json;
use crate::form::Form;

/// The proxy form as shown or submitted. Configuration values and code are secrets (they
/// often hold credentials): they are shown to whoever may read the proxy, as the API returns
/// them, but never logged.
#[derive(Debug, Default)]
pub(crate) struct ProxyForm {
    pub(crate) name: String,
    pub(crate) destination_url: String,
    pub(crate) require_auth: bool,
    pub(crate) application_id: String,
    pub(crate) configuration: Vec<(String, Secret<String>)>,
    pub(crate) request_code: Secret<String>,
    pub(crate) response_code: Secret<String>,
}

impl ProxyForm {
    /// A new proxy's form: auth required, nothing else.
    pub(crate) fn blank() -> Self {
        Self {
            require_auth: true,
            ..Self::default()
        }
    }

    /// The form of an existing proxy.
    pub(crate) fn of(proxy: &Proxy) -> Self {
        Self {
            name: proxy.name.clone(),
            destination_url: proxy.destination_url.clone(),
            require_auth: proxy.require_auth,
            application_id: proxy
                .application_id
                .map(|a| a.to_string())
                .unwrap_or_default(),
            configuration: proxy
                .configuration
                .as_ref()
                .map(|c| {
                    c.expose()
                        .iter()
                        .map(|(k, v)| (k.clone(), Secret::new(v.clone())))
                        .collect()
                })
                .unwrap_or_default(),
            request_code: proxy.request_transform.clone().unwrap_or_default(),
            response_code: proxy.response_transform.clone().unwrap_or_default(),
        }
    }

    /// Reads the submitted form (configuration rows `config.N.key` / `config.N.value`; rows
    /// with both blank are left out).
    pub(crate) fn read(form: &Form) -> Self {
        let configuration = form
            .rows("config")
            .into_iter()
            .map(|i| {
                (
                    form.get(&format!("config.{i}.key")).trim().to_string(),
                    Secret::new(form.get(&format!("config.{i}.value")).to_string()),
                )
            })
            .filter(|(k, v)| !k.is_empty() || !v.expose().is_empty())
            .collect();
        Self {
            name: form.get("name").to_string(),
            destination_url: form.get("destination_url").trim().to_string(),
            require_auth: form.checked("require_auth"),
            application_id: form.get("application_id").trim().to_string(),
            configuration,
            request_code: Secret::new(form.get("request_transform").to_string()),
            response_code: Secret::new(form.get("response_transform").to_string()),
        }
    }

    /// The API body, deserialised as [`ProxyInput`].
    pub(crate) fn to_input(&self) -> Result<ProxyInput, ValidationErrors> {
        let mut body = json!({
            "name": self.name,
            "destination_url": self.destination_url,
            "require_auth": self.require_auth,
        });
        for (field, code) in [
            ("request_transform", &self.request_code),
            ("response_transform", &self.response_code),
        ] {
            if !code.expose().trim().is_empty() {
                body[field] = json!({"code": code.expose()});
            }
        }
        if !self.application_id.is_empty() {
            body["application"] = json!({"id": self.application_id});
        }
        if !self.configuration.is_empty() {
            let mut errors = ValidationErrors::new();
            let mut map = Map::new();
            for (key, value) in &self.configuration {
                if map.insert(key.clone(), json!(value.expose())).is_some() {
                    errors.add("configuration", format!("the key `{key}` appears twice"));
                }
            }
            errors.into_result()?;
            body["configuration"] = Value::Object(map);
        }
        // The JSON tree holds the configuration and code in clear only until it is consumed.
        from_json(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_the_api_body() {
        let form = Form::parse(
            b"name=p&destination_url=https%3A%2F%2Fx.example&require_auth=on&config.0.key=K&config.0.value=v&config.1.key=&config.1.value=&request_transform=&response_transform=module.exports%3Dasync+r%3D%3Er",
        );
        let f = ProxyForm::read(&form);
        assert_eq!(f.configuration.len(), 1, "the blank row is left out");
        let input = f.to_input().expect("valid");
        assert!(input.request_transform.is_none());
        assert!(input.response_transform.is_some());
        assert_eq!(input.require_auth, Some(true));
        assert!(!format!("{f:?}").contains("module.exports"));
    }

    #[test]
    fn a_configuration_key_given_twice_is_refused() {
        let twice = Form::parse(
            b"name=p&destination_url=x&config.0.key=A&config.0.value=1&config.1.key=A&config.1.value=2",
        );
        assert!(ProxyForm::read(&twice)
            .to_input()
            .expect_err("twice")
            .fields()
            .contains_key("configuration"));
    }
}
