//! Random aliases: `alias_preserve_format`, `alias_preserve_length` and `alias_card`.
//!
//! The random characters come from a generator seeded from the operating system's for each
//! use. What each keeps (docs/api.md, "Filters"): `alias_preserve_format` turns every letter
//! into a random ASCII letter of the same case and every digit into a random digit, leaving
//! other characters in place; `alias_preserve_length` turns every character into a random
//! lower-case letter or digit; `alias_card` keeps spaces and dashes, draws every digit it does
//! not reveal, and makes the number pass the Luhn check whenever it drew at least one digit
//! (the last digit it drew is chosen to that end).

use rand::{rand_core::UnwrapErr, rngs::StdRng, rngs::SysRng, RngExt, SeedableRng};

use super::{
    args::Args,
    flow::{text_for, unapplicable, Flow, Unapplicable},
    masks::bin_len,
};

/// The most characters an alias argument may reveal.
const MAX_REVEAL: usize = 400;

/// An alias filter.
#[derive(Debug, Clone)]
pub enum Alias {
    /// `alias_preserve_format: reveal_first, reveal_last`.
    PreserveFormat {
        /// Characters kept at the start.
        first: usize,
        /// Characters kept at the end.
        last: usize,
    },
    /// `alias_preserve_length: reveal_first, reveal_last`.
    PreserveLength {
        /// Characters kept at the start.
        first: usize,
        /// Characters kept at the end.
        last: usize,
    },
    /// `alias_card: reveal_bin, reveal_last4`.
    Card {
        /// Keep the BIN.
        bin: bool,
        /// Keep the last four digits.
        last4: bool,
    },
}

impl Alias {
    /// The filter `name` with its `argument` text, if `name` is one of these.
    pub(crate) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Self, String>> {
        let counts = |name: &'static str| {
            Args::parse(name, argument).and_then(|a| {
                a.at_most(2)?;
                Ok((
                    a.count_or_zero(0, MAX_REVEAL)?,
                    a.count_or_zero(1, MAX_REVEAL)?,
                ))
            })
        };
        match name {
            "alias_preserve_format" => Some(
                counts("alias_preserve_format")
                    .map(|(first, last)| Self::PreserveFormat { first, last }),
            ),
            "alias_preserve_length" => Some(
                counts("alias_preserve_length")
                    .map(|(first, last)| Self::PreserveLength { first, last }),
            ),
            "alias_card" => Some(Args::parse("alias_card", argument).and_then(|a| {
                a.at_most(2)?;
                Ok(Self::Card {
                    bin: a.flag(0)?,
                    last4: a.flag(1)?,
                })
            })),
            _ => None,
        }
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::PreserveFormat { .. } => "alias_preserve_format",
            Self::PreserveLength { .. } => "alias_preserve_length",
            Self::Card { .. } => "alias_card",
        }
    }

    /// Applies it, drawing from a generator seeded by the operating system's.
    pub(crate) fn apply(&self, input: Flow) -> Result<Flow, Unapplicable> {
        let mut rng = StdRng::from_rng(&mut UnwrapErr(SysRng));
        self.apply_with(input, &mut rng)
    }

    fn apply_with(&self, input: Flow, rng: &mut StdRng) -> Result<Flow, Unapplicable> {
        let chars: Vec<char> = text_for(self.name(), &input)?.chars().collect();
        let out = match self {
            Self::PreserveFormat { first, last } => drawn(&chars, *first, *last, |c| {
                if c.is_ascii_digit() {
                    digit(rng)
                } else if c.is_alphanumeric() {
                    let letter = char::from(b'a' + rng.random_range(0..26u8));
                    if c.is_uppercase() {
                        letter.to_ascii_uppercase()
                    } else {
                        letter
                    }
                } else {
                    c
                }
            }),
            Self::PreserveLength { first, last } => drawn(&chars, *first, *last, |_| {
                const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
                char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])
            }),
            Self::Card { bin, last4 } => card(&chars, *bin, *last4, rng)?,
        };
        Ok(Flow::from(out))
    }

    /// Upper bound of the result's JSON text: no longer than the input's (every character
    /// drawn is ASCII and needs no escape), quoted.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        input.saturating_add(2)
    }
}

fn digit(rng: &mut StdRng) -> char {
    char::from(b'0' + rng.random_range(0..10u8))
}

/// `chars` with the first `first` and last `last` kept and every other one passed to `draw`.
fn drawn(chars: &[char], first: usize, last: usize, mut draw: impl FnMut(char) -> char) -> String {
    let kept_from = chars.len().saturating_sub(last);
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if i < first || i >= kept_from {
                c
            } else {
                draw(c)
            }
        })
        .collect()
}

/// `alias_card`: spaces and dashes kept, the revealed digits kept, the others drawn, and the
/// result Luhn-valid when at least one digit was drawn.
fn card(chars: &[char], bin: bool, last4: bool, rng: &mut StdRng) -> Result<String, Unapplicable> {
    if !chars
        .iter()
        .all(|c| c.is_ascii_digit() || *c == ' ' || *c == '-')
    {
        return Err(unapplicable(
            "alias_card",
            "expects a card number of digits, spaces and dashes",
        ));
    }
    let count = chars.iter().filter(|c| c.is_ascii_digit()).count();
    let shown_first = if bin { bin_len(count) } else { 0 };
    let shown_last = if last4 { 4 } else { 0 };
    if count < shown_first + shown_last {
        return Err(unapplicable(
            "alias_card",
            "the card number is shorter than what it reveals",
        ));
    }
    let mut digits: Vec<u8> = chars
        .iter()
        .filter_map(|c| c.to_digit(10).and_then(|d| u8::try_from(d).ok()))
        .collect();
    let drawn_range = shown_first..count - shown_last;
    for d in &mut digits[drawn_range.clone()] {
        *d = rng.random_range(0..10u8);
    }
    if let Some(fix) = drawn_range.last() {
        digits[fix] = luhn_digit_at(&digits, fix);
    }
    let mut next = digits.into_iter();
    Ok(chars
        .iter()
        .map(|&c| {
            if c.is_ascii_digit() {
                char::from(b'0' + next.next().unwrap_or(0))
            } else {
                c
            }
        })
        .collect())
}

/// The digit at `at` that makes `digits` pass the Luhn check.
fn luhn_digit_at(digits: &[u8], at: usize) -> u8 {
    let weight = |i: usize, d: u8| {
        let doubled = (digits.len() - 1 - i) % 2 == 1;
        match (doubled, d * 2) {
            (true, twice) if twice > 9 => twice - 9,
            (true, twice) => twice,
            (false, _) => d,
        }
    };
    let rest: u32 = digits
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(i, &d)| u32::from(weight(i, d)))
        .sum();
    (0..10u8)
        .find(|&d| (rest + u32::from(weight(at, d))).is_multiple_of(10))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::filter::Filter;

    fn alias(filter: &str, input: &str) -> String {
        let f = Filter::parse(filter).expect(filter);
        let out = f
            .apply(Flow::Json(json!(input)))
            .expect(filter)
            .into_value();
        out.as_str().expect("a string").to_string()
    }

    fn luhn(number: &str) -> bool {
        let digits: Vec<u8> = number
            .bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| b - b'0')
            .collect();
        let sum: u32 = digits
            .iter()
            .rev()
            .enumerate()
            .map(|(i, &d)| {
                u32::from(if i % 2 == 1 {
                    if d * 2 > 9 {
                        d * 2 - 9
                    } else {
                        d * 2
                    }
                } else {
                    d
                })
            })
            .sum();
        sum.is_multiple_of(10)
    }

    #[test]
    fn documented_shapes() {
        let a = alias("alias_preserve_format: 3, 5", "ABC12345DEF67890");
        assert!(
            a.starts_with("ABC") && a.ends_with("67890") && a.len() == 16,
            "{a}"
        );
        let ssn = alias("alias_preserve_format: 0, 4", "111-22-3333");
        assert!(ssn.ends_with("-3333") && &ssn[3..4] == "-", "{ssn}");
        let l = alias("alias_preserve_length: 3", "ABC12345DEF67890");
        assert!(l.starts_with("ABC") && l.len() == 16, "{l}");
        let c = alias("alias_card: 'true', 'true'", "3622-7206-2716-5567");
        assert!(c.starts_with("3622-7206-") && c.ends_with("-5567"), "{c}");
        let short = Filter::parse("alias_card: true, true").expect("filter");
        assert!(
            short.apply(Flow::Json(json!("1234567"))).is_err(),
            "shorter than revealed"
        );
        assert!(Filter::parse("alias_card: 'yes'").is_err());
    }

    proptest! {
        /// Format kept, revealed parts kept, the others changed: letters stay letters of their
        /// case, digits stay digits, other characters stay in place.
        #[test]
        fn preserve_format_keeps_the_format(
            text in "[A-Za-z0-9 @._-]{1,40}", first in 0usize..6, last in 0usize..6,
        ) {
            let out = alias(&format!("alias_preserve_format: {first}, {last}"), &text);
            let (a, b): (Vec<char>, Vec<char>) = (text.chars().collect(), out.chars().collect());
            prop_assert_eq!(a.len(), b.len());
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                if i < first || i + last >= a.len() {
                    prop_assert_eq!(x, y);
                } else if x.is_ascii_digit() {
                    prop_assert!(y.is_ascii_digit());
                } else if x.is_ascii_alphabetic() {
                    prop_assert!(y.is_ascii_alphabetic() && x.is_uppercase() == y.is_uppercase());
                } else {
                    prop_assert_eq!(x, y);
                }
            }
        }

        #[test]
        fn preserve_length_keeps_the_length(text in "[^\u{0}]{1,40}", first in 0usize..4) {
            let out = alias(&format!("alias_preserve_length: {first}"), &text);
            prop_assert_eq!(out.chars().count(), text.chars().count());
            let kept: String = text.chars().take(first).collect();
            prop_assert!(out.starts_with(&kept));
            prop_assert!(out.chars().skip(first).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
        }

        #[test]
        fn alias_card_keeps_delimiters_reveals_and_luhn(
            groups in prop::collection::vec("[0-9]{4}", 4), dash in any::<bool>(),
            bin in any::<bool>(), last4 in any::<bool>(),
        ) {
            let sep = if dash { "-" } else { " " };
            let number = groups.join(sep);
            let out = alias(&format!("alias_card: {bin}, {last4}"), &number);
            prop_assert_eq!(out.len(), number.len());
            for (x, y) in number.chars().zip(out.chars()) {
                prop_assert_eq!(x.is_ascii_digit(), y.is_ascii_digit());
            }
            let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
            let (d_in, d_out) = (digits(&number), digits(&out));
            if bin { prop_assert_eq!(&d_in[..8], &d_out[..8]); }
            if last4 { prop_assert_eq!(&d_in[12..], &d_out[12..]); }
            prop_assert!(luhn(&out), "{}", out);
        }
    }

    #[test]
    fn the_other_characters_change() {
        // 12 drawn digits equal the input's by chance once in 10^11: twice in a row never.
        let number = "4242424242424242";
        let a = alias("alias_card: false, true", number);
        let b = alias("alias_card: false, true", number);
        assert!(a != number || b != number);
        assert_ne!(a, b);
    }
}
