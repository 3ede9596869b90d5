//! A filter's arguments: `name: a, b, …`, each a quoted string (`'…'` or `"…"`, no escapes, as
//! in Liquid), a whole number, or `true`/`false`.

use std::fmt;

/// One argument as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// `'text'` or `"text"`.
    Str(String),
    /// `12`, `-2`.
    Int(i64),
    /// `true`, `false`.
    Bool(bool),
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Str(_) => f.write_str("a string"),
            Arg::Int(_) => f.write_str("a number"),
            Arg::Bool(_) => f.write_str("a boolean"),
        }
    }
}

/// The arguments of one filter, read left to right by the filter's constructor.
#[derive(Debug)]
pub(crate) struct Args {
    name: &'static str,
    items: Vec<Arg>,
}

impl Args {
    /// Reads `text` (what follows `name:`; `None` when there is no colon).
    pub(crate) fn parse(name: &'static str, text: Option<&str>) -> Result<Self, String> {
        let items = match text {
            None => Vec::new(),
            Some(text) => lex(text).map_err(|e| format!("filter `{name}`: {e}"))?,
        };
        Ok(Self { name, items })
    }

    /// How many arguments were given.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Refuses more than `max` arguments.
    pub(crate) fn at_most(&self, max: usize) -> Result<(), String> {
        if self.items.len() > max {
            return Err(match max {
                0 => format!("filter `{}` takes no argument", self.name),
                1 => format!("filter `{}` takes at most one argument", self.name),
                n => format!("filter `{}` takes at most {n} arguments", self.name),
            });
        }
        Ok(())
    }

    fn wrong(&self, position: usize, what: &str) -> String {
        format!(
            "filter `{}`: argument {} must be {what}",
            self.name,
            position + 1
        )
    }

    fn get(&self, position: usize) -> Option<&Arg> {
        self.items.get(position)
    }

    /// Argument `position` as a string (required).
    pub(crate) fn string(&self, position: usize) -> Result<String, String> {
        match self.get(position) {
            Some(Arg::Str(s)) => Ok(s.clone()),
            _ => Err(self.wrong(position, "a quoted string")),
        }
    }

    /// Argument `position` as a string, `default` when absent.
    pub(crate) fn string_or(&self, position: usize, default: &str) -> Result<String, String> {
        match self.get(position) {
            None => Ok(default.to_string()),
            Some(_) => self.string(position),
        }
    }

    /// Argument `position` as one character (required).
    pub(crate) fn char(&self, position: usize) -> Result<char, String> {
        let mut chars = match self.get(position) {
            Some(Arg::Str(s)) => s.chars(),
            _ => return Err(self.wrong(position, "one quoted character")),
        };
        match (chars.next(), chars.next()) {
            (Some(c), None) => Ok(c),
            _ => Err(self.wrong(position, "one quoted character")),
        }
    }

    /// Argument `position` as one character, `default` when absent.
    pub(crate) fn char_or(&self, position: usize, default: char) -> Result<char, String> {
        match self.get(position) {
            None => Ok(default),
            Some(_) => self.char(position),
        }
    }

    /// Argument `position` as a whole number within `range` (required).
    pub(crate) fn int(
        &self,
        position: usize,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64, String> {
        match self.get(position) {
            Some(Arg::Int(n)) if range.contains(n) => Ok(*n),
            _ => Err(self.wrong(
                position,
                &format!("a whole number from {} to {}", range.start(), range.end()),
            )),
        }
    }

    /// Argument `position` as a count from 0 to `max`, `0` when absent.
    pub(crate) fn count_or_zero(&self, position: usize, max: usize) -> Result<usize, String> {
        match self.get(position) {
            None => Ok(0),
            Some(_) => self.count(position, max),
        }
    }

    /// Argument `position` as a count from 0 to `max` (required).
    pub(crate) fn count(&self, position: usize, max: usize) -> Result<usize, String> {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let n = self.int(position, 0..=max)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Argument `position` as a boolean (`true`, `false`, or either quoted, as Basis Theory's
    /// examples write them), `false` when absent.
    pub(crate) fn flag(&self, position: usize) -> Result<bool, String> {
        match self.get(position) {
            None => Ok(false),
            Some(Arg::Bool(b)) => Ok(*b),
            Some(Arg::Str(s)) if s == "true" => Ok(true),
            Some(Arg::Str(s)) if s == "false" => Ok(false),
            Some(_) => Err(self.wrong(position, "true or false")),
        }
    }
}

/// Splits `text` into arguments.
fn lex(text: &str) -> Result<Vec<Arg>, String> {
    let mut items = Vec::new();
    let mut rest = text.trim_start();
    if rest.is_empty() {
        return Err("an argument is expected after `:`".into());
    }
    loop {
        let (arg, after) = one(rest)?;
        items.push(arg);
        rest = after.trim_start();
        match rest.strip_prefix(',') {
            Some(more) => rest = more.trim_start(),
            None if rest.is_empty() => return Ok(items),
            None => return Err("arguments are separated by commas".into()),
        }
    }
}

/// The argument at the start of `text`, and what follows it.
fn one(text: &str) -> Result<(Arg, &str), String> {
    let Some(first) = text.chars().next() else {
        return Err("an argument is missing after `,`".into());
    };
    if first == '\'' || first == '"' {
        let body = &text[1..];
        let end = body
            .find(first)
            .ok_or_else(|| "a quoted argument is not closed".to_string())?;
        return Ok((Arg::Str(body[..end].to_string()), &body[end + 1..]));
    }
    let end = text
        .find(|c: char| c == ',' || c.is_whitespace())
        .unwrap_or(text.len());
    let word = &text[..end];
    let arg = match word {
        "true" => Arg::Bool(true),
        "false" => Arg::Bool(false),
        _ => Arg::Int(word.parse().map_err(|_| {
            "an argument must be quoted, a whole number, true or false".to_string()
        })?),
    };
    Ok((arg, &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_strings_numbers_and_booleans() {
        assert_eq!(
            lex(r#"7, 4, '#', "-""#).expect("args"),
            vec![
                Arg::Int(7),
                Arg::Int(4),
                Arg::Str("#".into()),
                Arg::Str("-".into())
            ]
        );
        assert_eq!(lex("-2,2").expect("args"), vec![Arg::Int(-2), Arg::Int(2)]);
        assert_eq!(
            lex("'true', false").expect("args"),
            vec![Arg::Str("true".into()), Arg::Bool(false)]
        );
        assert_eq!(lex("'a,b'").expect("args"), vec![Arg::Str("a,b".into())]);
        for bad in ["", "x", "'open", "1 2", "1,", "1.5"] {
            assert!(lex(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accessors_name_the_filter_and_the_position() {
        let args = Args::parse("pad_left", Some("6, 'ab'")).expect("args");
        assert_eq!(args.count(0, 100), Ok(6));
        let e = args.char(1).expect_err("two characters");
        assert!(e.contains("pad_left") && e.contains("argument 2"), "{e}");
        assert!(args.at_most(1).is_err());
        assert_eq!(args.flag(5), Ok(false));
    }
}
