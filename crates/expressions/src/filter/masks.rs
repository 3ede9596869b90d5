//! Masks: `reveal`, `reveal_last`, `last4`, `card_mask`, `card_bin` and `card_exp`.
//!
//! Where Basis Theory's documentation leaves room, these rules hold (docs/api.md, "Filters"):
//! `reveal` masks every character between the first F and the last L but those listed to
//! preserve, and the whole value when F + L covers it or when the result would equal the
//! input; `reveal_last` masks letters and digits only, leaving other characters in place;
//! `card_mask` keeps its preserved character in place; `card_bin` follows the documentation's
//! text (6 digits below 16, else 8), not its example.

use serde_json::Value;

use super::{
    args::Args,
    flow::{chars_bound, text_for, unapplicable, Flow, Unapplicable},
};

/// The longest count a mask argument may give.
const MAX_COUNT: usize = 10_000;

/// One part of a `card_exp` format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpPart {
    /// `MM`: the month, two digits.
    Month,
    /// `YYYY`: the year, four digits.
    Year,
    /// `YY`: the year's last two digits.
    ShortYear,
    /// A separator: `/`, `-`, `_`, ` ` or `.`.
    Literal(char),
}

/// A mask.
#[derive(Debug, Clone)]
pub enum Mask {
    /// `reveal: first, last, mask_char, preserve_chars`.
    Reveal {
        /// Characters shown at the start.
        first: usize,
        /// Characters shown at the end.
        last: usize,
        /// The masking character (`X`).
        mask: char,
        /// Characters never masked.
        preserve: String,
    },
    /// `reveal_last: length, mask_char`.
    RevealLast {
        /// Characters shown at the end.
        length: usize,
        /// The masking character (`X`).
        mask: char,
    },
    /// `last4`: the last four characters.
    Last4,
    /// `card_mask: reveal_bin, reveal_last4, mask_char, preserve_char`.
    Card {
        /// Show the BIN.
        bin: bool,
        /// Show the last four digits.
        last4: bool,
        /// The masking character (`X`).
        mask: char,
        /// Characters kept in place.
        preserve: String,
    },
    /// `card_bin: separator_char`.
    CardBin {
        /// Characters left out of the BIN.
        separator: String,
    },
    /// `card_exp: format`.
    CardExp(Vec<ExpPart>),
}

impl Mask {
    /// The filter `name` with its `argument` text, if `name` is one of these.
    pub(crate) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Self, String>> {
        let read = |name: &'static str, build: fn(&Args) -> Result<Mask, String>| {
            Some(Args::parse(name, argument).and_then(|a| build(&a)))
        };
        match name {
            "reveal" => read("reveal", |a| {
                a.at_most(4)?;
                Ok(Mask::Reveal {
                    first: a.count_or_zero(0, MAX_COUNT)?,
                    last: a.count_or_zero(1, MAX_COUNT)?,
                    mask: a.char_or(2, 'X')?,
                    preserve: a.string_or(3, "")?,
                })
            }),
            "reveal_last" => read("reveal_last", |a| {
                a.at_most(2)?;
                Ok(Mask::RevealLast {
                    length: a.count(0, MAX_COUNT)?,
                    mask: a.char_or(1, 'X')?,
                })
            }),
            "last4" => read("last4", |a| a.at_most(0).map(|()| Mask::Last4)),
            "card_mask" => read("card_mask", |a| {
                a.at_most(4)?;
                Ok(Mask::Card {
                    bin: a.flag(0)?,
                    last4: a.flag(1)?,
                    mask: a.char_or(2, 'X')?,
                    preserve: a.string_or(3, "")?,
                })
            }),
            "card_bin" => read("card_bin", |a| {
                a.at_most(1)?;
                Ok(Mask::CardBin {
                    separator: a.string_or(0, "")?,
                })
            }),
            "card_exp" => read("card_exp", |a| {
                a.at_most(1)?;
                exp_format(&a.string(0)?).map(Mask::CardExp)
            }),
            _ => None,
        }
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Reveal { .. } => "reveal",
            Self::RevealLast { .. } => "reveal_last",
            Self::Last4 => "last4",
            Self::Card { .. } => "card_mask",
            Self::CardBin { .. } => "card_bin",
            Self::CardExp(_) => "card_exp",
        }
    }

    /// Applies it.
    pub(crate) fn apply(&self, input: Flow) -> Result<Flow, Unapplicable> {
        let name = self.name();
        let text = match self {
            Self::CardExp(format) => return card_exp(format, &input).map(Flow::from),
            _ => text_for(name, &input)?,
        };
        let chars: Vec<char> = text.chars().collect();
        let out = match self {
            Self::Reveal {
                first,
                last,
                mask,
                preserve,
            } => reveal(&chars, *first, *last, *mask, preserve),
            Self::RevealLast { length, mask } => reveal_last(&chars, *length, *mask),
            Self::Last4 => chars[chars.len().saturating_sub(4)..].iter().collect(),
            Self::Card {
                bin,
                last4,
                mask,
                preserve,
            } => card_mask(&chars, *bin, *last4, *mask, preserve),
            Self::CardBin { separator } => {
                let digits: Vec<char> = chars
                    .into_iter()
                    .filter(|c| !separator.contains(*c))
                    .collect();
                digits[..bin_len(digits.len()).min(digits.len())]
                    .iter()
                    .collect()
            }
            Self::CardExp(_) => String::new(),
        };
        Ok(Flow::from(out))
    }

    /// Upper bound of the result's JSON text, from the input's: every character may become
    /// the mask character, which may take more bytes than the one it hides.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        match self {
            Self::CardExp(format) => 2 + 4 * format.len() as u64,
            Self::Last4 => chars_bound(4),
            _ => chars_bound(input),
        }
    }
}

/// The BIN's length for a card number of `digits` digits.
pub(crate) fn bin_len(digits: usize) -> usize {
    if digits < 16 {
        6
    } else {
        8
    }
}

/// `reveal`: the first `first` and last `last` characters shown, every other one but those in
/// `preserve` masked; everything masked when they cover the value or nothing would change.
fn reveal(chars: &[char], first: usize, last: usize, mask: char, preserve: &str) -> String {
    let hide = |c: char| if preserve.contains(c) { c } else { mask };
    if first.saturating_add(last) >= chars.len() {
        return chars.iter().map(|&c| hide(c)).collect();
    }
    let masked: String = chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if i < first || i >= chars.len() - last {
                c
            } else {
                hide(c)
            }
        })
        .collect();
    if masked.chars().eq(chars.iter().copied()) {
        chars.iter().map(|&c| hide(c)).collect()
    } else {
        masked
    }
}

/// `reveal_last`: the last `length` characters shown, every other letter or digit masked.
fn reveal_last(chars: &[char], length: usize, mask: char) -> String {
    let shown_from = chars.len().saturating_sub(length);
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if i >= shown_from || !c.is_alphanumeric() {
                c
            } else {
                mask
            }
        })
        .collect()
}

/// `card_mask`: every character but the preserved ones masked, but for the BIN and the last
/// four digits when asked; everything masked when nothing would change.
fn card_mask(chars: &[char], bin: bool, last4: bool, mask: char, preserve: &str) -> String {
    let kept = |c: char| preserve.contains(c);
    let digits = chars.iter().filter(|&&c| !kept(c)).count();
    let shown_first = if bin { bin_len(digits) } else { 0 };
    let shown_last = if last4 { 4 } else { 0 };
    let mut seen = 0;
    let masked: String = chars
        .iter()
        .map(|&c| {
            if kept(c) {
                return c;
            }
            seen += 1;
            if seen <= shown_first || seen > digits.saturating_sub(shown_last) {
                c
            } else {
                mask
            }
        })
        .collect();
    if masked.chars().eq(chars.iter().copied()) {
        chars
            .iter()
            .map(|&c| if kept(c) { c } else { mask })
            .collect()
    } else {
        masked
    }
}

/// Reads a `card_exp` format: `MM`, `YYYY` and `YY` with separators between them.
fn exp_format(format: &str) -> Result<Vec<ExpPart>, String> {
    let mut parts = Vec::new();
    let mut rest = format;
    while !rest.is_empty() {
        let (part, len) = if rest.starts_with("YYYY") {
            (ExpPart::Year, 4)
        } else if rest.starts_with("YY") {
            (ExpPart::ShortYear, 2)
        } else if rest.starts_with("MM") {
            (ExpPart::Month, 2)
        } else if let Some(c) = rest.chars().next().filter(|c| "/-_ .".contains(*c)) {
            (ExpPart::Literal(c), c.len_utf8())
        } else {
            return Err("filter `card_exp`: the format is made of MM, YY, YYYY and the separators / - _ . and space (e.g. 'MM/YY')".into());
        };
        parts.push(part);
        rest = &rest[len..];
    }
    if !parts.iter().any(|p| !matches!(p, ExpPart::Literal(_))) {
        return Err("filter `card_exp` needs a format holding MM, YY or YYYY".into());
    }
    Ok(parts)
}

/// `card_exp`: a card's expiry (an object with `expiration_month` 1–12 and a four-digit
/// `expiration_year`) in `format`.
fn card_exp(format: &[ExpPart], input: &Flow) -> Result<String, Unapplicable> {
    let wrong = || {
        unapplicable(
            "card_exp",
            "expects a card with expiration_month and expiration_year",
        )
    };
    let Flow::Json(Value::Object(card)) = input else {
        return Err(wrong());
    };
    let number = |key: &str| card.get(key).and_then(Value::as_u64);
    let month = number("expiration_month").filter(|m| (1..=12).contains(m));
    let year = number("expiration_year").filter(|y| (1000..=9999).contains(y));
    let (Some(month), Some(year)) = (month, year) else {
        return Err(wrong());
    };
    Ok(format
        .iter()
        .map(|part| match part {
            ExpPart::Month => format!("{month:02}"),
            ExpPart::Year => format!("{year:04}"),
            ExpPart::ShortYear => format!("{:02}", year % 100),
            ExpPart::Literal(c) => c.to_string(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::filter::Filter;

    fn run(filter: &str, input: Value) -> Value {
        let f = Filter::parse(filter).expect(filter);
        f.apply(Flow::Json(input)).expect(filter).into_value()
    }

    /// Basis Theory's documented examples of `reveal` and `reveal_last`, and the rules of
    /// docs/api.md where they leave room.
    #[test]
    fn reveal_and_reveal_last_follow_the_documented_examples() {
        let card = json!("3622-7206-2716-5567");
        for (filter, expected) in [
            ("reveal: 6", "3622-7XXXXXXXXXXXXX"),
            ("reveal: 7, 5", "3622-72XXXXXXX-5567"),
            ("reveal: 7, 5, '#'", "3622-72#######-5567"),
            ("reveal: 7, 4, '#', \"-\"", "3622-72##-####-5567"),
            ("reveal: 10, 9", "XXXXXXXXXXXXXXXXXXX"),
            ("reveal", "XXXXXXXXXXXXXXXXXXX"),
        ] {
            assert_eq!(run(filter, card.clone()), json!(expected), "{filter}");
        }
        assert_eq!(
            run("reveal_last: 6", json!("36227206271667")),
            json!("XXXXXXXX271667")
        );
        assert_eq!(
            run("reveal_last: 3, '#'", json!("36227206271667")),
            json!("###########667")
        );
        assert_eq!(
            run("reveal_last: 4", json!("123-45-6789")),
            json!("XXX-XX-6789")
        );
        assert_eq!(
            run("reveal_last: 9", json!("1234")),
            json!("1234"),
            "shorter: whole"
        );
        // Nothing left to hide: the whole value is masked, not returned as it was.
        assert_eq!(
            run("reveal: 2, 2, 'X', '-'", json!("ab-cd")),
            json!("XX-XX")
        );
        assert_eq!(run("last4", json!(4242424242424242u64)), json!("4242"));
    }

    #[test]
    fn card_mask_bin_and_exp_follow_the_documented_examples() {
        let number = json!("3622720627165567");
        for (filter, expected) in [
            ("card_mask: 'false', 'false', 'X', '-'", "XXXXXXXXXXXXXXXX"),
            ("card_mask: 'true', 'false', 'X', '-'", "36227206XXXXXXXX"),
            ("card_mask: 'true', 'true', '#', '-'", "36227206####5567"),
            ("card_mask: 'false', 'true', 'X', '-'", "XXXXXXXXXXXX5567"),
            ("card_mask", "XXXXXXXXXXXXXXXX"),
        ] {
            assert_eq!(run(filter, number.clone()), json!(expected), "{filter}");
        }
        let dashed = json!("3622-7206-2716-5567");
        for (filter, expected) in [
            (
                "card_mask: 'false', 'false', 'X', '-'",
                "XXXX-XXXX-XXXX-XXXX",
            ),
            (
                "card_mask: 'true', 'false', 'X', '-'",
                "3622-7206-XXXX-XXXX",
            ),
            ("card_mask: 'true', 'true', '#', '-'", "3622-7206-####-5567"),
            (
                "card_mask: 'false', 'true', 'X', '-'",
                "XXXX-XXXX-XXXX-5567",
            ),
        ] {
            assert_eq!(run(filter, dashed.clone()), json!(expected), "{filter}");
        }
        // The documentation's example answers 42424242 for this number: its text's rule.
        assert_eq!(run("card_bin", number.clone()), json!("36227206"));
        assert_eq!(run("card_bin: '-'", dashed), json!("36227206"));
        assert_eq!(run("card_bin", json!("378282246310005")), json!("378282"));
        let card =
            json!({"number": "3622720627165567", "expiration_month": 10, "expiration_year": 2028});
        for (format, expected) in [
            ("MM", "10"),
            ("MMYY", "1028"),
            ("MM/YY", "10/28"),
            ("YYYY", "2028"),
            ("YYYY-MM", "2028-10"),
            ("YYYY/MM", "2028/10"),
            ("MM/YYYY", "10/2028"),
            ("MM_YYYY", "10_2028"),
            ("MM-YYYY", "10-2028"),
        ] {
            assert_eq!(
                run(&format!("card_exp: '{format}'"), card.clone()),
                json!(expected)
            );
        }
        let march = json!({"expiration_month": 3, "expiration_year": 2025});
        assert_eq!(run("card_exp: 'MM/YY'", march), json!("03/25"));
    }

    #[test]
    fn wrong_arguments_and_inputs_are_named() {
        for bad in [
            "card_exp",
            "card_exp: 'DD'",
            "card_exp: '/'",
            "reveal: -1",
            "reveal: 1, 2, 'XY'",
            "reveal_last",
            "card_mask: 'maybe'",
            "last4: 2",
        ] {
            let e = Filter::parse(bad).expect_err(bad);
            let name = bad.split(':').next().unwrap_or(bad);
            assert!(e.contains(name), "{bad}: {e}");
        }
        let exp = Filter::parse("card_exp: 'MM'").expect("filter");
        for input in [
            json!("1028"),
            json!({"expiration_month": 13, "expiration_year": 2028}),
        ] {
            let e = exp.apply(Flow::Json(input)).expect_err("not a card");
            assert_eq!(e.filter, "card_exp");
        }
        let reveal = Filter::parse("reveal: 1").expect("filter");
        assert!(reveal.apply(Flow::Json(json!({"a": 1}))).is_err());
    }
}
