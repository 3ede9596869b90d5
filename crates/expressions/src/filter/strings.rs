//! The standard Liquid filters Basis Theory's examples use (`slice`, `split`, `first`,
//! `last`, `upcase`, `downcase`, `remove`, `replace`, `append`, `prepend`, `size`) and its
//! `pad_left` and `pad_right`. None takes a regular expression: `remove` and `replace` match
//! their argument literally.

use serde_json::Value;

use super::{
    args::Args,
    flow::{chars_bound, text_for, unapplicable, Flow, Unapplicable, MAX_CHAR_JSON},
};

/// The longest length `pad_left` and `pad_right` may ask for, and the largest `slice` count.
const MAX_LENGTH: usize = 10_000;

/// A string or array filter.
#[derive(Debug, Clone)]
pub enum TextFilter {
    /// `slice: start, length`: `length` (1) characters or elements from `start` (from the end
    /// when negative).
    Slice {
        /// Where to start.
        start: i64,
        /// How many.
        length: usize,
    },
    /// `split: separator`: the strings between separators (each character for `''`).
    Split(String),
    /// `first`: an array's first element, a string's first character.
    First,
    /// `last`: an array's last element, a string's last character.
    Last,
    /// `upcase`.
    Upcase,
    /// `downcase`.
    Downcase,
    /// `remove: text`: every occurrence removed.
    Remove(String),
    /// `replace: text, replacement`: every occurrence replaced.
    Replace(String, String),
    /// `append: text`.
    Append(String),
    /// `prepend: text`.
    Prepend(String),
    /// `size`: characters of a string, elements of an array or object.
    Size,
    /// `pad_left: length, pad_char`.
    PadLeft(usize, char),
    /// `pad_right: length, pad_char`.
    PadRight(usize, char),
}

impl TextFilter {
    /// The filter `name` with its `argument` text, if `name` is one of these.
    pub(crate) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Self, String>> {
        let read = |name: &'static str, build: fn(&Args) -> Result<TextFilter, String>| {
            Some(Args::parse(name, argument).and_then(|a| build(&a)))
        };
        let plain = |name: &'static str, f: TextFilter| {
            Some(
                Args::parse(name, argument)
                    .and_then(|a| a.at_most(0))
                    .map(|()| f),
            )
        };
        match name {
            "slice" => read("slice", |a| {
                a.at_most(2)?;
                let length = if a.len() > 1 {
                    a.count(1, MAX_LENGTH)?
                } else {
                    1
                };
                Ok(TextFilter::Slice {
                    start: a.int(0, -(MAX_LENGTH as i64)..=MAX_LENGTH as i64)?,
                    length,
                })
            }),
            "split" => read("split", |a| one_string(a).map(TextFilter::Split)),
            "first" => plain("first", TextFilter::First),
            "last" => plain("last", TextFilter::Last),
            "upcase" => plain("upcase", TextFilter::Upcase),
            "downcase" => plain("downcase", TextFilter::Downcase),
            "remove" => read("remove", |a| one_string(a).map(TextFilter::Remove)),
            "replace" => read("replace", |a| {
                a.at_most(2)?;
                Ok(TextFilter::Replace(a.string(0)?, a.string_or(1, "")?))
            }),
            "append" => read("append", |a| one_string(a).map(TextFilter::Append)),
            "prepend" => read("prepend", |a| one_string(a).map(TextFilter::Prepend)),
            "size" => plain("size", TextFilter::Size),
            "pad_left" => read("pad_left", |a| {
                a.at_most(2)?;
                Ok(TextFilter::PadLeft(a.count(0, MAX_LENGTH)?, a.char(1)?))
            }),
            "pad_right" => read("pad_right", |a| {
                a.at_most(2)?;
                Ok(TextFilter::PadRight(a.count(0, MAX_LENGTH)?, a.char(1)?))
            }),
            _ => None,
        }
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Slice { .. } => "slice",
            Self::Split(_) => "split",
            Self::First => "first",
            Self::Last => "last",
            Self::Upcase => "upcase",
            Self::Downcase => "downcase",
            Self::Remove(_) => "remove",
            Self::Replace(..) => "replace",
            Self::Append(_) => "append",
            Self::Prepend(_) => "prepend",
            Self::Size => "size",
            Self::PadLeft(..) => "pad_left",
            Self::PadRight(..) => "pad_right",
        }
    }

    /// Applies it.
    pub(crate) fn apply(&self, input: Flow) -> Result<Flow, Unapplicable> {
        let name = self.name();
        match (self, input) {
            (Self::Slice { start, length }, Flow::Json(Value::Array(items))) => {
                let (from, to) = window(items.len(), *start, *length);
                Ok(Flow::Json(Value::Array(items[from..to].to_vec())))
            }
            (Self::First, Flow::Json(Value::Array(items))) => {
                Ok(Flow::Json(items.into_iter().next().unwrap_or(Value::Null)))
            }
            (Self::Last, Flow::Json(Value::Array(mut items))) => {
                Ok(Flow::Json(items.pop().unwrap_or(Value::Null)))
            }
            (Self::Size, Flow::Json(Value::Array(items))) => Ok(Flow::Json(items.len().into())),
            (Self::Size, Flow::Json(Value::Object(members))) => {
                Ok(Flow::Json(members.len().into()))
            }
            (Self::Size, Flow::Json(Value::Null)) => Ok(Flow::Json(0.into())),
            (Self::PadLeft(..) | Self::PadRight(..), Flow::Json(Value::Null)) => {
                Ok(Flow::Json(Value::Null))
            }
            (Self::Append(_) | Self::Prepend(_), Flow::Json(Value::Null)) => {
                self.on_text(String::new())
            }
            (_, input) => {
                let text = text_for(name, &input)
                    .map_err(|_| unapplicable(name, "expects a string, a number or an array"))?;
                self.on_text(text)
            }
        }
    }

    /// Applies it to a string.
    fn on_text(&self, text: String) -> Result<Flow, Unapplicable> {
        let chars = || text.chars().collect::<Vec<_>>();
        let out: Value = match self {
            Self::Slice { start, length } => {
                let chars = chars();
                let (from, to) = window(chars.len(), *start, *length);
                chars[from..to].iter().collect::<String>().into()
            }
            Self::Split(sep) if sep.is_empty() => {
                text.chars().map(|c| Value::String(c.to_string())).collect()
            }
            Self::Split(sep) => text.split(sep.as_str()).map(Value::from).collect(),
            Self::First => text
                .chars()
                .next()
                .map(String::from)
                .unwrap_or_default()
                .into(),
            Self::Last => text
                .chars()
                .last()
                .map(String::from)
                .unwrap_or_default()
                .into(),
            Self::Upcase => text.to_uppercase().into(),
            Self::Downcase => text.to_lowercase().into(),
            Self::Remove(what) if what.is_empty() => text.into(),
            Self::Remove(what) => text.replace(what.as_str(), "").into(),
            Self::Replace(what, _) if what.is_empty() => text.into(),
            Self::Replace(what, with) => text.replace(what.as_str(), with).into(),
            Self::Append(tail) => format!("{text}{tail}").into(),
            Self::Prepend(head) => format!("{head}{text}").into(),
            Self::Size => text.chars().count().into(),
            Self::PadLeft(length, pad) => {
                let missing = length.saturating_sub(text.chars().count());
                format!("{}{text}", pad.to_string().repeat(missing)).into()
            }
            Self::PadRight(length, pad) => {
                let missing = length.saturating_sub(text.chars().count());
                format!("{text}{}", pad.to_string().repeat(missing)).into()
            }
        };
        Ok(Flow::Json(out))
    }

    /// Upper bound of the result's JSON text, from the input's.
    pub(crate) fn bound(&self, input: u64) -> u64 {
        let text = |s: &str| s.chars().count() as u64 * MAX_CHAR_JSON;
        match self {
            // At most the input, plus the quotes a number's text gains as a string.
            Self::Slice { .. } | Self::First | Self::Last | Self::Remove(_) => {
                input.saturating_add(2)
            }
            // Each character its own string: quotes and a comma beside its escaped form.
            Self::Split(_) => input.saturating_mul(MAX_CHAR_JSON + 3).saturating_add(2),
            // Case mapping can turn one character into three.
            Self::Upcase | Self::Downcase => input.saturating_mul(4).saturating_add(2),
            Self::Replace(_, with) => input
                .saturating_mul(text(with).saturating_add(1))
                .saturating_add(2),
            Self::Append(s) | Self::Prepend(s) => input.saturating_add(text(s)).saturating_add(2),
            Self::Size => 20,
            Self::PadLeft(length, _) | Self::PadRight(length, _) => {
                input.saturating_add(chars_bound(*length as u64))
            }
        }
    }
}

/// A filter's one string argument.
fn one_string(args: &Args) -> Result<String, String> {
    args.at_most(1)?;
    args.string(0)
}

/// The range `slice: start, length` takes of `len` items: from the end when `start` is
/// negative, empty when it falls outside.
fn window(len: usize, start: i64, length: usize) -> (usize, usize) {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let from = if start < 0 { len_i + start } else { start };
    if from < 0 || from >= len_i {
        return (0, 0);
    }
    let from = usize::try_from(from).unwrap_or(0);
    (from, from.saturating_add(length).min(len))
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

    #[test]
    fn liquid_filters_as_basis_theory_uses_them() {
        for (filter, input, expected) in [
            ("slice: -2, 2", json!("2025"), json!("25")),
            ("slice: 0", json!("2025"), json!("2")),
            ("slice: 12, 2", json!("3622720627165567"), json!("55")),
            ("slice: 1, 2", json!([1, 2, 3]), json!([2, 3])),
            ("slice: 9", json!("abc"), json!("")),
            ("slice: -9, 2", json!("abc"), json!("")),
            ("split: ' '", json!("John Doe"), json!(["John", "Doe"])),
            ("split: ''", json!("ab"), json!(["a", "b"])),
            ("first", json!(["a", "b"]), json!("a")),
            ("last", json!(["a", "b"]), json!("b")),
            ("first", json!("abc"), json!("a")),
            ("last", json!([]), Value::Null),
            ("upcase", json!("Doe"), json!("DOE")),
            ("downcase", json!("DOE"), json!("doe")),
            ("remove: '-'", json!("111-22-3333"), json!("111223333")),
            ("replace: '-', ''", json!("111-22-3333"), json!("111223333")),
            ("replace: '-', '.'", json!("1-2"), json!("1.2")),
            ("append: '@x'", json!("a"), json!("a@x")),
            ("prepend: 'x:'", json!(12), json!("x:12")),
            ("size", json!("héllo"), json!(5)),
            ("size", json!([1, 2]), json!(2)),
            ("pad_left: 6, '0'", json!("1234"), json!("001234")),
            ("pad_left: 6, 'X'", json!("1234"), json!("XX1234")),
            ("pad_left: 4, '0'", json!("1234"), json!("1234")),
            ("pad_left: 2, '0'", json!("1234"), json!("1234")),
            ("pad_left: 2, '0'", json!(3), json!("03")),
            ("pad_right: 6, '0'", json!("1234"), json!("123400")),
            ("pad_right: 6, 'X'", json!("1234"), json!("1234XX")),
            ("pad_right: 2, '0'", json!("1234"), json!("1234")),
            ("pad_left: 6, '0'", Value::Null, Value::Null),
        ] {
            assert_eq!(run(filter, input.clone()), expected, "{filter} on {input}");
        }
        // Basis Theory's documented chain.
        let name = run("split: ' '", json!("John Doe"));
        let last = run("last", name);
        assert_eq!(run("upcase", last), json!("DOE"));
    }

    #[test]
    fn wrong_arguments_are_refused_naming_the_filter() {
        for bad in [
            "slice",
            "slice: 'a'",
            "pad_left: 6",
            "pad_left: 6, '00'",
            "pad_left: 100000, '0'",
            "split",
            "replace",
            "upcase: 1",
        ] {
            let e = Filter::parse(bad).expect_err(bad);
            let name = bad.split(':').next().unwrap_or(bad);
            assert!(e.contains(name), "{bad}: {e}");
        }
        let upcase = Filter::parse("upcase").expect("filter");
        assert!(upcase.apply(Flow::Json(json!({"a": 1}))).is_err());
    }
}
