//! Timestamps: UTC, microsecond precision, printed as RFC 3339 with a `+00:00` offset.
//!
//! Microseconds because PostgreSQL keeps no more; rounding at creation means a value read back
//! from either backend equals the one that was written.

use time::{format_description::BorrowedFormatItem, macros::format_description, OffsetDateTime};

const RFC3339_MICROS: &[BorrowedFormatItem<'static>] = format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6][offset_hour sign:mandatory]:[offset_minute]"
);

/// The current time in UTC, truncated to whole microseconds.
pub fn now() -> OffsetDateTime {
    truncate_to_micros(OffsetDateTime::now_utc())
}

/// Drops sub-microsecond precision.
pub fn truncate_to_micros(ts: OffsetDateTime) -> OffsetDateTime {
    let nanos = ts.nanosecond();
    ts.replace_nanosecond(nanos - nanos % 1_000).unwrap_or(ts)
}

/// Formats as RFC 3339 with an explicit offset, e.g. `2026-11-21T23:49:22.123456+00:00`.
pub fn format(ts: OffsetDateTime) -> String {
    if ts.offset().is_utc() && (0..=9999).contains(&ts.year()) {
        return format_utc(ts);
    }
    ts.format(RFC3339_MICROS)
        .unwrap_or_else(|_| ts.unix_timestamp().to_string())
}

/// [`format`] for the common case (UTC, a four-digit year), written digit by digit: every
/// audit event formats its time, and the generic formatter interprets its description each
/// time. A test holds the two to the same bytes.
fn format_utc(ts: OffsetDateTime) -> String {
    fn digits(out: &mut String, value: u32, width: u32) {
        for i in (0..width).rev() {
            let d = (value / 10u32.pow(i)) % 10;
            out.push(char::from(b'0' + d as u8));
        }
    }
    let mut out = String::with_capacity(32);
    digits(&mut out, ts.year().unsigned_abs(), 4);
    out.push('-');
    digits(&mut out, u32::from(u8::from(ts.month())), 2);
    out.push('-');
    digits(&mut out, u32::from(ts.day()), 2);
    out.push('T');
    digits(&mut out, u32::from(ts.hour()), 2);
    out.push(':');
    digits(&mut out, u32::from(ts.minute()), 2);
    out.push(':');
    digits(&mut out, u32::from(ts.second()), 2);
    out.push('.');
    digits(&mut out, ts.microsecond(), 6);
    out.push_str("+00:00");
    out
}

/// Parses an RFC 3339 timestamp (any offset), truncated to whole microseconds; `None` when it
/// is not one, or when it falls outside years 1–9999 once moved to UTC
/// (`9999-12-31T23:59:59-23:59` is a valid RFC 3339 text whose UTC instant is in year 10000).
pub fn parse(raw: &str) -> Option<OffsetDateTime> {
    let ts = OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339).ok()?;
    let utc = ts.checked_to_offset(time::UtcOffset::UTC)?;
    (1..=9999)
        .contains(&utc.year())
        .then(|| truncate_to_micros(utc))
}

/// Serde adapter that writes [`format`]'s representation.
pub mod serde_rfc3339 {
    use serde::Serializer;
    use time::OffsetDateTime;

    /// Serializes a timestamp as RFC 3339 with a `+00:00` offset.
    pub fn serialize<S: Serializer>(ts: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*ts))
    }

    /// The same for optional timestamps (use with `skip_serializing_if = "Option::is_none"`).
    pub mod option {
        use serde::Serializer;
        use time::OffsetDateTime;

        /// Serializes `Some` as RFC 3339, `None` as null.
        pub fn serialize<S: Serializer>(
            ts: &Option<OffsetDateTime>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match ts {
                Some(ts) => s.serialize_str(&crate::timestamp::format(*ts)),
                None => s.serialize_none(),
            }
        }
    }
}

/// An `expires_at` value: `raw` as a timestamp after `now`, or a problem recorded under
/// `expires_at` (for tokens and applications alike).
pub fn future_expiry(
    raw: &str,
    now: OffsetDateTime,
    errors: &mut crate::validation::ValidationErrors,
) -> Option<OffsetDateTime> {
    match parse(raw) {
        Some(ts) if ts > now => Some(ts),
        Some(_) => {
            errors.add("expires_at", "must be in the future");
            None
        }
        None => {
            errors.add(
                "expires_at",
                "must be an RFC 3339 timestamp with an offset, e.g. 2030-01-31T12:00:00Z",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn the_utc_fast_path_writes_what_the_generic_formatter_writes() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            // xorshift: instants spread over years 0–9999, every sub-second digit.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let secs = (x % 315_537_897_600) as i64 - 62_167_219_200;
            let nanos = (x >> 20) % 1_000_000_000;
            let ts = OffsetDateTime::from_unix_timestamp(secs).expect("in range")
                + time::Duration::nanoseconds(nanos as i64);
            let generic = ts.format(RFC3339_MICROS).expect("formats");
            assert_eq!(format_utc(ts), generic, "{ts:?}");
            assert_eq!(format(ts), generic);
        }
    }

    #[test]
    fn formats_with_explicit_utc_offset() {
        let ts = datetime!(2026-11-21 23:49:22.123456789 UTC);
        assert_eq!(
            format(truncate_to_micros(ts)),
            "2026-11-21T23:49:22.123456+00:00"
        );
    }

    #[test]
    fn instants_outside_years_1_to_9999_in_utc_are_not_timestamps() {
        // These used to panic in `to_offset`.
        assert_eq!(parse("9999-12-31T23:59:59-23:59"), None);
        assert_eq!(parse("0000-01-01T00:00:00+23:59"), None);
        assert_eq!(parse("0001-01-01T00:00:00+00:01"), None);
        assert!(parse("9999-12-31T23:59:59+00:00").is_some());
        assert!(parse("9999-12-31T23:59:59+01:00").is_some());
    }

    #[test]
    fn parses_rfc3339_with_any_offset_into_utc() {
        assert_eq!(
            parse("2026-11-22T01:49:22.1234567+02:00"),
            Some(datetime!(2026-11-21 23:49:22.123456 UTC))
        );
        assert_eq!(parse("2026-11-21"), None);
        assert_eq!(parse("tomorrow"), None);
    }

    #[test]
    fn now_has_whole_microseconds() {
        assert_eq!(now().nanosecond() % 1_000, 0);
    }
}
