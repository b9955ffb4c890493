//! `${NAME}` in a configuration's values: replaced by the environment variable's text
//! before TOML reads the file.
//!
//! - `${NAME}`: the variable's value; unset is an error naming the variable and the line.
//! - `${NAME:-default}`: the value, or `default` when the variable is unset or empty.
//! - `$${`: a literal `${`.
//!
//! The replacement is textual: the value is put in the text as it is, so a string value is
//! written inside quotes (`url = "${NATS_URL}"`) and a number or boolean without
//! (`max_in_flight = ${MAX:-64}`). Only values are read: keys, table headers and comments
//! stay as written. A value may not hold a line break, so every line keeps its number.

use crate::ConfigError;
use std::borrow::Cow;

/// `text` with every `${…}` in its values replaced through `env`; every problem (an unset
/// variable without default, a bad name, a `${` without `}`) in one error.
pub(crate) fn substitute<'a>(
    text: &'a str,
    origin: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Cow<'a, str>, ConfigError> {
    if !text.contains("${") {
        return Ok(Cow::Borrowed(text));
    }
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        line: 1,
        out: Vec::with_capacity(text.len()),
        errors: Vec::new(),
        origin,
        env,
    };
    scan.document();
    match ConfigError::merge(scan.errors) {
        Some(e) => Err(e),
        None => Ok(Cow::Owned(String::from_utf8_lossy(&scan.out).into_owned())),
    }
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
    out: Vec<u8>,
    errors: Vec<ConfigError>,
    origin: &'a str,
    env: &'a dyn Fn(&str) -> Option<String>,
}

/// Where in the TOML grammar the scan is: before `=` (a key or a table header) or after.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Key,
    Value,
}

impl Scan<'_> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.at + offset).copied()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.bytes[self.at..].starts_with(s)
    }

    /// Copies one byte as it is.
    fn copy(&mut self) {
        let b = self.bytes[self.at];
        if b == b'\n' {
            self.line += 1;
        }
        self.out.push(b);
        self.at += 1;
    }

    fn document(&mut self) {
        let mut place = Place::Key;
        // Open arrays and inline tables of the value being read.
        let mut nesting: Vec<u8> = Vec::new();
        while let Some(b) = self.peek(0) {
            match b {
                b'#' => self.comment(),
                b'"' | b'\'' => self.string(place == Place::Value),
                b'\n' => {
                    if nesting.is_empty() {
                        place = Place::Key;
                    }
                    self.copy();
                }
                b'=' if place == Place::Key => {
                    place = Place::Value;
                    self.copy();
                }
                b'[' | b'{' if place == Place::Value => {
                    nesting.push(b);
                    if b == b'{' {
                        place = Place::Key;
                    }
                    self.copy();
                }
                b']' | b'}' if !nesting.is_empty() => {
                    nesting.pop();
                    place = Place::Value;
                    self.copy();
                }
                b',' if nesting.last() == Some(&b'{') => {
                    place = Place::Key;
                    self.copy();
                }
                b'$' if place == Place::Value => self.dollar(),
                _ => self.copy(),
            }
        }
    }

    /// A comment, to the end of its line, as it is.
    fn comment(&mut self) {
        while let Some(b) = self.peek(0) {
            if b == b'\n' {
                return;
            }
            self.copy();
        }
    }

    /// A quoted string (basic or literal, one line or many), replacing `${…}` in it when
    /// it is a value.
    fn string(&mut self, value: bool) {
        let quote = self.bytes[self.at];
        let triple = [quote; 3];
        let multi = self.starts_with(&triple);
        let opener = if multi { 3 } else { 1 };
        for _ in 0..opener {
            self.copy();
        }
        while let Some(b) = self.peek(0) {
            if b == b'\\' && quote == b'"' {
                self.copy();
                if self.peek(0).is_some() {
                    self.copy();
                }
                continue;
            }
            if multi && self.starts_with(&triple) {
                for _ in 0..3 {
                    self.copy();
                }
                // Up to two more quotes belong to the string's end (`""""` is legal).
                while self.peek(0) == Some(quote) {
                    self.copy();
                }
                return;
            }
            if !multi && (b == quote || b == b'\n') {
                // An unterminated one-line string is TOML's error to report.
                self.copy();
                return;
            }
            if b == b'$' && value {
                self.dollar();
            } else {
                self.copy();
            }
        }
    }

    /// At a `$` in a value: `$${` writes `${`, `${…}` the variable's value, else the `$`.
    fn dollar(&mut self) {
        if self.starts_with(b"$${") {
            self.out.extend_from_slice(b"${");
            self.at += 3;
            return;
        }
        if !self.starts_with(b"${") {
            self.copy();
            return;
        }
        let start = self.at + 2;
        let close = self.bytes[start..]
            .iter()
            .position(|&b| b == b'}' || b == b'\n')
            .map(|i| start + i)
            .filter(|&i| self.bytes[i] == b'}');
        let Some(close) = close else {
            self.error(
                "`${` without a closing `}` on the same line (write `$${` for a literal `${`)"
                    .to_owned(),
            );
            // The rest of the line as it is: the error stands whatever TOML makes of it.
            while self.peek(0).is_some_and(|b| b != b'\n') {
                self.copy();
            }
            return;
        };
        let inner = String::from_utf8_lossy(&self.bytes[start..close]).into_owned();
        self.at = close + 1;
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner.as_str(), None),
        };
        if !is_name(name) {
            self.error(format!(
                "`${{{inner}}}`: {name:?} is not a variable name (letters, digits and _, not starting with a digit)"
            ));
            return;
        }
        let value = match ((self.env)(name), default) {
            (Some(v), Some(default)) if v.is_empty() => default.to_owned(),
            (Some(v), _) => v,
            (None, Some(default)) => default.to_owned(),
            (None, None) => {
                self.error(format!(
                    "environment variable {name} is not set (write `${{{name}:-default}}` to give a default)"
                ));
                return;
            }
        };
        if value.contains(['\n', '\r']) {
            self.error(format!(
                "environment variable {name} holds a line break; a substituted value must fit on its line"
            ));
            return;
        }
        self.out.extend_from_slice(value.as_bytes());
    }

    fn error(&mut self, message: String) {
        self.errors
            .push(ConfigError::new(self.origin, Some(self.line), message));
    }
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "PORT" => Some("9000".into()),
            "HOST" => Some("10.0.0.7".into()),
            "EMPTY" => Some(String::new()),
            "TWO_LINES" => Some("a\nb".into()),
            _ => None,
        }
    }

    fn sub(text: &str) -> Result<String, ConfigError> {
        substitute(text, "t.toml", &env).map(Cow::into_owned)
    }

    #[test]
    fn variables_and_defaults_are_replaced_in_values() {
        assert_eq!(
            sub("listen = \"${HOST}:${PORT}\"\n").unwrap(),
            "listen = \"10.0.0.7:9000\"\n"
        );
        assert_eq!(sub("n = ${PORT}\n").unwrap(), "n = 9000\n");
        assert_eq!(sub("n = ${UNSET:-64}\n").unwrap(), "n = 64\n");
        assert_eq!(sub("n = ${PORT:-64}\n").unwrap(), "n = 9000\n");
        // Like the shell's `:-`: empty counts as unset when a default is given.
        assert_eq!(sub("s = \"${EMPTY:-x}\"\n").unwrap(), "s = \"x\"\n");
        assert_eq!(sub("s = \"${EMPTY}\"\n").unwrap(), "s = \"\"\n");
        assert_eq!(sub("s = \"${UNSET:-}\"\n").unwrap(), "s = \"\"\n");
        assert_eq!(
            sub("a = [\"${HOST}\",\n  '${PORT}']\nt = { k = \"${PORT}\", j = ${PORT} }\n").unwrap(),
            "a = [\"10.0.0.7\",\n  '9000']\nt = { k = \"9000\", j = 9000 }\n"
        );
        assert_eq!(
            sub("m = \"\"\"\nfirst ${PORT}\n\"\"\"\n").unwrap(),
            "m = \"\"\"\nfirst 9000\n\"\"\"\n"
        );
    }

    #[test]
    fn double_dollar_writes_a_literal_and_comments_and_keys_stay() {
        assert_eq!(sub("s = \"$${HOME}\"\n").unwrap(), "s = \"${HOME}\"\n");
        assert_eq!(sub("s = \"cost: $5\"\n").unwrap(), "s = \"cost: $5\"\n");
        let commented = "# uses ${UNSET} one day\nn = 1 # ${ALSO_UNSET}\n";
        assert_eq!(sub(commented).unwrap(), commented);
        let keyed = "[\"${UNSET}\"]\n\"${UNSET}\" = 1\n";
        assert_eq!(sub(keyed).unwrap(), keyed);
        // A `#` or `=` inside a string is no comment and no key's end.
        assert_eq!(
            sub("s = \"a # ${PORT}\"\nt = 'x = ${PORT}'\n").unwrap(),
            "s = \"a # 9000\"\nt = 'x = 9000'\n"
        );
        assert_eq!(
            sub("s = \"q\\\" ${PORT}\"\n").unwrap(),
            "s = \"q\\\" 9000\"\n"
        );
    }

    #[test]
    fn every_problem_names_its_line() {
        let err =
            sub("a = 1\nb = \"${NOPE}\"\nc = \"${1BAD}\"\nd = \"${OPEN\"\ne = \"${TWO_LINES}\"\n")
                .unwrap_err();
        let lines: Vec<Option<usize>> = err.issues().iter().map(|i| i.line()).collect();
        assert_eq!(lines, [Some(2), Some(3), Some(4), Some(5)], "{err}");
        let text = err.to_string();
        assert!(
            text.contains("t.toml:2: environment variable NOPE is not set"),
            "{text}"
        );
        assert!(text.contains("\"1BAD\" is not a variable name"), "{text}");
        assert!(text.contains("without a closing `}`"), "{text}");
        assert!(text.contains("TWO_LINES holds a line break"), "{text}");
    }
}
