//! XPath 1.0 expressions read into a tree lather evaluates itself ([`crate::protocol::xpath::eval`]):
//! the whole expression grammar (operators, location paths with every axis but
//! `namespace`, predicates, filter expressions, literals, numbers, function calls), names
//! resolved against the filter's namespaces as they are read. No variables.

use std::fmt;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// An axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Child,
    Descendant,
    DescendantOrSelf,
    Itself,
    Parent,
    Ancestor,
    AncestorOrSelf,
    Attribute,
    FollowingSibling,
    PrecedingSibling,
    Following,
    Preceding,
}

/// A node test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Test {
    /// A name in a namespace (`""` = none).
    Name(String, String),
    /// `*` or `prefix:*` (namespace `Some`).
    Any(Option<String>),
    /// `node()`.
    Node,
    /// `text()`.
    Text,
    /// `comment()` and `processing-instruction()`: never in an event's tree.
    Nothing,
}

/// One location step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) axis: Axis,
    pub(crate) test: Test,
    pub(crate) predicates: Vec<Expr>,
}

/// The core functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Last,
    Position,
    Count,
    LocalName,
    NamespaceUri,
    Name,
    String,
    Concat,
    StartsWith,
    Contains,
    SubstringBefore,
    SubstringAfter,
    Substring,
    StringLength,
    NormalizeSpace,
    Translate,
    Not,
    True,
    False,
    Boolean,
    Number,
    Sum,
    Floor,
    Ceiling,
    Round,
}

impl Func {
    /// The function of `name` and its arity range.
    fn of(name: &str) -> Option<(Func, usize, usize)> {
        use Func as F;
        Some(match name {
            "last" => (F::Last, 0, 0),
            "position" => (F::Position, 0, 0),
            "count" => (F::Count, 1, 1),
            "local-name" => (F::LocalName, 0, 1),
            "namespace-uri" => (F::NamespaceUri, 0, 1),
            "name" => (F::Name, 0, 1),
            "string" => (F::String, 0, 1),
            "concat" => (F::Concat, 2, usize::MAX),
            "starts-with" => (F::StartsWith, 2, 2),
            "contains" => (F::Contains, 2, 2),
            "substring-before" => (F::SubstringBefore, 2, 2),
            "substring-after" => (F::SubstringAfter, 2, 2),
            "substring" => (F::Substring, 2, 3),
            "string-length" => (F::StringLength, 0, 1),
            "normalize-space" => (F::NormalizeSpace, 0, 1),
            "translate" => (F::Translate, 3, 3),
            "not" => (F::Not, 1, 1),
            "true" => (F::True, 0, 0),
            "false" => (F::False, 0, 0),
            "boolean" => (F::Boolean, 1, 1),
            "number" => (F::Number, 0, 1),
            "sum" => (F::Sum, 1, 1),
            "floor" => (F::Floor, 1, 1),
            "ceiling" => (F::Ceiling, 1, 1),
            "round" => (F::Round, 1, 1),
            _ => return None,
        })
    }

    /// Whether the (only) argument must be a node-set.
    fn wants_nodes(self) -> bool {
        matches!(
            self,
            Func::Count | Func::Sum | Func::LocalName | Func::NamespaceUri | Func::Name
        )
    }
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Compare(Cmp, Box<Expr>, Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Negate(Box<Expr>),
    Union(Box<Expr>, Box<Expr>),
    Literal(String),
    Number(f64),
    Call(Func, Vec<Expr>),
    /// A location path: absolute (from the root) or relative (from the context node).
    Path(bool, Vec<Step>),
    /// A primary expression filtered by predicates, then followed by steps.
    Filter(Box<Expr>, Vec<Expr>, Vec<Step>),
}

impl Expr {
    /// Whether the expression's value is certainly a node-set.
    fn is_nodes(&self) -> bool {
        match self {
            Expr::Path(..) | Expr::Union(..) => true,
            Expr::Filter(primary, _, steps) => !steps.is_empty() || primary.is_nodes(),
            _ => false,
        }
    }
}

/// Why an expression cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SyntaxError {
    /// Not XPath 1.0 syntax.
    Invalid(String),
    /// Valid syntax lather cannot evaluate (unknown function, variable, wrong arguments).
    Unsupported(String),
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyntaxError::Invalid(why) => write!(f, "the XPath expression is not valid: {why}"),
            SyntaxError::Unsupported(why) => {
                write!(f, "the XPath expression cannot be evaluated: {why}")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Slash,
    DoubleSlash,
    Open,
    Close,
    OpenBracket,
    CloseBracket,
    Dot,
    DotDot,
    At,
    Comma,
    ColonColon,
    Pipe,
    Plus,
    Minus,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Star,
    And,
    Or,
    Div,
    Mod,
    Literal(String),
    Number(f64),
    Dollar,
    /// A name test or function/axis/node-type name: prefix (or empty) and local part
    /// (`*` for `prefix:*`).
    Name(String, String),
}

fn tokens(text: &str) -> Result<Vec<Token>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    let invalid = |why: String| SyntaxError::Invalid(why);
    while i < chars.len() {
        let c = chars[i];
        // Whether a `*` or a name here is an operator (XPath 1.0 §3.7).
        let operator_position = matches!(
            out.last(),
            Some(t) if !matches!(
                t,
                Token::At
                    | Token::Dollar
                    | Token::ColonColon
                    | Token::Open
                    | Token::OpenBracket
                    | Token::Comma
                    | Token::Slash
                    | Token::DoubleSlash
                    | Token::Pipe
                    | Token::Plus
                    | Token::Minus
                    | Token::Eq
                    | Token::Ne
                    | Token::Lt
                    | Token::Le
                    | Token::Gt
                    | Token::Ge
                    | Token::Star
                    | Token::And
                    | Token::Or
                    | Token::Div
                    | Token::Mod
            )
        );
        let next = chars.get(i + 1).copied();
        let token = match c {
            ' ' | '\t' | '\r' | '\n' => {
                i += 1;
                continue;
            }
            '/' if next == Some('/') => {
                i += 1;
                Token::DoubleSlash
            }
            '/' => Token::Slash,
            '(' => Token::Open,
            ')' => Token::Close,
            '[' => Token::OpenBracket,
            ']' => Token::CloseBracket,
            '.' if next == Some('.') => {
                i += 1;
                Token::DotDot
            }
            '.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                let (n, len) = number(&chars[i..]);
                i += len - 1;
                Token::Number(n)
            }
            '.' => Token::Dot,
            '@' => Token::At,
            ',' => Token::Comma,
            ':' if next == Some(':') => {
                i += 1;
                Token::ColonColon
            }
            '|' => Token::Pipe,
            '+' => Token::Plus,
            '-' => Token::Minus,
            '=' => Token::Eq,
            '!' if next == Some('=') => {
                i += 1;
                Token::Ne
            }
            '<' if next == Some('=') => {
                i += 1;
                Token::Le
            }
            '<' => Token::Lt,
            '>' if next == Some('=') => {
                i += 1;
                Token::Ge
            }
            '>' => Token::Gt,
            '*' if operator_position => Token::Star,
            '*' => Token::Name(String::new(), "*".into()),
            '$' => Token::Dollar,
            '"' | '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&q| q == c)
                    .ok_or_else(|| invalid("an unterminated string".into()))?;
                let literal: String = chars[i + 1..i + 1 + end].iter().collect();
                i += end + 1;
                Token::Literal(literal)
            }
            d if d.is_ascii_digit() => {
                let (n, len) = number(&chars[i..]);
                i += len - 1;
                Token::Number(n)
            }
            n if is_name_start(n) => {
                let mut end = i + 1;
                while end < chars.len() && is_name_char(chars[end]) {
                    end += 1;
                }
                let first: String = chars[i..end].iter().collect();
                if operator_position {
                    i = end;
                    out.push(match first.as_str() {
                        "and" => Token::And,
                        "or" => Token::Or,
                        "div" => Token::Div,
                        "mod" => Token::Mod,
                        other => {
                            return Err(invalid(format!("{other:?} where an operator belongs")));
                        }
                    });
                    continue;
                }
                // prefix:local or prefix:*
                if chars.get(end) == Some(&':') && chars.get(end + 1) != Some(&':') {
                    let after = end + 1;
                    if chars.get(after) == Some(&'*') {
                        i = after + 1;
                        out.push(Token::Name(first, "*".into()));
                        continue;
                    }
                    if chars.get(after).is_some_and(|&c| is_name_start(c)) {
                        let mut stop = after + 1;
                        while stop < chars.len() && is_name_char(chars[stop]) {
                            stop += 1;
                        }
                        let local: String = chars[after..stop].iter().collect();
                        i = stop;
                        out.push(Token::Name(first, local));
                        continue;
                    }
                    return Err(invalid(format!("a bad name after {first:?}")));
                }
                i = end;
                out.push(Token::Name(String::new(), first));
                continue;
            }
            other => return Err(invalid(format!("unexpected {other:?}"))),
        };
        out.push(token);
        i += 1;
    }
    Ok(out)
}

/// A number at the start of `chars` and how many chars it took.
fn number(chars: &[char]) -> (f64, usize) {
    let mut len = 0;
    let mut dot = false;
    while len < chars.len() && (chars[len].is_ascii_digit() || (chars[len] == '.' && !dot)) {
        dot |= chars[len] == '.';
        len += 1;
    }
    let text: String = chars[..len].iter().collect();
    (text.parse().unwrap_or(f64::NAN), len)
}

fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || c.is_ascii_digit()
        || c == '-'
        || c == '.'
        || (!c.is_ascii() && !c.is_whitespace())
}

/// Reads `text` into an expression, resolving prefixes in `namespaces`.
pub(crate) fn parse(text: &str, namespaces: &[(String, String)]) -> Result<Expr, SyntaxError> {
    let tokens = tokens(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        namespaces,
    };
    let expr = parser.or()?;
    if parser.at != parser.tokens.len() {
        return Err(SyntaxError::Invalid(format!(
            "unexpected {:?}",
            parser.tokens[parser.at]
        )));
    }
    Ok(expr)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    namespaces: &'a [(String, String)],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, n: usize) -> Option<&Token> {
        self.tokens.get(self.at + n)
    }

    fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &Token) -> Result<(), SyntaxError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(SyntaxError::Invalid(match self.peek() {
                Some(t) => format!("expected {token:?}, found {t:?}"),
                None => format!("expected {token:?} at the end"),
            }))
        }
    }

    fn or(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.and()?;
        while self.eat(&Token::Or) {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.equality()?;
        while self.eat(&Token::And) {
            left = Expr::And(Box::new(left), Box::new(self.equality()?));
        }
        Ok(left)
    }

    fn equality(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.relational()?;
        loop {
            let op = match self.peek() {
                Some(Token::Eq) => Cmp::Eq,
                Some(Token::Ne) => Cmp::Ne,
                _ => return Ok(left),
            };
            self.at += 1;
            left = Expr::Compare(op, Box::new(left), Box::new(self.relational()?));
        }
    }

    fn relational(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.additive()?;
        loop {
            let op = match self.peek() {
                Some(Token::Lt) => Cmp::Lt,
                Some(Token::Le) => Cmp::Le,
                Some(Token::Gt) => Cmp::Gt,
                Some(Token::Ge) => Cmp::Ge,
                _ => return Ok(left),
            };
            self.at += 1;
            left = Expr::Compare(op, Box::new(left), Box::new(self.additive()?));
        }
    }

    fn additive(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Some(Token::Plus) => Arith::Add,
                Some(Token::Minus) => Arith::Sub,
                _ => return Ok(left),
            };
            self.at += 1;
            left = Expr::Arith(op, Box::new(left), Box::new(self.multiplicative()?));
        }
    }

    fn multiplicative(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Star) => Arith::Mul,
                Some(Token::Div) => Arith::Div,
                Some(Token::Mod) => Arith::Mod,
                _ => return Ok(left),
            };
            self.at += 1;
            left = Expr::Arith(op, Box::new(left), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.eat(&Token::Minus) {
            return Ok(Expr::Negate(Box::new(self.unary()?)));
        }
        self.union()
    }

    fn union(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.path()?;
        while self.eat(&Token::Pipe) {
            let right = self.path()?;
            if !left.is_nodes() || !right.is_nodes() {
                return Err(SyntaxError::Unsupported("'|' joins node-sets only".into()));
            }
            left = Expr::Union(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    /// Whether the next tokens start a primary expression (not a location path).
    fn at_primary(&self) -> bool {
        match self.peek() {
            Some(Token::Literal(_) | Token::Number(_) | Token::Open | Token::Dollar) => true,
            Some(Token::Name(prefix, local)) => {
                local != "*"
                    && self.peek_at(1) == Some(&Token::Open)
                    && !(prefix.is_empty()
                        && matches!(
                            local.as_str(),
                            "node" | "text" | "comment" | "processing-instruction"
                        ))
            }
            _ => false,
        }
    }

    fn path(&mut self) -> Result<Expr, SyntaxError> {
        if self.at_primary() {
            let primary = self.primary()?;
            let mut predicates = Vec::new();
            while self.peek() == Some(&Token::OpenBracket) {
                predicates.push(self.predicate()?);
            }
            let mut steps = Vec::new();
            if matches!(self.peek(), Some(Token::Slash | Token::DoubleSlash)) {
                self.relative_steps(&mut steps, true)?;
            }
            if predicates.is_empty() && steps.is_empty() {
                return Ok(primary);
            }
            if !primary.is_nodes() {
                return Err(SyntaxError::Unsupported(
                    "predicates and steps apply to node-sets only".into(),
                ));
            }
            return Ok(Expr::Filter(Box::new(primary), predicates, steps));
        }
        let mut steps = Vec::new();
        match self.peek() {
            Some(Token::Slash) => {
                self.at += 1;
                if self.at_step() {
                    self.step(&mut steps)?;
                    self.relative_steps(&mut steps, false)?;
                }
                Ok(Expr::Path(true, steps))
            }
            Some(Token::DoubleSlash) => {
                self.relative_steps(&mut steps, true)?;
                Ok(Expr::Path(true, steps))
            }
            _ => {
                self.step(&mut steps)?;
                self.relative_steps(&mut steps, false)?;
                Ok(Expr::Path(false, steps))
            }
        }
    }

    fn at_step(&self) -> bool {
        matches!(
            self.peek(),
            Some(Token::Name(..) | Token::Dot | Token::DotDot | Token::At)
        )
    }

    /// Steps after `/` or `//` separators; `leading`: a separator comes first.
    fn relative_steps(&mut self, steps: &mut Vec<Step>, leading: bool) -> Result<(), SyntaxError> {
        let mut first = leading;
        loop {
            match self.peek() {
                Some(Token::Slash) => self.at += 1,
                Some(Token::DoubleSlash) => {
                    self.at += 1;
                    steps.push(Step {
                        axis: Axis::DescendantOrSelf,
                        test: Test::Node,
                        predicates: Vec::new(),
                    });
                }
                _ if first => return Err(SyntaxError::Invalid("a step was expected".into())),
                _ => return Ok(()),
            }
            first = false;
            self.step(steps)?;
        }
    }

    fn step(&mut self, steps: &mut Vec<Step>) -> Result<(), SyntaxError> {
        if self.eat(&Token::Dot) {
            steps.push(Step {
                axis: Axis::Itself,
                test: Test::Node,
                predicates: Vec::new(),
            });
            return Ok(());
        }
        if self.eat(&Token::DotDot) {
            steps.push(Step {
                axis: Axis::Parent,
                test: Test::Node,
                predicates: Vec::new(),
            });
            return Ok(());
        }
        let mut axis = Axis::Child;
        if self.eat(&Token::At) {
            axis = Axis::Attribute;
        } else if let (Some(Token::Name(prefix, name)), Some(Token::ColonColon)) =
            (self.peek(), self.peek_at(1))
        {
            if !prefix.is_empty() {
                return Err(SyntaxError::Invalid(format!("{prefix}:{name} is no axis")));
            }
            axis = match name.as_str() {
                "child" => Axis::Child,
                "descendant" => Axis::Descendant,
                "descendant-or-self" => Axis::DescendantOrSelf,
                "self" => Axis::Itself,
                "parent" => Axis::Parent,
                "ancestor" => Axis::Ancestor,
                "ancestor-or-self" => Axis::AncestorOrSelf,
                "attribute" => Axis::Attribute,
                "following-sibling" => Axis::FollowingSibling,
                "preceding-sibling" => Axis::PrecedingSibling,
                "following" => Axis::Following,
                "preceding" => Axis::Preceding,
                "namespace" => {
                    return Err(SyntaxError::Unsupported(
                        "the namespace axis is not offered".into(),
                    ));
                }
                other => return Err(SyntaxError::Invalid(format!("{other:?} is no axis"))),
            };
            self.at += 2;
        }
        let test = self.node_test()?;
        let mut predicates = Vec::new();
        while self.peek() == Some(&Token::OpenBracket) {
            predicates.push(self.predicate()?);
        }
        steps.push(Step {
            axis,
            test,
            predicates,
        });
        Ok(())
    }

    fn node_test(&mut self) -> Result<Test, SyntaxError> {
        let Some(Token::Name(prefix, local)) = self.peek().cloned() else {
            return Err(SyntaxError::Invalid(match self.peek() {
                Some(t) => format!("a node test was expected, found {t:?}"),
                None => "a node test was expected at the end".into(),
            }));
        };
        self.at += 1;
        if prefix.is_empty() && self.peek() == Some(&Token::Open) {
            let test = match local.as_str() {
                "node" => Test::Node,
                "text" => Test::Text,
                "comment" => Test::Nothing,
                "processing-instruction" => {
                    self.at += 1;
                    if let Some(Token::Literal(_)) = self.peek() {
                        self.at += 1;
                    }
                    self.expect(&Token::Close)?;
                    return Ok(Test::Nothing);
                }
                other => return Err(SyntaxError::Invalid(format!("{other}() is no node test"))),
            };
            self.at += 1;
            self.expect(&Token::Close)?;
            return Ok(test);
        }
        let namespace = if prefix.is_empty() {
            String::new()
        } else {
            self.namespaces
                .iter()
                .find(|(p, _)| *p == prefix)
                .map(|(_, uri)| uri.clone())
                .ok_or_else(|| {
                    SyntaxError::Unsupported(format!("the XPath prefix {prefix:?} is not declared"))
                })?
        };
        Ok(match (prefix.is_empty(), local.as_str()) {
            (true, "*") => Test::Any(None),
            (false, "*") => Test::Any(Some(namespace)),
            _ => Test::Name(namespace, local),
        })
    }

    fn predicate(&mut self) -> Result<Expr, SyntaxError> {
        self.expect(&Token::OpenBracket)?;
        let expr = self.or()?;
        self.expect(&Token::CloseBracket)?;
        Ok(expr)
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        match self.peek().cloned() {
            Some(Token::Literal(s)) => {
                self.at += 1;
                Ok(Expr::Literal(s))
            }
            Some(Token::Number(n)) => {
                self.at += 1;
                Ok(Expr::Number(n))
            }
            Some(Token::Open) => {
                self.at += 1;
                let expr = self.or()?;
                self.expect(&Token::Close)?;
                Ok(expr)
            }
            Some(Token::Dollar) => {
                Err(SyntaxError::Unsupported("variables are not offered".into()))
            }
            Some(Token::Name(prefix, name)) => {
                self.at += 2; // the name and '('
                let Some((func, min, max)) = Func::of(&name).filter(|_| prefix.is_empty()) else {
                    let full = if prefix.is_empty() {
                        name
                    } else {
                        format!("{prefix}:{name}")
                    };
                    return Err(SyntaxError::Unsupported(format!("no function {full}()")));
                };
                let mut args = Vec::new();
                if !self.eat(&Token::Close) {
                    loop {
                        args.push(self.or()?);
                        if self.eat(&Token::Close) {
                            break;
                        }
                        self.expect(&Token::Comma)?;
                    }
                }
                if args.len() < min || args.len() > max {
                    return Err(SyntaxError::Unsupported(format!(
                        "{name}() takes {} arguments, not {}",
                        if min == max {
                            min.to_string()
                        } else if max == usize::MAX {
                            format!("{min} or more")
                        } else {
                            format!("{min} to {max}")
                        },
                        args.len()
                    )));
                }
                if func.wants_nodes() && args.first().is_some_and(|a| !a.is_nodes()) {
                    return Err(SyntaxError::Unsupported(format!(
                        "{name}() takes a node-set"
                    )));
                }
                Ok(Expr::Call(func, args))
            }
            other => Err(SyntaxError::Invalid(match other {
                Some(t) => format!("unexpected {t:?}"),
                None => "the expression ends too early".into(),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns() -> Vec<(String, String)> {
        vec![("ev".into(), "urn:ev".into())]
    }

    #[test]
    fn operators_and_names_are_told_apart() {
        let e = parse("ev:a * 2", &ns()).unwrap();
        assert!(matches!(e, Expr::Arith(Arith::Mul, ..)), "{e:?}");
        let e = parse("*", &[]).unwrap();
        assert!(matches!(e, Expr::Path(false, _)), "{e:?}");
        let e = parse("div div div", &[]).unwrap();
        assert!(matches!(e, Expr::Arith(Arith::Div, ..)), "{e:?}");
        let e = parse("a and b or not(c)", &[]).unwrap();
        assert!(matches!(e, Expr::Or(..)), "{e:?}");
        let e = parse("//*[//*]", &[]).unwrap();
        assert!(matches!(e, Expr::Path(true, _)), "{e:?}");
    }

    #[test]
    fn errors_say_what() {
        let invalid = |t: &str| matches!(parse(t, &ns()), Err(SyntaxError::Invalid(_)));
        let unsupported = |t: &str| matches!(parse(t, &ns()), Err(SyntaxError::Unsupported(_)));
        assert!(invalid("ev:a >"));
        assert!(invalid("a["));
        assert!(invalid("1 2"));
        assert!(invalid("/ /"));
        assert!(unsupported("frobnicate(1)"));
        assert!(unsupported("$x"));
        assert!(unsupported("count(1)"));
        assert!(unsupported("nope:a"));
        assert!(unsupported("namespace::*"));
    }
}
