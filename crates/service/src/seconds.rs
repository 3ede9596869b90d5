//! A number of seconds as the binaries' settings take it (a flag or its environment variable):
//! a decimal, fractions allowed, within bounds. Anything else (not a number, NaN, an infinity,
//! a negative or too large a value) is refused with a message naming the bounds, before a
//! `Duration` is made of it: a huge value would panic there, or on every request that adds
//! it to an `Instant`.

/// Bounds of a number of seconds; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecondsRange {
    min: f64,
    max: f64,
    /// Whether `min` itself is refused (a timeout must be more than 0).
    min_excluded: bool,
}

/// Why a number of seconds is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SecondsError {
    /// The text is not a decimal number.
    #[error("`{0}` is not a number of seconds")]
    NotANumber(String),
    /// Out of bounds, NaN or infinite.
    #[error("{0}")]
    OutOfRange(String),
}

impl SecondsRange {
    /// From `min` to `max` seconds, both included.
    pub const fn between(min: f64, max: f64) -> Self {
        Self {
            min,
            max,
            min_excluded: false,
        }
    }

    /// More than 0 and at most `max` seconds: a timeout.
    pub const fn positive(max: f64) -> Self {
        Self {
            min: 0.0,
            max,
            min_excluded: true,
        }
    }

    /// `secs` if it is within the bounds (never NaN or infinite).
    pub fn check(&self, secs: f64) -> Result<f64, SecondsError> {
        let above_min = if self.min_excluded {
            secs > self.min
        } else {
            secs >= self.min
        };
        if secs.is_finite() && above_min && secs <= self.max {
            return Ok(secs);
        }
        let (min, max) = (self.min, self.max);
        Err(SecondsError::OutOfRange(if self.min_excluded {
            format!("must be more than {min} and at most {max} seconds")
        } else {
            format!("must be from {min} to {max} seconds")
        }))
    }

    /// Parses `raw` and checks it (see [`SecondsRange::check`]).
    pub fn parse(&self, raw: &str) -> Result<f64, SecondsError> {
        let secs: f64 = raw
            .trim()
            .parse()
            .map_err(|_| SecondsError::NotANumber(raw.to_string()))?;
        self.check(secs)
    }

    /// [`SecondsRange::parse`] as a function, for a clap `value_parser`.
    pub fn parser(self) -> impl Fn(&str) -> Result<f64, SecondsError> + Clone + Send + Sync {
        move |raw: &str| self.parse(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_within_the_bounds_are_taken() {
        let range = SecondsRange::between(0.0, 60.0);
        assert_eq!(range.parse("0"), Ok(0.0));
        assert_eq!(range.parse("0.25"), Ok(0.25));
        assert_eq!(range.parse("60"), Ok(60.0));
        assert_eq!(SecondsRange::positive(3600.0).parse("1e-3"), Ok(0.001));
        assert_eq!(SecondsRange::positive(3600.0).parse("3600"), Ok(3600.0));
    }

    #[test]
    fn everything_else_is_refused_with_the_bounds() {
        let timeout = SecondsRange::positive(3600.0);
        let named = "must be more than 0 and at most 3600 seconds".to_string();
        for bad in [
            "0", "-0", "-1", "3600.5", "1e19", "9.2e18", "1.8e19", "NaN", "inf", "-inf",
        ] {
            assert_eq!(
                timeout.parse(bad),
                Err(SecondsError::OutOfRange(named.clone())),
                "{bad}"
            );
        }
        assert_eq!(
            SecondsRange::between(0.0, 60.0).parse("61"),
            Err(SecondsError::OutOfRange(
                "must be from 0 to 60 seconds".into()
            ))
        );
        assert_eq!(
            timeout.parse("soon").map_err(|e| e.to_string()),
            Err("`soon` is not a number of seconds".to_string())
        );
        assert!(timeout.parse("").is_err());
    }

    #[test]
    fn every_accepted_value_makes_a_duration() {
        let timeout = SecondsRange::positive(3600.0);
        for raw in ["1e-300", "0.5", "3600"] {
            let secs = timeout.parse(raw).expect("accepted");
            assert!(
                std::time::Duration::try_from_secs_f64(secs).is_ok(),
                "{raw}"
            );
        }
    }
}
