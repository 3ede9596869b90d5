//! A deserializer wrapper under which a struct is read only from a JSON object.
//!
//! serde's derived `Deserialize` for a struct with named fields also accepts a sequence of
//! the field values in declaration order (for compact binary formats), and serde_json offers it
//! that sequence when the input is an array: `["x","private",["token:read"]]` was read as an
//! application. The wrapper turns every struct request into a map request,
//! at every depth, so an array or scalar where an object belongs is a type error naming its
//! path like any other (docs/api.md, "Conventions").
//!
//! It also refuses a member name repeated in one object, at every depth (`data`, `metadata`,
//! each `/tokenize` member): JSON leaves such a document's meaning open, and a WAF or a
//! merchant's check that reads the first value would see other data than the vault stores.
//! The error is [`repeated_member`]'s message, which [`crate::body`] turns into a problem
//! naming the path. Everything else passes through unchanged.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// `D`, with structs read only from maps and no member name repeated, at every depth.
pub(crate) struct Strict<D>(pub(crate) D);

/// How a repeated member's error message starts; the member's name follows it verbatim.
pub(crate) const REPEATED_MEMBER: &str = "repeated member name: ";

/// The repeated member name in an error message of this module, if it is one.
pub(crate) fn repeated_member(message: &str) -> Option<&str> {
    message.strip_prefix(REPEATED_MEMBER)
}

/// `S` (a seed, a visitor or an access), whose deserializers are wrapped in [`Strict`].
struct Wrap<S>(S);

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The point of the wrapper: a struct is asked of the input as a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(deserializer))
    }
}

macro_rules! visit_plain {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit_plain!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Strict(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Members {
            map,
            seen: Seen::default(),
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// The members of one object: each value wrapped, each name checked against the names seen
/// so far in this object.
struct Members<A> {
    map: A,
    seen: Seen,
}

/// Above this many members an object's names are kept in a hash set: a body of a megabyte can
/// hold a hundred thousand names, which a list would compare pairwise.
const FEW_MEMBERS: usize = 16;

/// The member names seen so far in one object.
#[derive(Default)]
struct Seen {
    few: Vec<Box<str>>,
    many: Option<std::collections::HashSet<Box<str>>>,
}

impl Seen {
    /// Records `name`, or refuses it as repeated.
    fn record<E: de::Error>(&mut self, name: &str) -> Result<(), E> {
        let repeated = match &mut self.many {
            Some(many) => !many.insert(name.into()),
            None if self.few.iter().any(|s| &**s == name) => true,
            None if self.few.len() < FEW_MEMBERS => {
                self.few.push(name.into());
                false
            }
            None => {
                let mut many: std::collections::HashSet<Box<str>> = self.few.drain(..).collect();
                many.insert(name.into());
                self.many = Some(many);
                false
            }
        };
        if repeated {
            return Err(E::custom(format_args!("{REPEATED_MEMBER}{name}")));
        }
        Ok(())
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Members<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(Name {
            seed,
            seen: &mut self.seen,
        })
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A member name's seed (and, as a deserializer and a visitor, the layers under it): reads
/// the name as `seed` would, refusing one already in `seen`. Object member names in JSON are
/// always strings, so every name reaches one of the three string visits.
struct Name<'s, S> {
    seed: S,
    seen: &'s mut Seen,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Name<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Name {
            seed: deserializer,
            seen: self.seen,
        })
    }
}

macro_rules! forward_name {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.seed.$method(Name { seed: visitor, seen: self.seen })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Name<'_, D> {
    type Error = D::Error;

    forward_name!(
        deserialize_any,
        deserialize_str,
        deserialize_string,
        deserialize_identifier,
    );

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum ignored_any
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Name<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.seed.expecting(f)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.seen.record(v)?;
        self.seed.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.seen.record(v)?;
        self.seed.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.seen.record(&v)?;
        self.seed.visit_string(v)
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(Wrap(seed))
            .map(|(value, variant)| (value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Wrap(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::Value;

    use super::Strict;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        id: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: String,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        any: Option<Value>,
    }

    fn parse<T: for<'de> Deserialize<'de>>(json: &str) -> Result<T, String> {
        let mut de = serde_json::Deserializer::from_str(json);
        T::deserialize(Strict(&mut de)).map_err(|e| e.to_string())
    }

    #[test]
    fn objects_parse_as_before() {
        let parsed: Outer =
            parse(r#"{"name":"n","inner":{"id":"a"},"list":[{"id":"b"}],"any":[1,{"x":[2]}]}"#)
                .expect("object");
        assert_eq!(parsed.name, "n");
        assert_eq!(parsed.list, vec![Inner { id: "b".into() }]);
        assert_eq!(parsed.any, Some(serde_json::json!([1, {"x": [2]}])));
        let unknown = parse::<Outer>(r#"{"name":"n","extra":1}"#).expect_err("unknown");
        assert!(unknown.contains("unknown field"), "{unknown}");
    }

    #[test]
    fn repeated_member_names_are_refused_at_every_depth() {
        for (json, name) in [
            (r#"{"name":"n","name":"m"}"#, "name"),
            (r#"{"name":"n","inner":{"id":"a","id":"b"}}"#, "id"),
            (r#"{"name":"n","any":{"a":1,"b":{"c":1,"c":2}}}"#, "c"),
            (r#"{"name":"n","any":[{"x":1},{"x":2,"x":3}]}"#, "x"),
            (r#"{"name":"n","any":{"a\"b":1,"a\u0022b":2}}"#, "a\"b"),
        ] {
            let e = parse::<Outer>(json).expect_err(json);
            let message = crate::json_shapes::without_position(&e);
            assert_eq!(super::repeated_member(message), Some(name), "{json}: {e}");
        }
        // Many members: still found, in a set.
        let many: String = (0..40).map(|i| format!(r#""k{i}":1,"#)).collect();
        let json = format!(r#"{{"name":"n","any":{{{many}"k3":2}}}}"#);
        let e = parse::<Outer>(&json).expect_err("repeated among many");
        let message = crate::json_shapes::without_position(&e);
        assert_eq!(super::repeated_member(message), Some("k3"));
        // The same name in two objects is no repetition.
        let ok: Outer = parse(r#"{"name":"n","any":{"a":{"a":1},"b":{"a":2}}}"#).expect("ok");
        assert_eq!(
            ok.any,
            Some(serde_json::json!({"a": {"a": 1}, "b": {"a": 2}}))
        );
        let map: std::collections::HashMap<String, Value> =
            parse(r#"{"k":1,"l":2}"#).expect("a map");
        assert_eq!(map.len(), 2);
        assert!(parse::<std::collections::HashMap<String, Value>>(r#"{"k":1,"k":2}"#).is_err());
    }

    #[test]
    fn arrays_where_structs_belong_are_refused_at_every_depth() {
        for json in [
            r#"["n"]"#,
            r#"{"name":"n","inner":["a"]}"#,
            r#"{"name":"n","list":[["b"]]}"#,
            r#""n""#,
            r#"{"name":"n","inner":"a"}"#,
        ] {
            let e = parse::<Outer>(json).expect_err(json);
            assert!(e.contains("invalid type"), "{json}: {e}");
        }
        // Without the wrapper serde_json takes the sequence form: the finding.
        assert!(serde_json::from_str::<Outer>(r#"["n"]"#).is_ok());
        let list: Vec<Inner> = parse(r#"[{"id":"a"}]"#).expect("array of objects");
        assert_eq!(list.len(), 1);
    }
}
