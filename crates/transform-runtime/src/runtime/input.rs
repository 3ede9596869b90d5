//! `req.args` and `req.configuration` as engine values.
//!
//! A JSON object body is given member by member (`crate::raw_json`): scalars as
//! values, objects and arrays as properties that parse their own text when first read or
//! written (the prelude's `lazy`). A transform that adds a field and returns the body never
//! has the rest parsed, and the encoder writes the untouched members from the original text.
//! Any other JSON body is parsed by the engine (`parseBody`), exactly as before.

use std::{cell::RefCell, collections::HashMap, ops::Range, rc::Rc};

use rquickjs::{object::Property, Array, Ctx, Function, Object, Persistent, Symbol, Value};

use super::descriptor::SharedAccessor;
use crate::{
    message::{Body, Input},
    raw_json,
};

/// Member names whose shared accessors a context keeps (beyond it, bodies are parsed whole).
const MAX_SHARED_NAMES: usize = 256;

/// The shared accessor pairs of one context, by member name.
pub(crate) type AccessorCache =
    Rc<RefCell<HashMap<String, (Persistent<Function<'static>>, Persistent<Function<'static>>)>>>;

/// A JSON body given member by member: the object the transform got, the body's text, and
/// its lazy members.
pub(crate) struct LazyBody {
    pub(crate) object: Persistent<Object<'static>>,
    /// The member texts the accessors parse (a text is replaced when its member is touched).
    pub(crate) texts: Persistent<Object<'static>>,
    pub(crate) text: Rc<str>,
    pub(crate) members: Vec<LazyMember>,
}

/// A member whose value is still the body's text until the transform touches it.
pub(crate) struct LazyMember {
    pub(crate) key: String,
    pub(crate) raw: Range<usize>,
    /// The text is known to be what JSON.stringify would write for it.
    pub(crate) canonical: bool,
    /// The shared getter of the member's name: while the property still has it and the text
    /// was never parsed, the member is untouched.
    pub(crate) getter: Persistent<Function<'static>>,
}

/// The prelude's functions the builder calls.
pub(crate) struct Builders<'js> {
    pub(crate) parse_body: Function<'js>,
    /// The prelude's `accessors(name)`: `[get, set]`.
    pub(crate) accessors: Function<'js>,
    /// The symbol the texts are kept under.
    pub(crate) texts: Symbol<'js>,
    pub(crate) cache: AccessorCache,
}

/// What [`to_js`] built.
pub(crate) struct Built<'js> {
    pub(crate) args: Object<'js>,
    pub(crate) configuration: Object<'js>,
    pub(crate) lazy: Option<LazyBody>,
}

/// `req.args` (with `body`) and `req.configuration` for `input`.
pub(crate) fn to_js<'js>(
    ctx: &Ctx<'js>,
    input: &Input,
    body: Body,
    builders: &Builders<'js>,
) -> rquickjs::Result<Built<'js>> {
    let args = Object::new(ctx.clone())?;
    let mut lazy = None;
    match body {
        Body::Json(text) => {
            let (value, members) = json_body(ctx, text, builders)?;
            args.set("body", value)?;
            lazy = members;
        }
        Body::Text(text) => args.set("body", text.as_str())?,
        Body::Form(pairs) => args.set("body", form(ctx, &pairs)?)?,
    }
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &input.args.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    args.set("headers", headers)?;
    if let Some(m) = &input.args.method {
        args.set("method", m.as_str())?;
    }
    if let Some(p) = &input.args.path {
        args.set("path", p.as_str())?;
    }
    if let Some(q) = &input.args.query {
        args.set("query", q.as_str())?;
    }
    if let Some(s) = input.args.status {
        args.set("status", s)?;
    }
    let configuration = Object::new(ctx.clone())?;
    for (k, v) in &input.configuration {
        configuration.set(k.as_str(), v.as_str())?;
    }
    Ok(Built {
        args,
        configuration,
        lazy,
    })
}

/// A form body as an object (repeated names as arrays).
fn form<'js>(ctx: &Ctx<'js>, pairs: &[(String, String)]) -> rquickjs::Result<Object<'js>> {
    let form = Object::new(ctx.clone())?;
    for (k, v) in pairs {
        match form.get::<_, Value>(k.as_str())? {
            existing if existing.is_undefined() => form.set(k.as_str(), v.as_str())?,
            existing => {
                let list = match existing.as_array() {
                    Some(list) => list.clone(),
                    None => {
                        let list = Array::new(ctx.clone())?;
                        list.set(0, existing)?;
                        form.set(k.as_str(), list.clone())?;
                        list
                    }
                };
                list.set(list.len(), v.as_str())?;
            }
        }
    }
    Ok(form)
}

/// A JSON body: member by member when it is an object the host can take so, else parsed by
/// the engine (text that is not JSON stays a string).
fn json_body<'js>(
    ctx: &Ctx<'js>,
    text: String,
    builders: &Builders<'js>,
) -> rquickjs::Result<(Value<'js>, Option<LazyBody>)> {
    let Some(members) = raw_json::members(&text).map(|members| {
        members
            .into_iter()
            .map(|m| (m.key.into_owned(), m.value, m.canonical))
            .collect::<Vec<_>>()
    }) else {
        return Ok((builders.parse_body.call((text.as_str(),))?, None));
    };
    let object = Object::new(ctx.clone())?;
    let texts = Object::new(ctx.clone())?;
    texts.set_prototype(None)?;
    let mut lazy = Vec::new();
    for (key, range, canonical) in members {
        let raw = &text[range.clone()];
        match scalar(ctx, raw)? {
            // Defined, not assigned: as JSON.parse creates them (no setter on a prototype
            // runs).
            Some(value) => object.prop(
                key.as_str(),
                Property::from(value).writable().enumerable().configurable(),
            )?,
            None => {
                let Some((get, set)) = shared(ctx, builders, &key)? else {
                    return Ok((builders.parse_body.call((text.as_str(),))?, None));
                };
                texts.set(key.as_str(), raw)?;
                object.prop(
                    key.as_str(),
                    SharedAccessor {
                        get: get.clone(),
                        set,
                    },
                )?;
                lazy.push(LazyMember {
                    key,
                    raw: range,
                    canonical,
                    getter: Persistent::save(ctx, get),
                });
            }
        }
    }
    if !lazy.is_empty() {
        object.prop(builders.texts.clone(), Property::from(texts.clone()))?;
    }
    let body = LazyBody {
        object: Persistent::save(ctx, object.clone()),
        texts: Persistent::save(ctx, texts),
        text: text.into(),
        members: lazy,
    };
    Ok((object.into_value(), Some(body)))
}

/// The shared accessors of member `name` in this context (asked of the prelude once per name);
/// `None` when the context already keeps too many names.
fn shared<'js>(
    ctx: &Ctx<'js>,
    builders: &Builders<'js>,
    name: &str,
) -> rquickjs::Result<Option<(Function<'js>, Function<'js>)>> {
    if let Some((get, set)) = builders.cache.borrow().get(name) {
        return Ok(Some((get.clone().restore(ctx)?, set.clone().restore(ctx)?)));
    }
    if builders.cache.borrow().len() >= MAX_SHARED_NAMES {
        return Ok(None);
    }
    let pair: Array = builders.accessors.call((name,))?;
    let (get, set): (Function, Function) = (pair.get(0)?, pair.get(1)?);
    builders.cache.borrow_mut().insert(
        name.to_string(),
        (
            Persistent::save(ctx, get.clone()),
            Persistent::save(ctx, set.clone()),
        ),
    );
    Ok(Some((get, set)))
}

/// A member's value built directly when it is a scalar (or an empty object or array); `None`
/// for what is left to the engine's parser, lazily.
fn scalar<'js>(ctx: &Ctx<'js>, raw: &str) -> rquickjs::Result<Option<Value<'js>>> {
    let Some(first) = raw.bytes().next() else {
        return Ok(None);
    };
    Ok(Some(match first {
        b'"' if !raw.contains('\\') => {
            rquickjs::String::from_str(ctx.clone(), &raw[1..raw.len() - 1])?.into_value()
        }
        // Escapes (serde_json refuses lone surrogates, which the engine keeps: lazily then).
        b'"' => match serde_json::from_str::<String>(raw) {
            Ok(s) => rquickjs::String::from_str(ctx.clone(), &s)?.into_value(),
            Err(_) => return Ok(None),
        },
        b't' => Value::new_bool(ctx.clone(), true),
        b'f' => Value::new_bool(ctx.clone(), false),
        b'n' => Value::new_null(ctx.clone()),
        b'-' | b'0'..=b'9' => match raw.parse::<f64>() {
            // The standard parser rounds correctly, as JSON.parse does.
            Ok(v) => number(ctx, v),
            Err(_) => return Ok(None),
        },
        b'{' if raw == "{}" => Object::new(ctx.clone())?.into_value(),
        b'[' if raw == "[]" => Array::new(ctx.clone())?.into_value(),
        _ => return Ok(None),
    }))
}

/// A number as the engine stores it: small integers as integers, `-0` and the rest as doubles.
fn number<'js>(ctx: &Ctx<'js>, v: f64) -> Value<'js> {
    let int = v as i32;
    if f64::from(int) == v && !(v == 0.0 && v.is_sign_negative()) {
        Value::new_int(ctx.clone(), int)
    } else {
        Value::new_number(ctx.clone(), v)
    }
}
