//! lather's XPath 1.0 evaluator, with a work budget: every node an axis yields and every
//! node a string-value reads counts one visit; past the budget evaluation stops (the event
//! is then not taken). The cost is thus bounded whatever the expression and the event.

use super::syntax::{Arith, Axis, Cmp, Expr, Func, Step, Test};
use super::tree::{Kind, Tree};

/// Evaluation went past its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget;

/// A value.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Nodes(Vec<usize>),
    Bool(bool),
    Num(f64),
    Str(String),
}

/// The context of an evaluation step.
#[derive(Debug, Clone, Copy)]
struct Context {
    node: usize,
    position: usize,
    size: usize,
}

type R<T> = Result<T, OverBudget>;

/// An evaluation over one tree.
pub(crate) struct Eval<'a> {
    tree: &'a Tree,
    left: u64,
    /// The cost check: every name test matches (so the worst case is walked).
    any_name: bool,
}

impl<'a> Eval<'a> {
    /// An evaluation over `tree` of at most `budget` node visits; `any_name` makes every
    /// name test match (for the worst-case check at Subscribe).
    pub(crate) fn new(tree: &'a Tree, budget: u64, any_name: bool) -> Eval<'a> {
        Eval {
            tree,
            left: budget,
            any_name,
        }
    }

    /// The visits made so far are `budget - left`.
    pub(crate) fn left(&self) -> u64 {
        self.left
    }

    /// The boolean value of `expr` with the document element as context node.
    pub(crate) fn boolean_of(&mut self, expr: &Expr) -> R<bool> {
        let Some(root) = self.tree.document_element() else {
            return Ok(false);
        };
        let context = Context {
            node: root,
            position: 1,
            size: 1,
        };
        let value = self.eval(expr, context)?;
        Ok(self.boolean(&value))
    }

    fn visit(&mut self, n: u64) -> R<()> {
        if self.left < n {
            self.left = 0;
            return Err(OverBudget);
        }
        self.left -= n;
        Ok(())
    }

    fn eval(&mut self, expr: &Expr, c: Context) -> R<Value> {
        Ok(match expr {
            Expr::Or(a, b) => {
                let a = self.eval(a, c)?;
                Value::Bool(
                    self.boolean(&a) || {
                        let b = self.eval(b, c)?;
                        self.boolean(&b)
                    },
                )
            }
            Expr::And(a, b) => {
                let a = self.eval(a, c)?;
                Value::Bool(
                    self.boolean(&a) && {
                        let b = self.eval(b, c)?;
                        self.boolean(&b)
                    },
                )
            }
            Expr::Compare(op, a, b) => {
                let a = self.eval(a, c)?;
                let b = self.eval(b, c)?;
                Value::Bool(self.compare(*op, &a, &b)?)
            }
            Expr::Arith(op, a, b) => {
                let a = self.eval(a, c)?;
                let a = self.number(&a)?;
                let b = self.eval(b, c)?;
                let b = self.number(&b)?;
                Value::Num(match op {
                    Arith::Add => a + b,
                    Arith::Sub => a - b,
                    Arith::Mul => a * b,
                    Arith::Div => a / b,
                    Arith::Mod => a % b,
                })
            }
            Expr::Negate(a) => {
                let a = self.eval(a, c)?;
                Value::Num(-self.number(&a)?)
            }
            Expr::Union(a, b) => {
                let mut nodes = self.nodes(a, c)?;
                nodes.extend(self.nodes(b, c)?);
                nodes.sort_unstable();
                nodes.dedup();
                Value::Nodes(nodes)
            }
            Expr::Literal(s) => Value::Str(s.clone()),
            Expr::Number(n) => Value::Num(*n),
            Expr::Call(func, args) => self.call(*func, args, c)?,
            Expr::Path(absolute, steps) => {
                let start = if *absolute { 0 } else { c.node };
                Value::Nodes(self.steps(vec![start], steps)?)
            }
            Expr::Filter(primary, predicates, steps) => {
                let mut nodes = self.nodes(primary, c)?;
                for predicate in predicates {
                    nodes = self.filter(nodes, predicate)?;
                }
                Value::Nodes(self.steps(nodes, steps)?)
            }
        })
    }

    fn nodes(&mut self, expr: &Expr, c: Context) -> R<Vec<usize>> {
        match self.eval(expr, c)? {
            Value::Nodes(n) => Ok(n),
            // The parser lets only node-set expressions here.
            _ => Ok(Vec::new()),
        }
    }

    fn steps(&mut self, mut nodes: Vec<usize>, steps: &[Step]) -> R<Vec<usize>> {
        for step in steps {
            let mut out = Vec::new();
            for &node in &nodes {
                let mut found = self.axis(step, node)?;
                for predicate in &step.predicates {
                    found = self.filter(found, predicate)?;
                }
                out.extend(found);
            }
            out.sort_unstable();
            out.dedup();
            nodes = out;
        }
        Ok(nodes)
    }

    /// `nodes` (in axis order) that pass `predicate`.
    fn filter(&mut self, nodes: Vec<usize>, predicate: &Expr) -> R<Vec<usize>> {
        let size = nodes.len();
        let mut kept = Vec::new();
        for (i, node) in nodes.into_iter().enumerate() {
            let c = Context {
                node,
                position: i + 1,
                size,
            };
            let keep = match self.eval(predicate, c)? {
                Value::Num(n) => n == (i + 1) as f64,
                v => self.boolean(&v),
            };
            if keep {
                kept.push(node);
            }
        }
        Ok(kept)
    }

    /// The nodes of `step`'s axis from `node` that pass its test, in axis order.
    fn axis(&mut self, step: &Step, node: usize) -> R<Vec<usize>> {
        let tree = self.tree;
        let n = &tree.nodes[node];
        let mut out = Vec::new();
        let mut take = |this: &mut Self, i: usize| -> R<()> {
            this.visit(1)?;
            if this.test(&step.test, step.axis, i) {
                out.push(i);
            }
            Ok(())
        };
        match step.axis {
            Axis::Child => {
                for &c in &n.children {
                    take(self, c)?;
                }
            }
            Axis::Attribute => {
                for &a in &n.attributes {
                    take(self, a)?;
                }
            }
            Axis::Itself => take(self, node)?,
            Axis::Parent => {
                if let Some(p) = n.parent {
                    take(self, p)?;
                }
            }
            Axis::Descendant | Axis::DescendantOrSelf => {
                if step.axis == Axis::DescendantOrSelf {
                    take(self, node)?;
                }
                if n.kind != Kind::Attribute {
                    for i in node + 1..=n.last {
                        if tree.nodes[i].kind != Kind::Attribute {
                            take(self, i)?;
                        }
                    }
                }
            }
            Axis::Ancestor | Axis::AncestorOrSelf => {
                if step.axis == Axis::AncestorOrSelf {
                    take(self, node)?;
                }
                let mut at = n.parent;
                while let Some(p) = at {
                    take(self, p)?;
                    at = tree.nodes[p].parent;
                }
            }
            Axis::FollowingSibling | Axis::PrecedingSibling => {
                if n.kind != Kind::Attribute
                    && let Some(p) = n.parent
                {
                    let siblings = &tree.nodes[p].children;
                    let me = siblings.iter().position(|&s| s == node).unwrap_or(0);
                    if step.axis == Axis::FollowingSibling {
                        for &s in &siblings[me + 1..] {
                            take(self, s)?;
                        }
                    } else {
                        for &s in siblings[..me].iter().rev() {
                            take(self, s)?;
                        }
                    }
                }
            }
            Axis::Following => {
                let from = if n.kind == Kind::Attribute {
                    n.parent
                        .map_or(node, |p| p + 1 + tree.nodes[p].attributes.len())
                } else {
                    n.last + 1
                };
                for i in from.max(node + 1)..tree.nodes.len() {
                    if tree.nodes[i].kind != Kind::Attribute {
                        take(self, i)?;
                    }
                }
            }
            Axis::Preceding => {
                for i in (1..node).rev() {
                    let m = &tree.nodes[i];
                    // Not ancestors, not attributes.
                    if m.kind != Kind::Attribute && m.last < node {
                        take(self, i)?;
                    }
                }
            }
        }
        // Reverse axes yield nearest first: their proximity order. Steps sort afterwards.
        Ok(out)
    }

    fn test(&self, test: &Test, axis: Axis, i: usize) -> bool {
        let n = &self.tree.nodes[i];
        let principal = if axis == Axis::Attribute {
            Kind::Attribute
        } else {
            Kind::Element
        };
        match test {
            Test::Node => true,
            Test::Text => n.kind == Kind::Text,
            Test::Nothing => false,
            Test::Any(None) => n.kind == principal,
            Test::Any(Some(ns)) => n.kind == principal && (self.any_name || n.namespace == *ns),
            Test::Name(ns, local) => {
                n.kind == principal && (self.any_name || (n.namespace == *ns && n.local == *local))
            }
        }
    }

    /// The string-value of node `i` (an element's: its text descendants).
    fn string_value(&mut self, i: usize) -> R<String> {
        let n = &self.tree.nodes[i];
        match n.kind {
            Kind::Attribute | Kind::Text => {
                self.visit(1)?;
                Ok(n.value.clone())
            }
            Kind::Root | Kind::Element => {
                let mut text = String::new();
                self.visit((n.last - i + 1) as u64)?;
                for m in &self.tree.nodes[i..=n.last] {
                    if m.kind == Kind::Text {
                        text.push_str(&m.value);
                    }
                }
                Ok(text)
            }
        }
    }

    fn string(&mut self, v: &Value) -> R<String> {
        Ok(match v {
            Value::Nodes(n) => match n.first() {
                Some(&i) => self.string_value(i)?,
                None => String::new(),
            },
            Value::Bool(b) => b.to_string(),
            Value::Num(n) => number_string(*n),
            Value::Str(s) => s.clone(),
        })
    }

    fn number(&mut self, v: &Value) -> R<f64> {
        Ok(match v {
            Value::Num(n) => *n,
            Value::Bool(b) => f64::from(u8::from(*b)),
            other => parse_number(&self.string(other)?),
        })
    }

    fn boolean(&self, v: &Value) -> bool {
        match v {
            Value::Nodes(n) => !n.is_empty(),
            Value::Bool(b) => *b,
            Value::Num(n) => *n != 0.0 && !n.is_nan(),
            Value::Str(s) => !s.is_empty(),
        }
    }

    fn compare(&mut self, op: Cmp, a: &Value, b: &Value) -> R<bool> {
        match (a, b) {
            (Value::Nodes(x), Value::Nodes(y)) => {
                let ys: Vec<String> = y.iter().map(|&j| self.string_value(j)).collect::<R<_>>()?;
                for &i in x {
                    let s = self.string_value(i)?;
                    for t in &ys {
                        self.visit(1)?;
                        if atoms(op, &Value::Str(s.clone()), &Value::Str(t.clone())) {
                            return Ok(true);
                        }
                    }
                }
                Ok(false)
            }
            (Value::Nodes(x), other) | (other, Value::Nodes(x)) => {
                let flipped = !matches!(a, Value::Nodes(_));
                if let Value::Bool(b) = other {
                    let mine = Value::Bool(!x.is_empty());
                    let theirs = Value::Bool(*b);
                    return Ok(if flipped {
                        atoms(op, &theirs, &mine)
                    } else {
                        atoms(op, &mine, &theirs)
                    });
                }
                for &i in x {
                    let s = self.string_value(i)?;
                    let mine = match other {
                        Value::Num(_) => Value::Num(parse_number(&s)),
                        _ => Value::Str(s),
                    };
                    let hit = if flipped {
                        atoms(op, other, &mine)
                    } else {
                        atoms(op, &mine, other)
                    };
                    if hit {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            _ => Ok(atoms(op, a, b)),
        }
    }

    fn call(&mut self, func: Func, args: &[Expr], c: Context) -> R<Value> {
        let arg = |this: &mut Self, i: usize| -> R<Value> { this.eval(&args[i], c) };
        let string_arg = |this: &mut Self, i: usize| -> R<String> {
            if i < args.len() {
                let v = this.eval(&args[i], c)?;
                this.string(&v)
            } else {
                this.string_value(c.node)
            }
        };
        let first_node = |this: &mut Self| -> R<Option<usize>> {
            if args.is_empty() {
                return Ok(Some(c.node));
            }
            Ok(this.nodes(&args[0], c)?.first().copied())
        };
        Ok(match func {
            Func::Last => Value::Num(c.size as f64),
            Func::Position => Value::Num(c.position as f64),
            Func::Count => Value::Num(self.nodes(&args[0], c)?.len() as f64),
            Func::LocalName | Func::NamespaceUri | Func::Name => {
                let node = first_node(self)?;
                let text = node.map_or(String::new(), |i| {
                    let n = &self.tree.nodes[i];
                    if !matches!(n.kind, Kind::Element | Kind::Attribute) {
                        return String::new();
                    }
                    match func {
                        Func::LocalName => n.local.clone(),
                        Func::NamespaceUri => n.namespace.clone(),
                        _ if n.prefix.is_empty() => n.local.clone(),
                        _ => format!("{}:{}", n.prefix, n.local),
                    }
                });
                Value::Str(text)
            }
            Func::String => Value::Str(string_arg(self, 0)?),
            Func::Concat => {
                let mut out = String::new();
                for i in 0..args.len() {
                    out.push_str(&string_arg(self, i)?);
                }
                Value::Str(out)
            }
            Func::StartsWith | Func::Contains | Func::SubstringBefore | Func::SubstringAfter => {
                let s = string_arg(self, 0)?;
                let t = string_arg(self, 1)?;
                self.visit((s.len() / 64) as u64)?;
                match func {
                    Func::StartsWith => Value::Bool(s.starts_with(&t)),
                    Func::Contains => Value::Bool(s.contains(&t)),
                    Func::SubstringBefore => {
                        Value::Str(s.find(&t).map_or(String::new(), |i| s[..i].to_owned()))
                    }
                    _ => Value::Str(
                        s.find(&t)
                            .map_or(String::new(), |i| s[i + t.len()..].to_owned()),
                    ),
                }
            }
            Func::Substring => {
                let s = string_arg(self, 0)?;
                let v = arg(self, 1)?;
                let start = round(self.number(&v)?);
                let end = if args.len() > 2 {
                    let v = arg(self, 2)?;
                    start + round(self.number(&v)?)
                } else {
                    f64::INFINITY
                };
                Value::Str(
                    s.chars()
                        .enumerate()
                        .filter(|(i, _)| {
                            let p = (*i + 1) as f64;
                            p >= start && p < end
                        })
                        .map(|(_, ch)| ch)
                        .collect(),
                )
            }
            Func::StringLength => Value::Num(string_arg(self, 0)?.chars().count() as f64),
            Func::NormalizeSpace => Value::Str(
                string_arg(self, 0)?
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Func::Translate => {
                let s = string_arg(self, 0)?;
                let from: Vec<char> = string_arg(self, 1)?.chars().collect();
                let to: Vec<char> = string_arg(self, 2)?.chars().collect();
                Value::Str(
                    s.chars()
                        .filter_map(|ch| match from.iter().position(|&f| f == ch) {
                            Some(i) => to.get(i).copied(),
                            None => Some(ch),
                        })
                        .collect(),
                )
            }
            Func::Not => {
                let v = arg(self, 0)?;
                Value::Bool(!self.boolean(&v))
            }
            Func::True => Value::Bool(true),
            Func::False => Value::Bool(false),
            Func::Boolean => {
                let v = arg(self, 0)?;
                Value::Bool(self.boolean(&v))
            }
            Func::Number => {
                if args.is_empty() {
                    let s = self.string_value(c.node)?;
                    Value::Num(parse_number(&s))
                } else {
                    let v = arg(self, 0)?;
                    Value::Num(self.number(&v)?)
                }
            }
            Func::Sum => {
                let mut total = 0.0;
                for i in self.nodes(&args[0], c)? {
                    total += parse_number(&self.string_value(i)?);
                }
                Value::Num(total)
            }
            Func::Floor | Func::Ceiling | Func::Round => {
                let v = arg(self, 0)?;
                let n = self.number(&v)?;
                Value::Num(match func {
                    Func::Floor => n.floor(),
                    Func::Ceiling => n.ceil(),
                    _ => round(n),
                })
            }
        })
    }
}

/// Compares two values none of which is a node-set (XPath 1.0 §3.4).
fn atoms(op: Cmp, a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Num(n) => *n,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => parse_number(s),
        Value::Nodes(_) => f64::NAN,
    };
    let boolean = |v: &Value| match v {
        Value::Bool(b) => *b,
        Value::Num(n) => *n != 0.0 && !n.is_nan(),
        Value::Str(s) => !s.is_empty(),
        Value::Nodes(n) => !n.is_empty(),
    };
    match op {
        Cmp::Eq | Cmp::Ne => {
            let equal = if matches!(a, Value::Bool(_)) || matches!(b, Value::Bool(_)) {
                boolean(a) == boolean(b)
            } else if matches!(a, Value::Num(_)) || matches!(b, Value::Num(_)) {
                num(a) == num(b)
            } else {
                let s = |v: &Value| match v {
                    Value::Str(s) => s.clone(),
                    _ => String::new(),
                };
                s(a) == s(b)
            };
            equal == (op == Cmp::Eq)
        }
        Cmp::Lt => num(a) < num(b),
        Cmp::Le => num(a) <= num(b),
        Cmp::Gt => num(a) > num(b),
        Cmp::Ge => num(a) >= num(b),
    }
}

/// XPath's `round`: the closest integer, halves towards positive infinity.
fn round(n: f64) -> f64 {
    if n.is_nan() || n.is_infinite() {
        n
    } else {
        (n + 0.5).floor()
    }
}

/// XPath's `number()` of a string: optional whitespace, an optional `-`, digits with an
/// optional fraction; anything else is NaN.
pub(crate) fn parse_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let body = t.strip_prefix('-').unwrap_or(t);
    let valid = !body.is_empty()
        && body.chars().all(|c| c.is_ascii_digit() || c == '.')
        && body.chars().filter(|&c| c == '.').count() <= 1
        && body != ".";
    if valid {
        t.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// XPath's string of a number.
fn number_string(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n == n.trunc() && n.abs() < 1e17 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
