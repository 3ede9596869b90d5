//! The native functions behind the prelude's globals (`console`, `atob`/`btoa`, `crypto`,
//! `Buffer`, `URL`) and behind `req.svc` (`host`). They reach the prelude as one object passed
//! to its `install` function and stay in its closure: tenant code cannot call them directly.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
    rc::Rc,
};

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hmac::{Hmac, Mac};
use rquickjs::{Ctx, Exception, Function, Object, Persistent};
use serde_json::json;
use tessera_domain::hex;

use crate::message::HostOp;

/// Log tags of an invocation (tenant and proxy ids), for `console.log`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tags {
    /// The tenant.
    pub tenant: String,
    /// The proxy.
    pub proxy: String,
}

/// Where `console.log` lines go.
pub(crate) type LogSink = Rc<dyn Fn(&Tags, &str)>;

/// Bytes of `console.log` output kept per invocation.
pub(crate) const LOG_BUDGET: usize = 4096;

/// A `req.svc` call a transform made and now awaits. Its payload may hold token data: `Debug`
/// leaves it out.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingCall {
    /// Identifies the call when answering it.
    pub id: u64,
    /// The operation.
    pub op: HostOp,
    /// Its argument, as JSON text.
    pub payload: String,
}

impl std::fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCall")
            .field("id", &self.id)
            .field("op", &self.op)
            .finish_non_exhaustive()
    }
}

/// What the natives of every context of one runtime read: which invocation is running
/// JavaScript right now, and its calls and log budget.
pub(crate) struct Shared {
    pub(crate) current: Cell<u64>,
    pub(crate) svc: Cell<bool>,
    pub(crate) tags: RefCell<Tags>,
    pub(crate) logged: Cell<usize>,
    pub(crate) next_call: Cell<u64>,
    /// Calls made and not yet answered, by call id: (invocation, the promise's resolve).
    pub(crate) waiting: RefCell<HashMap<u64, (u64, Persistent<Function<'static>>)>>,
    /// Calls made during the current segment, to hand to the host.
    pub(crate) made: RefCell<Vec<PendingCall>>,
    pub(crate) log: LogSink,
}

impl Shared {
    pub(crate) fn new(log: LogSink) -> Self {
        Self {
            current: Cell::new(0),
            svc: Cell::new(false),
            tags: RefCell::new(Tags::default()),
            logged: Cell::new(0),
            next_call: Cell::new(1),
            waiting: RefCell::new(HashMap::new()),
            made: RefCell::new(Vec::new()),
            log,
        }
    }
}

fn throw(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_type(ctx, message)
}

fn hmac_digest(alg: &str, key: &str, data: &str) -> Option<Vec<u8>> {
    macro_rules! mac {
        ($t:ty) => {{
            let mut m = <Hmac<$t> as Mac>::new_from_slice(key.as_bytes()).ok()?;
            m.update(data.as_bytes());
            Some(m.finalize().into_bytes().to_vec())
        }};
    }
    match alg.to_ascii_lowercase().as_str() {
        "sha256" => mac!(sha2::Sha256),
        "sha384" => mac!(sha2::Sha384),
        "sha512" => mac!(sha2::Sha512),
        _ => None,
    }
}

fn encode(bytes: &[u8], encoding: &str) -> Option<String> {
    match encoding {
        "utf8" | "utf-8" => Some(String::from_utf8_lossy(bytes).into_owned()),
        "hex" => Some(hex::encode(bytes)),
        "base64" => Some(STANDARD.encode(bytes)),
        _ => None,
    }
}

fn decode(s: &str, encoding: &str) -> Option<Vec<u8>> {
    match encoding {
        "utf8" | "utf-8" => Some(s.as_bytes().to_vec()),
        "hex" => hex::decode(s).ok(),
        "base64" => STANDARD.decode(s).ok(),
        _ => None,
    }
}

/// The host functions handed to the prelude, one constructor each.
pub(crate) fn natives<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let native = Object::new(ctx.clone())?;
    native.set("log", native_log(ctx, shared.clone())?)?;
    native.set("btoa", native_btoa(ctx)?)?;
    native.set("atob", native_atob(ctx)?)?;
    native.set("uuid", native_uuid(ctx)?)?;
    native.set("hmac", native_hmac(ctx)?)?;
    native.set("tob64", native_tob64(ctx)?)?;
    native.set("fromb64", native_fromb64(ctx)?)?;
    native.set("url", native_url(ctx)?)?;
    native.set("host", native_host(ctx, shared.clone())?)?;
    Ok(native)
}

/// `console.log`: the line, cut to what is left of the invocation's log budget.
fn native_log<'js>(ctx: &Ctx<'js>, log_shared: Rc<Shared>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), move |line: String| {
        let used = log_shared.logged.get();
        if used >= LOG_BUDGET {
            return;
        }
        let room = LOG_BUDGET - used;
        let mut cut = line.len().min(room);
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        log_shared.logged.set(used + cut);
        (log_shared.log)(&log_shared.tags.borrow(), &line[..cut]);
    })
}

/// `btoa`: Latin-1 text to base64, as in browsers.
fn native_btoa<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String| {
        // Latin-1 only, as in browsers.
        let bytes: Option<Vec<u8>> = s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
        bytes
            .map(|b| STANDARD.encode(b))
            .ok_or_else(|| throw(&ctx, "btoa: the string contains characters outside Latin-1"))
    })
}

/// `atob`: base64 to Latin-1 text.
fn native_atob<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String| {
        STANDARD
            .decode(s.trim())
            .map(|b| b.into_iter().map(char::from).collect::<String>())
            .map_err(|_| throw(&ctx, "atob: the string is not valid base64"))
    })
}

/// `crypto.randomUUID`: a version 4 UUID.
fn native_uuid<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), || uuid::Uuid::new_v4().to_string())
}

/// `crypto.createHmac(…).update(…).digest(…)`, in one call.
fn native_hmac<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(
        ctx.clone(),
        |ctx: Ctx<'js>, alg: String, key: String, data: String, enc: String| {
            let digest = hmac_digest(&alg, &key, &data).ok_or_else(|| {
                throw(
                    &ctx,
                    "createHmac: supported algorithms are sha256, sha384 and sha512",
                )
            })?;
            match enc.as_str() {
                "hex" => Ok(hex::encode(&digest)),
                "base64" => Ok(STANDARD.encode(&digest)),
                _ => Err(throw(
                    &ctx,
                    "digest: supported encodings are hex and base64",
                )),
            }
        },
    )
}

/// `Buffer.from(s, encoding)`: the bytes, as base64.
fn native_tob64<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String, enc: String| {
        decode(&s, &enc)
            .map(|b| STANDARD.encode(b))
            .ok_or_else(|| throw(&ctx, "Buffer.from: supported encodings are utf8, hex and base64 (and the input must be valid)"))
    })
}

/// `Buffer.toString(encoding)`: base64 bytes in an encoding.
fn native_fromb64<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), |ctx: Ctx<'js>, b64: String, enc: String| {
        STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| encode(&b, &enc))
            .ok_or_else(|| {
                throw(
                    &ctx,
                    "Buffer.toString: supported encodings are utf8, hex and base64",
                )
            })
    })
}

/// `new URL(href, base)`: the parts, as JSON text (empty when it does not parse).
fn native_url<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), |href: String, base: String| {
        let parsed = if base.is_empty() {
            url::Url::parse(&href)
        } else {
            url::Url::parse(&base).and_then(|b| b.join(&href))
        };
        match parsed {
            Ok(u) => json!({
                "href": u.as_str(),
                "protocol": format!("{}:", u.scheme()),
                "username": u.username(),
                "password": u.password().unwrap_or(""),
                "host": match u.port() { Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")), None => u.host_str().unwrap_or("").to_string() },
                "hostname": u.host_str().unwrap_or(""),
                "port": u.port().map(|p| p.to_string()).unwrap_or_default(),
                "pathname": u.path(),
                "search": u.query().map(|q| format!("?{q}")).unwrap_or_default(),
                "hash": u.fragment().map(|f| format!("#{f}")).unwrap_or_default(),
                "origin": u.origin().ascii_serialization(),
            })
            .to_string(),
            Err(_) => String::new(),
        }
    })
}

/// `req.svc`: records the call for the host to make and answers with a promise it settles.
fn native_host<'js>(ctx: &Ctx<'js>, host_shared: Rc<Shared>) -> rquickjs::Result<Function<'js>> {
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              op: String,
              payload: String|
              -> rquickjs::Result<rquickjs::Promise<'js>> {
            let (promise, resolve, _reject) = ctx.promise()?;
            let refuse = |status: u16, message: &str| {
                json!({ "error": { "status": status, "message": message } }).to_string()
            };
            if !host_shared.svc.get() {
                resolve.call::<_, ()>((refuse(
                    403,
                    "req.svc is not available: the proxy has no application",
                ),))?;
                return Ok(promise);
            }
            let Some(op) = HostOp::parse(&op) else {
                resolve.call::<_, ()>((refuse(400, &format!("unknown operation {op}")),))?;
                return Ok(promise);
            };
            let id = host_shared.next_call.get();
            host_shared.next_call.set(id + 1);
            host_shared.waiting.borrow_mut().insert(
                id,
                (host_shared.current.get(), Persistent::save(&ctx, resolve)),
            );
            host_shared
                .made
                .borrow_mut()
                .push(PendingCall { id, op, payload });
            Ok(promise)
        },
    )
}
