//! Numbers as ECMAScript's `Number::toString` writes them (and so `JSON.stringify`), shared by
//! the encoder (`json.rs`) and the canonical-text check (`raw_json.rs`).

use std::fmt::Write as _;

/// A number as `JSON.stringify` writes it: non-finite numbers as `null`, the others as
/// ECMAScript's `Number::toString` does (ryu-js implements exactly that: the shortest digits
/// that round-trip, the closest of them when several do, plain notation for exponents from -6
/// to 20).
pub(crate) fn number(value: f64, out: &mut String) {
    /// Integers up to this are exact in an f64 and print as their digits.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if value.fract() == 0.0 && value.abs() < EXACT {
        // `-0` prints as `0`.
        let _ = write!(out, "{}", value as i64);
    } else if value.is_finite() {
        out.push_str(ryu_js::Buffer::new().format_finite(value));
    } else {
        out.push_str("null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Function, Runtime};

    #[test]
    fn numbers_follow_number_to_string() {
        let runtime = Runtime::new().expect("runtime");
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            let to_string: Function = ctx.eval("(x) => String(x)").expect("fn");
            // A deterministic spread of magnitudes and digit counts.
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let value = f64::from_bits(x);
                if !value.is_finite() {
                    continue;
                }
                let expected: String = to_string.call((value,)).expect("string");
                let mut got = String::new();
                number(value, &mut got);
                assert_eq!(got, expected, "{value:e}");
            }
        });
    }
}
