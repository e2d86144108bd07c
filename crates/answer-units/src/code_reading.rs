//! Reading a final answer that is a pending `python_exec` call.
//!
//! A few recorded runs end with the model's last action being a
//! `python_exec` call instead of a final answer (reference harness: the
//! controller records the model's last action as `final_answer` when the
//! round budget ends it). The code usually assigns every requested field
//! to a variable of the same name and prints it. The published judge read
//! such code and credited the values it plainly computes (CSX-094_Q1's
//! rationale: "all numeric values and the diagnosis label are correct …
//! but the model failed to return the final compact JSON").
//!
//! [`read_code`] reads that code the way a careful reader would, without
//! running it: it evaluates a deliberately small subset of Python
//! (assignments, arithmetic, comparisons, conditional expressions,
//! `if`/`elif`/`else`, functions that compute and `return`, `round`, `min`,
//! `max`, `abs`, `sum`, `math.*`, `date`/`datetime` differences) and
//! returns the module-level variables it could compute, in order of first
//! assignment. Anything outside the subset (loops, comprehensions,
//! f-strings, file reads, method calls that mutate) is not guessed: the
//! statement is listed in [`CodeReading::skipped`] and every name it could
//! have changed is dropped. The reading is bounded (statements, expression
//! depth, evaluation steps, string and list sizes) and never panics, so it
//! is safe on hostile input; a full Python parser crate would bring a large
//! dependency for a case this narrow.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

/// The variables a pending `python_exec` call's code computes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodeReading {
    /// Module-level variables that could be computed, in order of first
    /// assignment, as JSON (dates as `YYYY-MM-DD`, time spans in days).
    pub bindings: Map<String, Value>,
    /// The module-level statements that were not evaluated, with why.
    pub skipped: Vec<SkippedStatement>,
}

/// A statement [`read_code`] did not evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedStatement {
    /// The statement's first logical line, comments removed.
    pub statement: String,
    /// Why it was not evaluated.
    pub reason: String,
}

/// The code of a pending `python_exec` call, if `answer` is one: either
/// `{"action": "python_exec", "code": …}` or `{"action": "tool_call",
/// "tool": "python_exec", "args": {"code": …}}` (the two shapes the
/// reference harness records).
pub fn pending_python_code(answer: &Map<String, Value>) -> Option<&str> {
    let action = answer.get("action")?.as_str()?;
    let code = match action {
        "python_exec" => answer.get("code")?,
        "tool_call" if answer.get("tool")?.as_str()? == "python_exec" => {
            answer.get("args")?.get("code")?
        }
        _ => return None,
    };
    code.as_str()
}

const MAX_LINES: usize = 5_000;
const MAX_DEPTH: usize = 100;
const MAX_BLOCK_DEPTH: usize = 24;
const MAX_CALL_DEPTH: usize = 8;
const MAX_TOKENS: usize = 4_096;
const MAX_STEPS: usize = 2_000_000;
const MAX_STRING: usize = 1 << 16;
const MAX_LIST: usize = 1 << 14;

/// Reads `code` without running it; see the module documentation.
///
/// ```
/// use earthverse_answer_units::read_code;
/// let reading = read_code("a = 49.99\nb = 53.184\npeak = (a + b) / 2\nfor x in y:\n    peak = 0\n");
/// assert_eq!(reading.bindings["a"], 49.99);
/// assert!(reading.bindings.get("peak").is_none());
/// assert_eq!(reading.skipped.len(), 1);
/// ```
pub fn read_code(code: &str) -> CodeReading {
    let lines = logical_lines(code);
    let mut index = 0;
    let mut block = Vec::new();
    while index < lines.len() {
        block.extend(parse_block(&lines, &mut index, 0, 0));
    }
    let mut interp = Interp {
        printed: Vec::new(),
        steps: 0,
        call_depth: 0,
        skipped: Vec::new(),
    };
    let mut globals = Scope::default();
    // A top-level block records what it skips and never fails.
    let _ = interp.run_block(&block, &mut globals, None, true);
    let mut bindings = Map::new();
    for name in &globals.order {
        if let Some(value) = globals.values.get(name).and_then(to_json) {
            bindings.insert(name.clone(), value);
        }
    }
    // A printed label that names no variable (`print("severity_class:", sc)`)
    // is read as that field; a variable of the same name wins.
    for (label, value) in &interp.printed {
        if !bindings.contains_key(label) {
            if let Some(value) = to_json(value) {
                bindings.insert(label.clone(), value);
            }
        }
    }
    CodeReading {
        bindings,
        skipped: interp.skipped,
    }
}

// ---------------------------------------------------------------- lines

#[derive(Debug, Clone)]
struct Line {
    indent: usize,
    text: String,
}

/// Splits code into logical lines: comments removed, bracketed and
/// backslash continuations joined, blank lines dropped.
fn logical_lines(code: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut indent = 0;
    let mut at_line_start = true;
    let mut depth: usize = 0;
    let mut quote: Option<(char, bool)> = None; // (quote char, triple)
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() && lines.len() < MAX_LINES {
        let c = chars[i];
        if at_line_start {
            if c == ' ' || c == '\t' {
                indent += if c == '\t' { 8 } else { 1 };
                i += 1;
                continue;
            }
            at_line_start = false;
        }
        if let Some((q, triple)) = quote {
            current.push(c);
            if c == '\\' {
                if let Some(&next) = chars.get(i + 1) {
                    current.push(next);
                    i += 1;
                }
            } else if c == q {
                if !triple {
                    quote = None;
                } else if chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q) {
                    current.push(q);
                    current.push(q);
                    i += 2;
                    quote = None;
                }
            } else if c == '\n' && !triple {
                // An unterminated string ends with its line.
                quote = None;
                current.pop();
                finish_line(&mut lines, &mut current, indent);
                indent = 0;
                at_line_start = true;
                depth = 0;
            }
            i += 1;
            continue;
        }
        match c {
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '"' | '\'' => {
                let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
                current.push(c);
                if triple {
                    current.push(c);
                    current.push(c);
                    i += 2;
                }
                quote = Some((c, triple));
            }
            '(' | '[' | '{' => {
                depth += 1;
                current.push(c);
            }
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                current.push(' ');
                i += 1;
            }
            '\n' if depth > 0 => current.push(' '),
            '\n' => {
                finish_line(&mut lines, &mut current, indent);
                indent = 0;
                at_line_start = true;
            }
            '\r' => {}
            _ => current.push(c),
        }
        i += 1;
    }
    finish_line(&mut lines, &mut current, indent);
    lines
}

fn finish_line(lines: &mut Vec<Line>, current: &mut String, indent: usize) {
    let text = current.trim();
    if !text.is_empty() {
        lines.push(Line {
            indent,
            text: text.to_owned(),
        });
    }
    current.clear();
}

// ---------------------------------------------------------------- statements

#[derive(Debug, Clone)]
enum Target {
    Name(String),
    Tuple(Vec<String>),
    Item(String, Expr),
}

#[derive(Debug, Clone)]
enum Stmt {
    Assign(Vec<Target>, Expr),
    AugAssign(String, BinOp, Expr),
    If(Vec<(Expr, Block)>, Block),
    Def(Rc<FuncDef>),
    Return(Option<Expr>),
    Import(Vec<(String, String)>),
    /// `print("label:", value, ...)`: the label names the value shown.
    PrintLabelled(String, Expr),
    /// Harmless: another `print(...)`, `pass`, a docstring.
    Nothing,
    /// Not evaluated; the names it may change.
    Opaque(Vec<String>),
}

/// Parameters of a function, with their default values.
type Params = Vec<(String, Option<Expr>)>;

/// Positional and keyword arguments of a call.
type CallArgs = (Vec<Expr>, Vec<(String, Expr)>);

#[derive(Debug)]
struct FuncDef {
    name: String,
    params: Params,
    body: Block,
}

/// Statements with the logical line each starts on.
type Block = Vec<(String, Stmt)>;

const HEADER_KEYWORDS: &[&str] = &[
    "if", "elif", "else", "def", "for", "while", "with", "try", "except", "finally", "class",
    "async",
];

fn first_word(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Parses the lines at `indent` or deeper starting at `index` into a block.
fn parse_block(lines: &[Line], index: &mut usize, indent: usize, depth: usize) -> Block {
    let mut block = Vec::new();
    let block_indent = match lines.get(*index) {
        Some(line) if line.indent >= indent => line.indent,
        _ => return block,
    };
    while let Some(line) = lines.get(*index) {
        if line.indent < block_indent {
            break;
        }
        if line.indent > block_indent {
            // Unexpected indentation: skip the stray line.
            *index += 1;
            let names = assigned_names(&line.text);
            block.push((line.text.clone(), Stmt::Opaque(names)));
            continue;
        }
        let word = first_word(&line.text);
        if HEADER_KEYWORDS.contains(&word) {
            let stmt = parse_compound(lines, index, block_indent, depth);
            block.push((line.text.clone(), stmt));
        } else {
            *index += 1;
            block.push((line.text.clone(), parse_simple(&line.text)));
        }
    }
    block
}

/// Splits `header: rest` at the first top-level colon.
fn split_header(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ':' if depth == 0 => return Some((&text[..i], text[i + 1..].trim())),
            _ => {}
        }
    }
    None
}

/// The body of a compound statement: its inline part or the indented lines.
fn parse_body(
    lines: &[Line],
    index: &mut usize,
    indent: usize,
    inline: &str,
    depth: usize,
) -> Block {
    *index += 1;
    if !inline.is_empty() {
        return inline
            .split(';')
            .map(|part| (part.trim().to_owned(), parse_simple(part.trim())))
            .collect();
    }
    match lines.get(*index) {
        Some(next) if next.indent > indent => parse_block(lines, index, next.indent, depth + 1),
        _ => Vec::new(),
    }
}

fn parse_compound(lines: &[Line], index: &mut usize, indent: usize, depth: usize) -> Stmt {
    let start = *index;
    if depth >= MAX_BLOCK_DEPTH {
        *index += 1;
        while lines.get(*index).is_some_and(|line| line.indent > indent) {
            *index += 1;
        }
        return opaque_span(lines, start, *index);
    }
    let text = &lines[start].text;
    let word = first_word(text);
    let header = split_header(text);
    match (word, header) {
        ("if", Some((head, inline))) => {
            let mut branches = Vec::new();
            let mut orelse = Vec::new();
            let mut ok = true;
            let condition = parse_expr(&head[2..]);
            let body = parse_body(lines, index, indent, inline, depth);
            match condition {
                Ok(condition) => branches.push((condition, body)),
                Err(_) => ok = false,
            }
            while let Some(line) = lines.get(*index) {
                if line.indent != indent {
                    break;
                }
                let word = first_word(&line.text);
                let Some((head, inline)) = split_header(&line.text) else {
                    break;
                };
                if word == "elif" {
                    let condition = parse_expr(&head[4..]);
                    let body = parse_body(lines, index, indent, inline, depth);
                    match condition {
                        Ok(condition) => branches.push((condition, body)),
                        Err(_) => ok = false,
                    }
                } else if word == "else" && head.trim() == "else" {
                    orelse = parse_body(lines, index, indent, inline, depth);
                    break;
                } else {
                    break;
                }
            }
            if ok {
                Stmt::If(branches, orelse)
            } else {
                opaque_span(lines, start, *index)
            }
        }
        ("def", Some((head, inline))) => {
            let body = parse_body(lines, index, indent, inline, depth);
            match parse_def_header(head[3..].trim()) {
                Some((name, params)) => Stmt::Def(Rc::new(FuncDef { name, params, body })),
                None => opaque_span(lines, start, *index),
            }
        }
        (_, Some((_, inline))) => {
            let _ = parse_body(lines, index, indent, inline, depth);
            opaque_span(lines, start, *index)
        }
        _ => {
            *index += 1;
            opaque_span(lines, start, *index)
        }
    }
}

fn opaque_span(lines: &[Line], start: usize, end: usize) -> Stmt {
    let mut names = Vec::new();
    for line in &lines[start..end.min(lines.len())] {
        names.extend(assigned_names(&line.text));
        // Loop variables: `for a, b in ...`.
        if let Some(rest) = line.text.strip_prefix("for ") {
            if let Some(pos) = rest.find(" in ") {
                names.extend(
                    rest[..pos]
                        .split(',')
                        .map(|n| n.trim().trim_matches(|c| c == '(' || c == ')').to_owned()),
                );
            }
        }
        // `with ... as name`, `except ... as name`.
        if let Some(pos) = line.text.rfind(" as ") {
            names.push(first_word(line.text[pos + 4..].trim()).to_owned());
        }
    }
    Stmt::Opaque(names)
}

/// The names a line could rebind or mutate: plain and tuple targets, the
/// receiver of an item assignment or of a method call statement.
fn assigned_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Some((lhs, _)) = split_assignment(text) {
        for part in lhs.split(['=', ',']) {
            let name = first_word(part.trim().trim_start_matches('('));
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
    }
    let word = first_word(text);
    if !word.is_empty() && text[word.len()..].starts_with('.') {
        names.push(word.to_owned());
    }
    names
}

/// Splits `lhs = rhs` (also `a = b = rhs`, `x += rhs`) at the last
/// top-level `=` that is not part of a comparison or keyword argument.
fn split_assignment(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    let mut last = None;
    for (i, &b) in bytes.iter().enumerate() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                quote = None;
            }
            continue;
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'=' if depth == 0 => {
                let prev = if i > 0 { bytes[i - 1] } else { b' ' };
                let next = bytes.get(i + 1).copied().unwrap_or(b' ');
                if next != b'=' && !matches!(prev, b'=' | b'!' | b'<' | b'>') {
                    last = Some(i);
                }
            }
            _ => {}
        }
    }
    let i = last?;
    Some((&text[..i], &text[i + 1..]))
}

/// Reads `print("name:", expr, ...)` (or `"name ="`) as a labelled value.
fn print_labelled(text: &str) -> Option<Stmt> {
    let Ok(Expr::Call(callee, args, _)) = parse_expr(text) else {
        return None;
    };
    let (Expr::Name(name), [Expr::Const(Val::Str(label)), value, ..]) = (*callee, args.as_slice())
    else {
        return None;
    };
    let label = label.trim().strip_suffix([':', '='])?.trim();
    (name == "print" && is_identifier(label))
        .then(|| Stmt::PrintLabelled(label.to_owned(), value.clone()))
}

fn parse_def_header(head: &str) -> Option<(String, Params)> {
    let open = head.find('(')?;
    let name = head[..open].trim();
    if !is_identifier(name) {
        return None;
    }
    let head = head.split("->").next()?.trim();
    let inner = head[open + 1..].strip_suffix(')')?;
    let mut params = Vec::new();
    for part in split_top_level(inner, ',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (name, default) = match part.split_once('=') {
            Some((name, default)) => (name.trim(), Some(parse_expr(default).ok()?)),
            None => (part, None),
        };
        let name = name.split(':').next()?.trim();
        if !is_identifier(name) {
            return None;
        }
        params.push((name.to_owned(), default));
    }
    Some((name.to_owned(), params))
}

fn split_top_level(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == separator && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn parse_simple(text: &str) -> Stmt {
    let word = first_word(text);
    match word {
        "import" => {
            let mut names = Vec::new();
            for part in text[6..].split(',') {
                let mut words = part.split_whitespace();
                let Some(module) = words.next() else { continue };
                let alias = match (words.next(), words.next()) {
                    (Some("as"), Some(alias)) => alias,
                    _ => module.split('.').next().unwrap_or(module),
                };
                names.push((alias.to_owned(), module.to_owned()));
            }
            return Stmt::Import(names);
        }
        "from" => {
            let Some((module, items)) = text[4..].split_once(" import ") else {
                return Stmt::Opaque(Vec::new());
            };
            let module = module.trim();
            let mut names = Vec::new();
            for part in items.trim_matches(|c| c == '(' || c == ')').split(',') {
                let mut words = part.split_whitespace();
                let Some(item) = words.next() else { continue };
                let alias = match (words.next(), words.next()) {
                    (Some("as"), Some(alias)) => alias,
                    _ => item,
                };
                names.push((alias.to_owned(), format!("{module}.{item}")));
            }
            return Stmt::Import(names);
        }
        "print" => return print_labelled(text).unwrap_or(Stmt::Nothing),
        "pass" => return Stmt::Nothing,
        "return" => {
            let rest = text[6..].trim();
            if rest.is_empty() {
                return Stmt::Return(None);
            }
            return match parse_expr(rest) {
                Ok(expr) => Stmt::Return(Some(expr)),
                Err(_) => Stmt::Opaque(Vec::new()),
            };
        }
        _ => {}
    }
    if text.starts_with('"') || text.starts_with('\'') {
        return Stmt::Nothing;
    }
    for (op_text, op) in [
        ("+=", BinOp::Add),
        ("-=", BinOp::Sub),
        ("*=", BinOp::Mul),
        ("/=", BinOp::Div),
    ] {
        if let Some((lhs, rhs)) = text.split_once(op_text) {
            let lhs = lhs.trim();
            if is_identifier(lhs) {
                return match parse_expr(rhs) {
                    Ok(expr) => Stmt::AugAssign(lhs.to_owned(), op, expr),
                    Err(_) => Stmt::Opaque(vec![lhs.to_owned()]),
                };
            }
        }
    }
    let Some((lhs, rhs)) = split_assignment(text) else {
        return Stmt::Opaque(assigned_names(text));
    };
    let opaque = || Stmt::Opaque(assigned_names(text));
    let Ok(expr) = parse_expr(rhs) else {
        return opaque();
    };
    // `a = b = expr`: every part before the last `=` is a target.
    let mut targets = Vec::new();
    for part in split_top_level(lhs, '=') {
        let part = part.trim();
        let part = part.split(':').next().unwrap_or(part).trim(); // `x: float = 1`
        if is_identifier(part) {
            targets.push(Target::Name(part.to_owned()));
        } else if part.contains(',') {
            let names: Vec<String> = part
                .trim_matches(|c| c == '(' || c == ')')
                .split(',')
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect();
            if !names.iter().all(|n| is_identifier(n)) {
                return opaque();
            }
            targets.push(Target::Tuple(names));
        } else if let Some(open) = part.find('[') {
            let name = &part[..open];
            let Some(key) = part[open + 1..].strip_suffix(']') else {
                return opaque();
            };
            match (is_identifier(name), parse_expr(key)) {
                (true, Ok(key)) => targets.push(Target::Item(name.to_owned(), key)),
                _ => return opaque(),
            }
        } else {
            return opaque();
        }
    }
    Stmt::Assign(targets, expr)
}

// ---------------------------------------------------------------- expressions

#[derive(Debug, Clone, Copy, PartialEq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
}

#[derive(Debug, Clone)]
enum Expr {
    Const(Val),
    Name(String),
    Attr(Box<Expr>, String),
    Call(Box<Expr>, Vec<Expr>, Vec<(String, Expr)>),
    Index(Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Cmp(Box<Expr>, Vec<(CmpOp, Expr)>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    IfElse(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Val),
    Str(String),
    Name(String),
    Op(&'static str),
}

const OPERATORS: &[&str] = &[
    "**", "//", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", "{",
    "}", ",", ":", ".", "=",
];

fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let start = i;
            let hex = chars.get(start + 1).is_some_and(|c| matches!(c, 'x' | 'X'));
            while let Some(&d) = chars.get(i) {
                let exponent_sign =
                    matches!(d, '+' | '-') && !hex && matches!(chars[i - 1], 'e' | 'E');
                if !(d.is_ascii_alphanumeric() || d == '.' || d == '_' || exponent_sign) {
                    break;
                }
                i += 1;
            }
            let literal: String = chars[start..i].iter().filter(|&&c| c != '_').collect();
            tokens.push(Tok::Num(number_literal(&literal)?));
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if matches!(chars.get(i), Some('"' | '\'')) {
                // String prefixes: r, b, u are read; f-strings are not.
                match word.to_ascii_lowercase().as_str() {
                    "r" | "u" | "b" | "rb" | "br" => {}
                    _ => return Err(format!("string prefix {word:?} is not read")),
                }
                continue;
            }
            tokens.push(Tok::Name(word));
            continue;
        }
        if c == '"' || c == '\'' {
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let quote_len = if triple { 3 } else { 1 };
            i += quote_len;
            let mut value = String::new();
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err("unterminated string".into());
                };
                if ch == c
                    && (!triple || (chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c)))
                {
                    i += quote_len;
                    break;
                }
                if ch == '\\' {
                    let next = chars.get(i + 1).copied().unwrap_or('\\');
                    value.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                value.push(ch);
                i += 1;
            }
            tokens.push(Tok::Str(value));
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) else {
            return Err(format!("unexpected character {c:?}"));
        };
        tokens.push(Tok::Op(op));
        i += op.len();
    }
    Ok(tokens)
}

fn number_literal(literal: &str) -> Result<Val, String> {
    let lower = literal.to_ascii_lowercase();
    let radix = [("0x", 16), ("0o", 8), ("0b", 2)]
        .into_iter()
        .find(|(prefix, _)| lower.starts_with(prefix));
    if let Some((prefix, radix)) = radix {
        return i64::from_str_radix(&lower[prefix.len()..], radix)
            .map(Val::Int)
            .map_err(|_| format!("bad number {literal:?}"));
    }
    if !lower.contains(['.', 'e']) {
        if let Ok(int) = lower.parse::<i64>() {
            return Ok(Val::Int(int));
        }
    }
    lower
        .parse::<f64>()
        .map(Val::Float)
        .map_err(|_| format!("bad number {literal:?}"))
}

fn parse_expr(text: &str) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    if tokens.len() > MAX_TOKENS {
        return Err("expression too long".into());
    }
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let expr = parser.expr()?;
    if parser.pos != parser.tokens.len() {
        return Err("trailing tokens".into());
    }
    Ok(expr)
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Name(w)) if w == word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> Result<(), String> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(format!("expected {op:?}"))
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("expression nested too deeply".into());
        }
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// `expr := or ['if' or 'else' expr]`, or a bare tuple `a, b`.
    fn expr(&mut self) -> Result<Expr, String> {
        let first = self.conditional()?;
        if matches!(self.peek(), Some(Tok::Op(","))) {
            let mut items = vec![first];
            while self.eat_op(",") {
                if self.peek().is_none() {
                    break;
                }
                items.push(self.conditional()?);
            }
            return Ok(Expr::List(items));
        }
        Ok(first)
    }

    fn conditional(&mut self) -> Result<Expr, String> {
        self.nested(|p| {
            let body = p.or()?;
            if p.eat_word("if") {
                let condition = p.or()?;
                if !p.eat_word("else") {
                    return Err("conditional without else".into());
                }
                let orelse = p.conditional()?;
                return Ok(Expr::IfElse(
                    Box::new(condition),
                    Box::new(body),
                    Box::new(orelse),
                ));
            }
            Ok(body)
        })
    }

    /// Each link of a left-deep chain (`a + b + c`) deepens the tree, so it
    /// counts toward [`MAX_DEPTH`] like a nested parenthesis.
    fn link(&mut self, links: &mut usize) -> Result<(), String> {
        *links += 1;
        if self.depth + *links > MAX_DEPTH {
            return Err("expression nested too deeply".into());
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        let mut links = 0;
        while self.eat_word("or") {
            self.link(&mut links)?;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.not()?;
        let mut links = 0;
        while self.eat_word("and") {
            self.link(&mut links)?;
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            return self.nested(|p| Ok(Expr::Not(Box::new(p.not()?))));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let left = self.sum()?;
        let mut rest = Vec::new();
        let mut links = 0;
        loop {
            let op = match self.peek() {
                Some(Tok::Op("<")) => CmpOp::Lt,
                Some(Tok::Op("<=")) => CmpOp::Le,
                Some(Tok::Op(">")) => CmpOp::Gt,
                Some(Tok::Op(">=")) => CmpOp::Ge,
                Some(Tok::Op("==")) => CmpOp::Eq,
                Some(Tok::Op("!=")) => CmpOp::Ne,
                Some(Tok::Name(w)) if w == "in" => CmpOp::In,
                Some(Tok::Name(w)) if w == "not" => {
                    if matches!(self.tokens.get(self.pos + 1), Some(Tok::Name(w)) if w == "in") {
                        self.pos += 1;
                        CmpOp::NotIn
                    } else {
                        break;
                    }
                }
                _ => break,
            };
            self.pos += 1;
            self.link(&mut links)?;
            rest.push((op, self.sum()?));
        }
        if rest.is_empty() {
            Ok(left)
        } else {
            Ok(Expr::Cmp(Box::new(left), rest))
        }
    }

    /// One left-associative level of binary operators: `next (op next)*`.
    fn left_assoc(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        let mut left = next(self)?;
        let mut links = 0;
        while let Some(&(_, op)) = ops.iter().find(|(text, _)| self.eat_op(text)) {
            self.link(&mut links)?;
            let right = next(self)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        self.left_assoc(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::term)
    }

    fn term(&mut self) -> Result<Expr, String> {
        let ops = [
            ("*", BinOp::Mul),
            ("/", BinOp::Div),
            ("//", BinOp::FloorDiv),
            ("%", BinOp::Mod),
        ];
        self.left_assoc(&ops, Self::unary)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat_op("-") {
            return self.nested(|p| Ok(Expr::Neg(Box::new(p.unary()?))));
        }
        if self.eat_op("+") {
            return self.nested(|p| p.unary());
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, String> {
        let base = self.postfix()?;
        if self.eat_op("**") {
            let exponent = self.nested(|p| p.unary())?;
            return Ok(Expr::Bin(BinOp::Pow, Box::new(base), Box::new(exponent)));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut expr = self.atom()?;
        let mut links = 0;
        loop {
            if matches!(self.peek(), Some(Tok::Op("." | "(" | "["))) {
                self.link(&mut links)?;
            }
            if self.eat_op(".") {
                match self.tokens.get(self.pos).cloned() {
                    Some(Tok::Name(name)) => {
                        self.pos += 1;
                        expr = Expr::Attr(Box::new(expr), name);
                    }
                    _ => return Err("expected attribute name".into()),
                }
            } else if self.eat_op("(") {
                let (args, kwargs) = self.nested(|p| p.call_args())?;
                expr = Expr::Call(Box::new(expr), args, kwargs);
            } else if self.eat_op("[") {
                let index = self.nested(|p| p.expr())?;
                self.expect_op("]")?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                return Ok(expr);
            }
        }
    }

    fn call_args(&mut self) -> Result<CallArgs, String> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        while !self.eat_op(")") {
            if let (Some(Tok::Name(name)), Some(Tok::Op("="))) =
                (self.peek().cloned(), self.tokens.get(self.pos + 1))
            {
                self.pos += 2;
                kwargs.push((name, self.conditional()?));
            } else {
                args.push(self.conditional()?);
            }
            if !self.eat_op(",") {
                self.expect_op(")")?;
                break;
            }
        }
        Ok((args, kwargs))
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let Some(token) = self.tokens.get(self.pos).cloned() else {
            return Err("unexpected end of expression".into());
        };
        self.pos += 1;
        match token {
            Tok::Num(value) => Ok(Expr::Const(value)),
            Tok::Str(mut value) => {
                // Adjacent literals concatenate.
                while let Some(Tok::Str(next)) = self.peek().cloned() {
                    self.pos += 1;
                    value.push_str(&next);
                }
                Ok(Expr::Const(Val::Str(value)))
            }
            Tok::Name(name) => match name.as_str() {
                "True" => Ok(Expr::Const(Val::Bool(true))),
                "False" => Ok(Expr::Const(Val::Bool(false))),
                "None" => Ok(Expr::Const(Val::None)),
                "lambda" | "for" | "yield" | "await" => Err(format!("{name} is not read")),
                _ => Ok(Expr::Name(name)),
            },
            Tok::Op("(") => self.nested(|p| {
                if p.eat_op(")") {
                    return Ok(Expr::List(Vec::new()));
                }
                let inner = p.expr()?;
                p.expect_op(")")?;
                Ok(inner)
            }),
            Tok::Op("[") => self.nested(|p| {
                let mut items = Vec::new();
                while !p.eat_op("]") {
                    items.push(p.conditional()?);
                    if matches!(p.peek(), Some(Tok::Name(w)) if w == "for") {
                        return Err("comprehensions are not read".into());
                    }
                    if !p.eat_op(",") {
                        p.expect_op("]")?;
                        break;
                    }
                }
                Ok(Expr::List(items))
            }),
            Tok::Op("{") => self.nested(|p| {
                let mut items = Vec::new();
                while !p.eat_op("}") {
                    let key = p.conditional()?;
                    p.expect_op(":")?;
                    let value = p.conditional()?;
                    if matches!(p.peek(), Some(Tok::Name(w)) if w == "for") {
                        return Err("comprehensions are not read".into());
                    }
                    items.push((key, value));
                    if !p.eat_op(",") {
                        p.expect_op("}")?;
                        break;
                    }
                }
                Ok(Expr::Dict(items))
            }),
            Tok::Op(op) => Err(format!("unexpected {op:?}")),
        }
    }
}

// ---------------------------------------------------------------- values

#[derive(Debug, Clone)]
enum Val {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    /// Days since 1970-01-01.
    Date(i64),
    /// Seconds since 1970-01-01T00:00:00.
    DateTime(i64),
    /// A time span in seconds.
    Delta(f64),
    List(Vec<Val>),
    Dict(Vec<(String, Val)>),
    Func(Rc<FuncDef>),
    /// A bound method that only reads (`.date()`, `.get()`), and its receiver.
    Method(&'static str, Box<Val>),
    /// A module or library function, by qualified name (`math`, `math.sqrt`).
    Lib(String),
}

impl PartialEq for Val {
    fn eq(&self, other: &Self) -> bool {
        match (self.number(), other.number()) {
            (Some(a), Some(b)) => a == b,
            _ => match (self, other) {
                (Val::Str(a), Val::Str(b)) => a == b,
                (Val::None, Val::None) => true,
                (Val::Date(a), Val::Date(b)) | (Val::DateTime(a), Val::DateTime(b)) => a == b,
                (Val::Delta(a), Val::Delta(b)) => a == b,
                (Val::List(a), Val::List(b)) => a == b,
                (Val::Dict(a), Val::Dict(b)) => a == b,
                _ => false,
            },
        }
    }
}

impl Val {
    fn number(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    fn truthy(&self) -> Result<bool, String> {
        Ok(match self {
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::Bool(b) => *b,
            Val::None => false,
            Val::List(items) => !items.is_empty(),
            Val::Dict(items) => !items.is_empty(),
            Val::Delta(d) => *d != 0.0,
            _ => return Err("truth value not read".into()),
        })
    }
}

fn to_json(value: &Val) -> Option<Value> {
    Some(match value {
        Val::Int(i) => Value::from(*i),
        Val::Float(f) => Value::from(serde_json::Number::from_f64(*f)?),
        Val::Str(s) => Value::String(s.clone()),
        Val::Bool(b) => Value::Bool(*b),
        Val::None => Value::Null,
        Val::Date(days) => Value::String(format_date(*days)),
        Val::DateTime(seconds) => {
            let days = seconds.div_euclid(86_400);
            let rest = seconds.rem_euclid(86_400);
            Value::String(format!(
                "{}T{:02}:{:02}:{:02}",
                format_date(days),
                rest / 3600,
                rest / 60 % 60,
                rest % 60
            ))
        }
        Val::Delta(seconds) => Value::from(serde_json::Number::from_f64(seconds / 86_400.0)?),
        Val::List(items) => Value::Array(items.iter().filter_map(to_json).collect()),
        Val::Dict(items) => Value::Object(
            items
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), to_json(v)?)))
                .collect(),
        ),
        Val::Func(_) | Val::Method(_, _) | Val::Lib(_) => return None,
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> Result<i64, String> {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) {
        return Err("date out of range".into());
    }
    if day < 1 || day > month_days[(month - 1) as usize] {
        return Err("day is out of range for month".into());
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Ok(era * 146_097 + doe - 719_468)
}

fn format_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

// ---------------------------------------------------------------- evaluation

#[derive(Debug, Default)]
struct Scope {
    values: HashMap<String, Val>,
    order: Vec<String>,
}

impl Scope {
    fn set(&mut self, name: &str, value: Val) {
        if self.values.insert(name.to_owned(), value).is_none()
            && !self.order.iter().any(|n| n == name)
        {
            self.order.push(name.to_owned());
        }
    }

    fn forget(&mut self, name: &str) {
        self.values.remove(name);
    }
}

enum Flow {
    Next,
    Return(Val),
}

struct Interp {
    /// Values shown by `print("label:", value)`, in order.
    printed: Vec<(String, Val)>,
    steps: usize,
    call_depth: usize,
    skipped: Vec<SkippedStatement>,
}

/// The names an expression can see: its own scope, and the module's when
/// it runs inside a function (`None` at module level, where the two are
/// the same).
#[derive(Clone, Copy)]
struct Names<'a> {
    local: &'a Scope,
    module: Option<&'a Scope>,
}

impl Names<'_> {
    fn module(&self) -> &Scope {
        self.module.unwrap_or(self.local)
    }
}

impl Interp {
    /// Runs a block. At module level (`top`), a statement that cannot be
    /// evaluated forgets the names it would have changed and is recorded;
    /// inside a branch or function, the failure goes to the caller.
    fn run_block(
        &mut self,
        block: &[(String, Stmt)],
        scope: &mut Scope,
        module: Option<&Scope>,
        top: bool,
    ) -> Result<Flow, String> {
        for (line, stmt) in block {
            match self.run_stmt(stmt, scope, module) {
                Ok(Flow::Next) => {}
                Ok(flow @ Flow::Return(_)) => return Ok(flow),
                Err(why) if top => {
                    for name in changed_names(stmt) {
                        scope.forget(&name);
                    }
                    self.skipped.push(SkippedStatement {
                        statement: line.clone(),
                        reason: why,
                    });
                }
                Err(why) => return Err(why),
            }
        }
        Ok(Flow::Next)
    }

    fn run_stmt(
        &mut self,
        stmt: &Stmt,
        scope: &mut Scope,
        module: Option<&Scope>,
    ) -> Result<Flow, String> {
        match stmt {
            Stmt::Nothing => {}
            Stmt::PrintLabelled(label, expr) => {
                // What module-level code prints is what a reader sees; a
                // print that cannot be evaluated changes nothing.
                if module.is_none() {
                    if let Ok(value) = self.eval(
                        expr,
                        Names {
                            local: scope,
                            module,
                        },
                    ) {
                        self.printed.push((label.clone(), value));
                    }
                }
            }
            Stmt::Opaque(_) => return Err("not read".into()),
            Stmt::Import(names) => {
                for (alias, module) in names {
                    scope.set(alias, Val::Lib(module.clone()));
                }
            }
            Stmt::Def(def) => scope.set(&def.name, Val::Func(Rc::clone(def))),
            Stmt::Return(expr) => {
                let value = match expr {
                    Some(expr) => self.eval(
                        expr,
                        Names {
                            local: scope,
                            module,
                        },
                    )?,
                    None => Val::None,
                };
                return Ok(Flow::Return(value));
            }
            Stmt::Assign(targets, expr) => {
                let value = self.eval(
                    expr,
                    Names {
                        local: scope,
                        module,
                    },
                )?;
                for target in targets {
                    self.assign(target, value.clone(), scope, module)?;
                }
            }
            Stmt::AugAssign(name, op, expr) => {
                let names = Names {
                    local: scope,
                    module,
                };
                let current = self.lookup(name, names)?;
                let value = self.eval(expr, names)?;
                let result = binary(*op, current, value)?;
                scope.set(name, result);
            }
            Stmt::If(branches, orelse) => {
                for (condition, body) in branches {
                    if self
                        .eval(
                            condition,
                            Names {
                                local: scope,
                                module,
                            },
                        )?
                        .truthy()?
                    {
                        return self.run_block(body, scope, module, false);
                    }
                }
                return self.run_block(orelse, scope, module, false);
            }
        }
        Ok(Flow::Next)
    }

    fn assign(
        &mut self,
        target: &Target,
        value: Val,
        scope: &mut Scope,
        module: Option<&Scope>,
    ) -> Result<(), String> {
        match target {
            Target::Name(name) => scope.set(name, value),
            Target::Tuple(names) => {
                let Val::List(items) = value else {
                    return Err("cannot unpack a non-sequence".into());
                };
                if items.len() != names.len() {
                    return Err("cannot unpack: wrong number of values".into());
                }
                for (name, item) in names.iter().zip(items) {
                    scope.set(name, item);
                }
            }
            Target::Item(name, key) => {
                let names = Names {
                    local: scope,
                    module,
                };
                let Val::Str(key) = self.eval(key, names)? else {
                    return Err("item assignment with a non-string key".into());
                };
                let Val::Dict(mut items) = self.lookup(name, names)? else {
                    return Err("item assignment to a non-dict".into());
                };
                match items.iter_mut().find(|(k, _)| *k == key) {
                    Some(entry) => entry.1 = value,
                    None => items.push((key, value)),
                }
                scope.set(name, Val::Dict(items));
            }
        }
        Ok(())
    }

    fn lookup(&mut self, name: &str, names: Names<'_>) -> Result<Val, String> {
        let found = names
            .local
            .values
            .get(name)
            .or_else(|| names.module.and_then(|m| m.values.get(name)))
            .cloned()
            .or_else(|| builtin_name(name))
            .ok_or_else(|| format!("name {name:?} not known"))?;
        // Copying a value costs in proportion to its size.
        self.steps += match &found {
            Val::List(items) => items.len(),
            Val::Dict(items) => items.len(),
            Val::Str(text) => text.len() / 64,
            _ => 0,
        };
        Ok(found)
    }

    fn tick(&mut self) -> Result<(), String> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err("evaluation budget spent".into());
        }
        Ok(())
    }

    fn eval(&mut self, expr: &Expr, names: Names<'_>) -> Result<Val, String> {
        self.tick()?;
        Ok(match expr {
            Expr::Const(value) => value.clone(),
            Expr::Name(name) => self.lookup(name, names)?,
            Expr::Attr(object, attr) => {
                let object = self.eval(object, names)?;
                attribute(object, attr)?
            }
            Expr::Call(callee, args, kwargs) => {
                let callee = self.eval(callee, names)?;
                let mut values = Vec::with_capacity(args.len() + 1);
                for arg in args {
                    values.push(self.eval(arg, names)?);
                }
                let mut keywords = Vec::with_capacity(kwargs.len());
                for (key, arg) in kwargs {
                    keywords.push((key.clone(), self.eval(arg, names)?));
                }
                self.call(callee, values, keywords, names.module())?
            }
            Expr::Index(object, index) => {
                let object = self.eval(object, names)?;
                let index = self.eval(index, names)?;
                match (object, index) {
                    (Val::List(items), Val::Int(i)) => {
                        let i = if i < 0 { i + items.len() as i64 } else { i };
                        usize::try_from(i)
                            .ok()
                            .and_then(|i| items.get(i).cloned())
                            .ok_or("index out of range")?
                    }
                    (Val::Dict(items), Val::Str(key)) => items
                        .into_iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v)
                        .ok_or("key not found")?,
                    _ => return Err("subscript not read".into()),
                }
            }
            Expr::List(items) => {
                if items.len() > MAX_LIST {
                    return Err("list too long".into());
                }
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.eval(item, names)?);
                }
                Val::List(values)
            }
            Expr::Dict(items) => {
                let mut out: Vec<(String, Val)> = Vec::new();
                for (key, value) in items {
                    let Val::Str(key) = self.eval(key, names)? else {
                        return Err("dict with a non-string key".into());
                    };
                    let value = self.eval(value, names)?;
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = value,
                        None => out.push((key, value)),
                    }
                }
                Val::Dict(out)
            }
            Expr::Neg(inner) => match self.eval(inner, names)? {
                Val::Int(i) => i.checked_neg().map_or(Val::Float(-(i as f64)), Val::Int),
                Val::Float(f) => Val::Float(-f),
                Val::Bool(b) => Val::Int(-i64::from(b)),
                Val::Delta(d) => Val::Delta(-d),
                _ => return Err("bad operand for unary -".into()),
            },
            Expr::Not(inner) => Val::Bool(!self.eval(inner, names)?.truthy()?),
            Expr::Bin(op, left, right) => {
                let left = self.eval(left, names)?;
                let right = self.eval(right, names)?;
                binary(*op, left, right)?
            }
            Expr::Cmp(first, rest) => {
                let mut left = self.eval(first, names)?;
                for (op, right) in rest {
                    let right = self.eval(right, names)?;
                    if !compare(*op, &left, &right)? {
                        return Ok(Val::Bool(false));
                    }
                    left = right;
                }
                Val::Bool(true)
            }
            Expr::And(left, right) => {
                let left = self.eval(left, names)?;
                if !left.truthy()? {
                    return Ok(left);
                }
                self.eval(right, names)?
            }
            Expr::Or(left, right) => {
                let left = self.eval(left, names)?;
                if left.truthy()? {
                    return Ok(left);
                }
                self.eval(right, names)?
            }
            Expr::IfElse(condition, body, orelse) => {
                if self.eval(condition, names)?.truthy()? {
                    self.eval(body, names)?
                } else {
                    self.eval(orelse, names)?
                }
            }
        })
    }

    fn call(
        &mut self,
        callee: Val,
        mut args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
        module: &Scope,
    ) -> Result<Val, String> {
        match callee {
            Val::Func(def) => {
                if self.call_depth >= MAX_CALL_DEPTH {
                    return Err("calls nested too deeply".into());
                }
                if args.len() > def.params.len() {
                    return Err(format!("{}: too many arguments", def.name));
                }
                // Python's TypeError: an unknown keyword, or one that repeats
                // a positional argument.
                for (key, _) in &kwargs {
                    let position = def.params.iter().position(|(name, _)| name == key);
                    if position.is_none_or(|p| p < args.len()) {
                        return Err(format!("{}: unexpected keyword `{key}`", def.name));
                    }
                }
                let mut local = Scope::default();
                let mut args = args.into_iter();
                for (name, default) in &def.params {
                    let value = match args.next() {
                        Some(value) => value,
                        None => match kwargs.iter().find(|(k, _)| k == name) {
                            Some((_, value)) => value.clone(),
                            None => match default {
                                Some(default) => self.eval(
                                    default,
                                    Names {
                                        local: module,
                                        module: None,
                                    },
                                )?,
                                None => return Err(format!("{}: missing {name}", def.name)),
                            },
                        },
                    };
                    local.set(name, value);
                }
                self.call_depth += 1;
                let flow = self.run_block(&def.body, &mut local, Some(module), false);
                self.call_depth -= 1;
                match flow? {
                    Flow::Return(value) => Ok(value),
                    Flow::Next => Ok(Val::None),
                }
            }
            Val::Method(name, receiver) => {
                args.insert(0, *receiver);
                library_call(&format!("method.{name}"), args, &kwargs)
            }
            Val::Lib(name) => library_call(&name, args, &kwargs),
            _ => Err("not callable".into()),
        }
    }
}

fn changed_names(stmt: &Stmt) -> Vec<String> {
    match stmt {
        Stmt::Assign(targets, _) => targets
            .iter()
            .flat_map(|t| match t {
                Target::Name(n) | Target::Item(n, _) => vec![n.clone()],
                Target::Tuple(names) => names.clone(),
            })
            .collect(),
        Stmt::AugAssign(name, _, _) => vec![name.clone()],
        Stmt::If(branches, orelse) => branches
            .iter()
            .flat_map(|(_, body)| body.iter())
            .chain(orelse)
            .flat_map(|(_, stmt)| changed_names(stmt))
            .collect(),
        Stmt::Def(def) => vec![def.name.clone()],
        Stmt::Import(names) => names.iter().map(|(alias, _)| alias.clone()).collect(),
        Stmt::Opaque(names) => names.clone(),
        Stmt::Return(_) | Stmt::Nothing | Stmt::PrintLabelled(_, _) => Vec::new(),
    }
}

fn builtin_name(name: &str) -> Option<Val> {
    const BUILTINS: &[&str] = &[
        "round", "abs", "min", "max", "sum", "len", "float", "int", "bool", "pow",
    ];
    BUILTINS
        .contains(&name)
        .then(|| Val::Lib(format!("builtins.{name}")))
}

fn attribute(object: Val, attr: &str) -> Result<Val, String> {
    Ok(match (&object, attr) {
        (Val::Lib(module), _) => match (module.as_str(), attr) {
            ("math" | "numpy" | "np", "pi") => Val::Float(std::f64::consts::PI),
            ("math" | "numpy" | "np", "e") => Val::Float(std::f64::consts::E),
            ("math", "inf") => Val::Float(f64::INFINITY),
            _ => Val::Lib(format!("{module}.{attr}")),
        },
        (Val::Delta(seconds), "days") => Val::Int((seconds / 86_400.0).floor() as i64),
        (Val::Delta(seconds), "seconds") => Val::Int((seconds.rem_euclid(86_400.0)).floor() as i64),
        (Val::Date(days), "year" | "month" | "day") => {
            let text = format_date(*days);
            let part = match attr {
                "year" => &text[..4],
                "month" => &text[5..7],
                _ => &text[8..10],
            };
            Val::Int(part.parse().map_err(|_| "bad date")?)
        }
        (Val::Delta(_), "total_seconds") => Val::Method("total_seconds", Box::new(object)),
        (Val::DateTime(_), "date") => Val::Method("date", Box::new(object)),
        (Val::Dict(_), "get") => Val::Method("get", Box::new(object)),
        _ => return Err(format!("attribute {attr:?} not read")),
    })
}

fn library_call(name: &str, mut args: Vec<Val>, kwargs: &[(String, Val)]) -> Result<Val, String> {
    let num = |v: &Val| v.number().ok_or_else(|| format!("{name}: not a number"));
    let arg = |i: usize| {
        args.get(i)
            .ok_or_else(|| format!("{name}: missing argument"))
    };
    let float1 = |f: fn(f64) -> f64| -> Result<Val, String> {
        let x = num(arg(0)?)?;
        let y = f(x);
        if y.is_finite() {
            Ok(Val::Float(y))
        } else {
            Err(format!("{name}: math domain error"))
        }
    };
    let short = name.rsplit('.').next().unwrap_or(name);
    let module = name.rsplit_once('.').map_or("", |(m, _)| m);
    // A keyword this reading ignores could change the result (`max(a, b,
    // key=abs)`), so any other keyword is refused.
    let keywords: &[&str] = match short {
        "round" => &["ndigits", "decimals"],
        "date" | "datetime" => &["year", "month", "day", "hour", "minute", "second"],
        "timedelta" => &[
            "days",
            "seconds",
            "microseconds",
            "milliseconds",
            "minutes",
            "hours",
            "weeks",
        ],
        _ => &[],
    };
    if let Some((key, _)) = kwargs.iter().find(|(k, _)| !keywords.contains(&k.as_str())) {
        return Err(format!("{name}: keyword `{key}` is not read"));
    }
    match (module, short) {
        ("builtins", "round") | ("numpy", "round") => {
            let x = arg(0)?;
            let digits = match args.get(1).or_else(|| {
                kwargs
                    .iter()
                    .find(|(k, _)| k == "ndigits" || k == "decimals")
                    .map(|(_, v)| v)
            }) {
                Some(Val::Int(d)) => Some(*d),
                Some(Val::None) | None => None,
                Some(_) => return Err("round: bad ndigits".into()),
            };
            let x = num(x)?;
            match digits {
                None if module == "builtins" => {
                    let r = x.round_ties_even();
                    if r.abs() < 9.0e15 {
                        Ok(Val::Int(r as i64))
                    } else {
                        Err("round: too large".into())
                    }
                }
                None => Ok(Val::Float(x.round_ties_even())),
                Some(d) => Ok(Val::Float(round_to(x, d))),
            }
        }
        ("builtins", "abs") | ("numpy", "abs") | ("math", "fabs") => match arg(0)? {
            Val::Int(i) => Ok(i
                .checked_abs()
                .map_or(Val::Float((*i as f64).abs()), Val::Int)),
            Val::Delta(d) => Ok(Val::Delta(d.abs())),
            other => Ok(Val::Float(num(other)?.abs())),
        },
        ("builtins", "min" | "max") | ("numpy", "min" | "max" | "amin" | "amax") => {
            let items = if args.len() == 1 {
                match args.pop() {
                    Some(Val::List(items)) => items,
                    _ => return Err(format!("{short}: not a sequence")),
                }
            } else {
                args
            };
            let mut best: Option<Val> = None;
            for item in items {
                let better = match &best {
                    None => true,
                    Some(current) => {
                        let op = if short.ends_with("min") {
                            CmpOp::Lt
                        } else {
                            CmpOp::Gt
                        };
                        compare(op, &item, current)?
                    }
                };
                if better {
                    best = Some(item);
                }
            }
            best.ok_or_else(|| format!("{short}: empty sequence"))
        }
        ("builtins" | "numpy" | "math", "sum" | "fsum") => {
            let Some(Val::List(items)) = args.first() else {
                return Err("sum: not a sequence".into());
            };
            let mut total = args.get(1).cloned().unwrap_or(Val::Int(0));
            for item in items {
                total = binary(BinOp::Add, total, item.clone())?;
            }
            Ok(total)
        }
        ("numpy" | "statistics", "mean" | "median" | "std" | "pstdev" | "stdev" | "fmean") => {
            let Some(Val::List(items)) = args.first() else {
                return Err(format!("{short}: not a sequence"));
            };
            let mut values = items.iter().map(num).collect::<Result<Vec<_>, _>>()?;
            if values.is_empty() {
                return Err(format!("{short}: empty sequence"));
            }
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            Ok(Val::Float(match short {
                "mean" | "fmean" => mean,
                "median" => {
                    values.sort_by(f64::total_cmp);
                    let mid = values.len() / 2;
                    if values.len() % 2 == 1 {
                        values[mid]
                    } else {
                        (values[mid - 1] + values[mid]) / 2.0
                    }
                }
                _ => {
                    let sample = short == "stdev";
                    if sample && values.len() < 2 {
                        return Err("stdev: needs two values".into());
                    }
                    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
                    (ss / if sample { n - 1.0 } else { n }).sqrt()
                }
            }))
        }
        ("builtins", "len") => match arg(0)? {
            Val::List(items) => Ok(Val::Int(items.len() as i64)),
            Val::Dict(items) => Ok(Val::Int(items.len() as i64)),
            Val::Str(s) => Ok(Val::Int(s.chars().count() as i64)),
            _ => Err("len: not sized".into()),
        },
        ("builtins", "float") => match arg(0)? {
            Val::Str(s) => s
                .trim()
                .parse()
                .map(Val::Float)
                .map_err(|_| "float: bad text".into()),
            other => Ok(Val::Float(num(other)?)),
        },
        ("builtins", "int") => match arg(0)? {
            Val::Str(s) => s
                .trim()
                .parse()
                .map(Val::Int)
                .map_err(|_| "int: bad text".into()),
            other => {
                let x = num(other)?.trunc();
                if x.abs() < 9.0e15 {
                    Ok(Val::Int(x as i64))
                } else {
                    Err("int: too large".into())
                }
            }
        },
        ("builtins", "bool") => Ok(Val::Bool(arg(0)?.truthy()?)),
        ("builtins" | "math" | "numpy", "pow" | "power") => {
            binary(BinOp::Pow, arg(0)?.clone(), arg(1)?.clone())
        }
        ("math" | "numpy", "sqrt") => float1(f64::sqrt),
        ("math" | "numpy", "exp") => float1(f64::exp),
        ("math" | "numpy", "log10") => float1(f64::log10),
        ("math" | "numpy", "log2") => float1(f64::log2),
        ("math" | "numpy", "log") => {
            let x = num(arg(0)?)?;
            let y = match args.get(1) {
                Some(base) => x.ln() / num(base)?.ln(),
                None => x.ln(),
            };
            if y.is_finite() {
                Ok(Val::Float(y))
            } else {
                Err("log: math domain error".into())
            }
        }
        ("math" | "numpy", "sin") => float1(f64::sin),
        ("math" | "numpy", "cos") => float1(f64::cos),
        ("math" | "numpy", "tan") => float1(f64::tan),
        ("math" | "numpy", "radians" | "deg2rad") => float1(f64::to_radians),
        ("math" | "numpy", "degrees" | "rad2deg") => float1(f64::to_degrees),
        ("math" | "numpy", "atan2" | "arctan2") => {
            Ok(Val::Float(num(arg(0)?)?.atan2(num(arg(1)?)?)))
        }
        ("math", "hypot") => Ok(Val::Float(num(arg(0)?)?.hypot(num(arg(1)?)?))),
        ("math", "floor" | "ceil") => {
            let x = num(arg(0)?)?;
            let y = if short == "floor" {
                x.floor()
            } else {
                x.ceil()
            };
            if y.abs() < 9.0e15 {
                Ok(Val::Int(y as i64))
            } else {
                Err(format!("{short}: too large"))
            }
        }
        ("numpy", "floor") => float1(f64::floor),
        ("numpy", "ceil") => float1(f64::ceil),
        ("datetime" | "datetime.datetime", "date" | "datetime") => {
            let part = |i: usize, key: &str, default: Option<i64>| -> Result<i64, String> {
                match args
                    .get(i)
                    .or_else(|| kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v))
                {
                    Some(Val::Int(v)) => Ok(*v),
                    Some(_) => Err(format!("{short}: {key} is not an integer")),
                    None => default.ok_or_else(|| format!("{short}: missing {key}")),
                }
            };
            let days = days_from_civil(
                part(0, "year", None)?,
                part(1, "month", None)?,
                part(2, "day", None)?,
            )?;
            if short == "date" {
                return Ok(Val::Date(days));
            }
            let (h, m, s) = (
                part(3, "hour", Some(0))?,
                part(4, "minute", Some(0))?,
                part(5, "second", Some(0))?,
            );
            if !(0..24).contains(&h) || !(0..60).contains(&m) || !(0..60).contains(&s) {
                return Err("time out of range".into());
            }
            Ok(Val::DateTime(days * 86_400 + h * 3600 + m * 60 + s))
        }
        ("datetime", "timedelta") => {
            let mut seconds = 0.0;
            for (i, (key, unit)) in [
                ("days", 86_400.0),
                ("seconds", 1.0),
                ("microseconds", 1e-6),
                ("milliseconds", 1e-3),
                ("minutes", 60.0),
                ("hours", 3600.0),
                ("weeks", 604_800.0),
            ]
            .into_iter()
            .enumerate()
            {
                let value = args
                    .get(i)
                    .or_else(|| kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v));
                if let Some(value) = value {
                    seconds += num(value)? * unit;
                }
            }
            Ok(Val::Delta(seconds))
        }
        ("method", "total_seconds") => match args.first() {
            Some(Val::Delta(d)) => Ok(Val::Float(*d)),
            _ => Err("total_seconds: not a time span".into()),
        },
        ("method", "date") => match args.first() {
            Some(Val::DateTime(s)) => Ok(Val::Date(s.div_euclid(86_400))),
            _ => Err("date: not a datetime".into()),
        },
        ("method", "get") => match (args.first(), args.get(1)) {
            (Some(Val::Dict(items)), Some(Val::Str(key))) => {
                Ok(items.iter().find(|(k, _)| k == key).map_or_else(
                    || args.get(2).cloned().unwrap_or(Val::None),
                    |(_, v)| v.clone(),
                ))
            }
            _ => Err("get: bad arguments".into()),
        },
        _ => Err(format!("{name} is not read")),
    }
}

/// Python's `round(x, d)`: the nearest value with `d` decimals, ties to
/// even on the exact binary value (as Python's correctly rounded repr).
fn round_to(x: f64, digits: i64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    if digits > 300 {
        return x;
    }
    if digits < -300 {
        return 0.0;
    }
    if digits >= 0 {
        let text = format!("{:.*}", digits as usize, x);
        text.parse().unwrap_or(x)
    } else {
        let scale = 10f64.powi((-digits) as i32);
        (x / scale).round_ties_even() * scale
    }
}

fn binary(op: BinOp, left: Val, right: Val) -> Result<Val, String> {
    use BinOp::*;
    match (&left, &right) {
        (Val::Int(a), Val::Int(b)) => {
            let (a, b) = (*a, *b);
            let checked = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                FloorDiv => {
                    if b == 0 {
                        return Err("division by zero".into());
                    }
                    // Python rounds the quotient toward negative infinity.
                    a.checked_div(b).map(|q| {
                        if a % b != 0 && ((a < 0) != (b < 0)) {
                            q - 1
                        } else {
                            q
                        }
                    })
                }
                Mod => {
                    if b == 0 {
                        return Err("division by zero".into());
                    }
                    a.checked_rem(b).map(|r| {
                        if r != 0 && (r < 0) != (b < 0) {
                            r + b
                        } else {
                            r
                        }
                    })
                }
                Pow if b >= 0 => u32::try_from(b).ok().and_then(|b| a.checked_pow(b)),
                Div | Pow => None,
            };
            if let Some(value) = checked {
                return Ok(Val::Int(value));
            }
            float_binary(op, a as f64, b as f64)
        }
        (Val::Str(a), Val::Str(b)) if op == Add => {
            if a.len() + b.len() > MAX_STRING {
                return Err("string too long".into());
            }
            Ok(Val::Str(format!("{a}{b}")))
        }
        (Val::List(a), Val::List(b)) if op == Add => {
            if a.len() + b.len() > MAX_LIST {
                return Err("list too long".into());
            }
            Ok(Val::List(a.iter().chain(b).cloned().collect()))
        }
        (Val::Date(a), Val::Date(b)) if op == Sub => Ok(Val::Delta((a - b) as f64 * 86_400.0)),
        (Val::DateTime(a), Val::DateTime(b)) if op == Sub => Ok(Val::Delta((a - b) as f64)),
        (Val::Date(a), Val::Delta(d)) if matches!(op, Add | Sub) => {
            let days = (d / 86_400.0).floor() as i64;
            Ok(Val::Date(if op == Add { a + days } else { a - days }))
        }
        (Val::DateTime(a), Val::Delta(d)) if matches!(op, Add | Sub) => {
            let s = d.round() as i64;
            Ok(Val::DateTime(if op == Add { a + s } else { a - s }))
        }
        (Val::Delta(a), Val::Delta(b)) => match op {
            Add => Ok(Val::Delta(a + b)),
            Sub => Ok(Val::Delta(a - b)),
            Div if *b != 0.0 => Ok(Val::Float(a / b)),
            _ => Err("time span operation not read".into()),
        },
        (Val::Delta(a), other) if matches!(op, Mul | Div) => {
            let x = other.number().ok_or("bad operand")?;
            if op == Div && x == 0.0 {
                return Err("division by zero".into());
            }
            Ok(Val::Delta(if op == Mul { a * x } else { a / x }))
        }
        _ => match (left.number(), right.number()) {
            (Some(a), Some(b)) => float_binary(op, a, b),
            _ => Err("unsupported operand types".into()),
        },
    }
}

fn float_binary(op: BinOp, a: f64, b: f64) -> Result<Val, String> {
    use BinOp::*;
    if matches!(op, Div | FloorDiv | Mod) && b == 0.0 {
        return Err("division by zero".into());
    }
    let value = match op {
        Add => a + b,
        Sub => a - b,
        Mul => a * b,
        Div => a / b,
        FloorDiv => python_float_divmod(a, b).0,
        Mod => python_float_divmod(a, b).1,
        Pow => a.powf(b),
    };
    if value.is_finite() {
        Ok(Val::Float(value))
    } else {
        Err("result is not finite".into())
    }
}

/// Python's float `divmod` (CPython `float_divmod`): the quotient comes
/// from `fmod`, so `1 // 0.1` is `9.0`, not `floor(1 / 0.1)`.
fn python_float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut remainder = a % b;
    let mut quotient = (a - remainder) / b;
    if remainder != 0.0 {
        if (b < 0.0) != (remainder < 0.0) {
            remainder += b;
            quotient -= 1.0;
        }
    } else {
        remainder = 0.0_f64.copysign(b);
    }
    let floor = if quotient != 0.0 {
        let floor = quotient.floor();
        if quotient - floor > 0.5 {
            floor + 1.0
        } else {
            floor
        }
    } else {
        0.0_f64.copysign(a / b)
    };
    (floor, remainder)
}

fn compare(op: CmpOp, left: &Val, right: &Val) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ordering = || -> Result<Ordering, String> {
        match (left.number(), right.number()) {
            (Some(a), Some(b)) => a.partial_cmp(&b).ok_or_else(|| "cannot compare".into()),
            _ => match (left, right) {
                (Val::Str(a), Val::Str(b)) => Ok(a.cmp(b)),
                (Val::Date(a), Val::Date(b)) | (Val::DateTime(a), Val::DateTime(b)) => Ok(a.cmp(b)),
                (Val::Delta(a), Val::Delta(b)) => {
                    a.partial_cmp(b).ok_or_else(|| "cannot compare".into())
                }
                _ => Err("cannot compare".into()),
            },
        }
    };
    Ok(match op {
        CmpOp::Eq => left == right,
        CmpOp::Ne => left != right,
        CmpOp::Lt => ordering()? == Ordering::Less,
        CmpOp::Le => ordering()? != Ordering::Greater,
        CmpOp::Gt => ordering()? == Ordering::Greater,
        CmpOp::Ge => ordering()? != Ordering::Less,
        CmpOp::In | CmpOp::NotIn => {
            let found = match right {
                Val::List(items) => items.contains(left),
                Val::Dict(items) => {
                    matches!(left, Val::Str(k) if items.iter().any(|(key, _)| key == k))
                }
                Val::Str(text) => match left {
                    Val::Str(needle) => text.contains(needle.as_str()),
                    _ => return Err("'in <string>' needs a string".into()),
                },
                _ => return Err("not a container".into()),
            };
            found == (op == CmpOp::In)
        }
    })
}
