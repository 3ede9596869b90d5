//! Reading and defining the accessor properties of bodies given member by member, without
//! running JavaScript: defining a shared getter/setter pair from the host, and finding out
//! whether a property still holds it (QuickJS's `JS_GetOwnProperty`, which rquickjs does not
//! wrap: the one foreign call of this module, documented below).

use std::mem::MaybeUninit;

use rquickjs::{
    object::{AsProperty, PropertyFlags},
    qjs, Ctx, Function, Object, Value,
};

/// A getter/setter pair defined as an enumerable, configurable accessor (what a JSON member
/// is, apart from being an accessor).
pub(crate) struct SharedAccessor<'js> {
    pub(crate) get: Function<'js>,
    pub(crate) set: Function<'js>,
}

impl<'js> AsProperty<'js, SharedAccessor<'js>> for SharedAccessor<'js> {
    fn config(
        self,
        _: &Ctx<'js>,
    ) -> rquickjs::Result<(PropertyFlags, Value<'js>, Value<'js>, Value<'js>)> {
        let flags = qjs::JS_PROP_HAS_GET
            | qjs::JS_PROP_HAS_SET
            | qjs::JS_PROP_ENUMERABLE
            | qjs::JS_PROP_HAS_ENUMERABLE
            | qjs::JS_PROP_CONFIGURABLE
            | qjs::JS_PROP_HAS_CONFIGURABLE;
        let undefined = Value::new_undefined(self.get.ctx().clone());
        Ok((
            flags as PropertyFlags,
            undefined,
            self.get.into_value(),
            self.set.into_value(),
        ))
    }
}

/// The getter of `object`'s own property `key` when that property is an accessor; `None` when
/// it is a data property or absent.
pub(crate) fn own_getter<'js>(
    ctx: &Ctx<'js>,
    object: &Object<'js>,
    key: &str,
) -> Option<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` borrows; the atom is created from a valid byte
    // slice and freed once; `JS_GetOwnProperty` fills all three values of the descriptor when it
    // returns 1 (each a new reference, `undefined` where absent), and each is handed to a
    // `Value` that owns it and frees it once; with any other return the descriptor is not read.
    // `object` is an ordinary object the host created (not a proxy), so no JavaScript runs.
    unsafe {
        let atom = qjs::JS_NewAtomLen(raw, key.as_ptr().cast(), key.len() as _);
        if atom == qjs::JS_ATOM_NULL as qjs::JSAtom {
            let _ = ctx.catch();
            return None;
        }
        let mut desc = MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
        let found = qjs::JS_GetOwnProperty(raw, desc.as_mut_ptr(), object.as_raw(), atom);
        qjs::JS_FreeAtom(raw, atom);
        if found != 1 {
            if found < 0 {
                let _ = ctx.catch();
            }
            return None;
        }
        let desc = desc.assume_init();
        let _value = Value::from_raw(ctx.clone(), desc.value);
        let _setter = Value::from_raw(ctx.clone(), desc.setter);
        let getter = Value::from_raw(ctx.clone(), desc.getter);
        (desc.flags as u32 & qjs::JS_PROP_GETSET != 0).then_some(getter)
    }
}
