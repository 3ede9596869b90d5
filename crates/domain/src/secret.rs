//! A wrapper that keeps sensitive values out of `Debug` output and logs, and wipes them from
//! memory when they are dropped.

use std::{collections::BTreeMap, fmt};

use zeroize::Zeroize;

/// Overwrites a value's sensitive bytes in place (through the `zeroize` crate, so the writes
/// are not optimised away). What [`Secret`] calls when it is dropped.
///
/// For JSON values, strings (keys included) are zeroed and numbers and booleans are replaced by
/// `null`. The wipe is best effort: copies made before (by a serializer's buffer, an allocator
/// that moved a growing string) are outside its reach.
pub trait Wipe {
    /// Overwrites the sensitive content.
    fn wipe(&mut self);
}

impl Wipe for String {
    fn wipe(&mut self) {
        self.zeroize();
    }
}

impl Wipe for Vec<u8> {
    fn wipe(&mut self) {
        self.zeroize();
    }
}

impl Wipe for Vec<String> {
    fn wipe(&mut self) {
        self.iter_mut().for_each(Zeroize::zeroize);
    }
}

impl<const N: usize> Wipe for [u8; N] {
    fn wipe(&mut self) {
        self.zeroize();
    }
}

impl<T: Wipe> Wipe for Option<T> {
    fn wipe(&mut self) {
        if let Some(v) = self {
            v.wipe();
        }
    }
}

impl<K: Wipe + Ord, V: Wipe> Wipe for BTreeMap<K, V> {
    fn wipe(&mut self) {
        for (mut k, mut v) in std::mem::take(self) {
            k.wipe();
            v.wipe();
        }
    }
}

impl Wipe for serde_json::Value {
    fn wipe(&mut self) {
        use serde_json::Value;
        match self {
            Value::String(s) => s.zeroize(),
            Value::Array(items) => items.iter_mut().for_each(Wipe::wipe),
            Value::Object(map) => {
                for (mut k, mut v) in std::mem::take(map) {
                    k.zeroize();
                    v.wipe();
                }
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => {}
        }
        *self = Value::Null;
    }
}

/// Holds a sensitive value (token data, an API key, a proxy key or configuration, key
/// material), in the manner of hyperswitch's `StrongSecret`.
///
/// * `Debug` and `Display` print `***`, so a `Secret` inside a struct that is logged or
///   formatted with `{:?}` never leaks.
/// * Dropping it wipes the value ([`Wipe`]).
/// * Reading the value is an explicit [`Secret::expose`] call, which makes every place that
///   handles plaintext easy to find. It does not implement `Serialize`: a response view
///   that sends one opts in with [`exposed`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret<T: Wipe + Default>(T);

impl<T: Wipe + Default> Secret<T> {
    /// Wraps a sensitive value.
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// Borrows the sensitive value.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Borrows the sensitive value mutably (to edit it in place without copies).
    pub fn expose_mut(&mut self) -> &mut T {
        &mut self.0
    }

    /// Unwraps the sensitive value; from then on it is the caller's to protect.
    pub fn into_inner(mut self) -> T {
        std::mem::take(&mut self.0)
    }
}

impl<T: Wipe + Default> Drop for Secret<T> {
    fn drop(&mut self) {
        self.0.wipe();
    }
}

impl<T: Wipe + Default> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl<T: Wipe + Default> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Hashing lets secrets key in-memory maps (the credential caches) without exposing them.
impl<T: Wipe + Default + std::hash::Hash> std::hash::Hash for Secret<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl<T: Wipe + Default> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl<'de, T: Wipe + Default + serde::Deserialize<'de>> serde::Deserialize<'de> for Secret<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Secret)
    }
}

/// Serializing a [`Secret`] is an explicit choice made field by field, at the few places
/// that must send a value (response views, the gateway's substitutions):
/// `#[serde(serialize_with = "tessera_domain::secret::exposed")]`. `Secret` itself does not
/// implement `Serialize`, so a secret inside a struct that something serializes for a log or
/// an error never goes out by accident.
pub fn exposed<T, S>(secret: &Secret<T>, s: S) -> Result<S::Ok, S::Error>
where
    T: Wipe + Default + serde::Serialize,
    S: serde::Serializer,
{
    secret.0.serialize(s)
}

/// [`exposed`] for an optional secret (`None` as `null`; pair it with
/// `skip_serializing_if = "Option::is_none"` to leave the field out).
pub fn exposed_option<T, S>(secret: &Option<Secret<T>>, s: S) -> Result<S::Ok, S::Error>
where
    T: Wipe + Default + serde::Serialize,
    S: serde::Serializer,
{
    match secret {
        Some(secret) => s.serialize_some(&secret.0),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::new("4242424242424242".to_string());
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
        assert_eq!(s.expose(), "4242424242424242");
    }

    #[test]
    fn wiping_clears_strings_keys_and_nested_values() {
        let mut v = json!({"number": "4242424242424242", "nested": [{"cvc": "123"}, 7, true]});
        v.wipe();
        assert_eq!(v, serde_json::Value::Null);
        let mut s = "secret".to_string();
        s.wipe();
        assert!(s.is_empty());
        let mut m = BTreeMap::from([("API_KEY".to_string(), "sk_live".to_string())]);
        m.wipe();
        assert!(m.is_empty());
    }

    #[test]
    fn into_inner_hands_the_value_over_intact() {
        let s = Secret::new(json!({"number": "4242"}));
        assert_eq!(s.into_inner(), json!({"number": "4242"}));
    }
}
