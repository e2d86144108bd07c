//! `read_code` against CPython: every binding the reader gives must equal
//! what Python computes for the same code, statement by statement, and the
//! reader must never panic or overflow a small stack on hostile input.
//!
//! Python runs each top-level statement with `exec`; a statement that raises
//! drops the names it assigns, which is the reader's rule for a statement it
//! cannot evaluate. The reference therefore needs `python3` on `PATH` (or
//! `EARTHVERSE_PYTHON`), as the sandbox tests do.
#![cfg(feature = "code-reading")]
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};

use earthverse_answer_units::{parse_answer, read_code, AnswerShape};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// Runs each program's statements in CPython and returns its globals as
/// JSON (`null` for a program whose values leave the exactly comparable
/// range: ints beyond 2^53 or floats beyond 1e15).
const HARNESS: &str = r#"
import json, sys, math, datetime
def to_json(v):
    if isinstance(v, bool) or v is None or isinstance(v, str): return v
    if isinstance(v, int):
        if abs(v) > 2**53: raise OverflowError
        return v
    if isinstance(v, float):
        if not math.isfinite(v) or abs(v) > 1e15: raise OverflowError
        return v
    if isinstance(v, datetime.datetime): return v.strftime('%Y-%m-%dT%H:%M:%S')
    if isinstance(v, datetime.date): return v.isoformat()
    if isinstance(v, datetime.timedelta): return v.total_seconds() / 86400
    if isinstance(v, (list, tuple)): return [to_json(x) for x in v]
    if isinstance(v, dict): return {k: to_json(x) for k, x in v.items()}
    raise TypeError
out = []
for program in json.load(sys.stdin):
    g = {}
    for source, names in program:
        try:
            exec(source, g)
        except Exception:
            for n in names: g.pop(n, None)
    result = {}
    try:
        for k, v in g.items():
            if k.startswith('__') or callable(v) or type(v).__name__ == 'module': continue
            result[k] = to_json(v)
    except OverflowError:
        result = None
    out.append(result)
json.dump(out, sys.stdout)
"#;

fn python() -> String {
    std::env::var("EARTHVERSE_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Each program is a list of (top-level statement, names it assigns).
fn run_python(programs: &[Vec<(String, Vec<String>)>]) -> Vec<Value> {
    let mut child = Command::new(python())
        .args(["-c", HARNESS])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (set EARTHVERSE_PYTHON to another interpreter)");
    let input = serde_json::to_vec(programs).expect("programs serialise");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write programs");
    let output = child.wait_with_output().expect("python finishes");
    assert!(output.status.success(), "the Python harness failed");
    serde_json::from_slice(&output.stdout).expect("python prints JSON")
}

fn numbers_agree(ours: &Value, python: &Value) -> bool {
    match (ours, python) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| numbers_agree(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| numbers_agree(x, y)))
        }
        _ => ours == python,
    }
}

/// Compares one program; returns how many names the reader computed.
fn check_program(code: &str, python: &Value, exact_names: bool) -> usize {
    let reading = read_code(code);
    let Value::Object(python) = python else {
        panic!("python gave no globals for:\n{code}");
    };
    for (name, ours) in &reading.bindings {
        let theirs = python
            .get(name)
            .unwrap_or_else(|| panic!("reader bound {name} = {ours}, Python did not, in:\n{code}"));
        assert!(
            numbers_agree(ours, theirs),
            "{name}: reader {ours}, Python {theirs}, in:\n{code}"
        );
    }
    if exact_names {
        let missing: Vec<_> = python
            .keys()
            .filter(|k| !reading.bindings.contains_key(*k))
            .collect();
        assert!(
            missing.is_empty(),
            "reader missed {missing:?} (skipped {:?}) in:\n{code}",
            reading.skipped
        );
    }
    reading.bindings.len()
}

/// Top-level statements of a hand-written program, for the harness: a
/// statement is a line at column 0 with the indented lines under it.
fn statements(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in code.lines() {
        if line.starts_with(' ') || line.starts_with("elif") || line.starts_with("else") {
            if let Some(last) = out.last_mut() {
                last.0.push('\n');
                last.0.push_str(line);
            }
        } else if !line.trim().is_empty() {
            out.push((line.to_owned(), Vec::new()));
        }
    }
    // Names a failing statement drops: every `name =` at the start of a line.
    for (source, names) in &mut out {
        for line in source.lines() {
            let line = line.trim();
            if let Some((lhs, _)) = line.split_once('=') {
                for name in lhs.split(',') {
                    let name = name.trim().trim_end_matches(['+', '-', '*', '/']).trim();
                    if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                        names.push(name.to_owned());
                    }
                }
            }
        }
    }
    out
}

const HAND_WRITTEN: &[&str] = &[
    // Precedence, unary minus and power, chained comparison, int/float.
    "a = 2 + 3 * 4 ** 2 / 8 - -2 ** 2\nb = 7 // 2, -7 // 2, 7 % -3, -7 % 3\nc = 1 < 2 <= 2 < 3\nd = 10 / 4\ne = 10 // 4\nf = 2 ** -1\ng = 1_000_000 * 3\nh = 1e3 + .5\ni = 0x1F + 0o17 + 0b101",
    // Python's float floor division and modulo.
    "a = 1 // 0.1\nb = 1 % 0.1\nc = -7.5 // 2\nd = -7.5 % 2\ne = 7.5 % -2\nf = 5.0 // -0.3",
    // round: ties to even, on the exact binary value.
    "a = round(2.5)\nb = round(3.5)\nc = round(0.125, 2)\nd = round(2.675, 2)\ne = round(-0.5)\nf = round(1234.5678, -2)\ng = round(0.3333333, 3)\nh = round(51.5865, 3)",
    // Builtins and math.
    "import math\na = abs(-3)\nb = max(1, 2.5, 2)\nc = min([4, 3, 9])\nd = sum([1, 2, 3.5])\ne = math.sqrt(2)\nf = math.log(8, 2)\ng = math.floor(-2.5)\nh = math.ceil(2.1)\ni = math.pi * 2\nj = int(-3.9) + float(2)\nk = math.exp(1) - math.e\nl = pow(2, 10)\nm = len([1, 2, 3])",
    // Conditional expressions, and/or, not, in.
    "x = 0.179\nlabel = 'weak' if abs(x) < 0.25 and x > 0 else 'strong'\nflag = not (x > 1 or x < 0)\nz = x or 5\nw = 0 and 5\nm = 'a' in ['a', 'b']\nn = 'ab' not in 'xaby'",
    // if / elif / else at module level.
    "score = 72.4\nif score >= 80:\n    cls = 'severe'\nelif score >= 65:\n    cls = 'high'\n    band = 2\nelse:\n    cls = 'moderate'\nafter = cls + '_class'",
    // Functions with defaults, keywords and a local computation.
    "def clip(v, lo=0, hi=1):\n    return max(lo, min(hi, v))\ndef scaled(x, factor=2.0):\n    y = x * factor\n    if y > 10:\n        return 10\n    return y\na = clip(1.7)\nb = clip(-0.2, lo=-0.1)\nc = scaled(3)\nd = scaled(7, factor=3)\ne = round(0.5 * clip(2.75 / 2.5) + 0.3 * clip(6 / 6), 3)",
    // Dates and time spans.
    "from datetime import date, datetime, timedelta\nstart = date(2016, 1, 1)\nend = date(2016, 4, 20)\nwindow_days = (end - start).days + 1\nt0 = datetime(2024, 8, 13, 6)\nt1 = datetime(2024, 9, 5)\nhours = (t1 - t0).total_seconds() / 3600\nday = t0.date()\nlater = end + timedelta(days=30)\nspan = t1 - t0",
    // Tuples, lists, dicts, item assignment, subscripts, augmented assignment.
    "a, b = 3, 4.5\npair = (a, b)\nvals = [a, b, 7]\nlast = vals[-1]\nresult = {'peak': b, 'n': a}\nresult['ratio'] = b / a\ngot = result.get('peak')\nother = result.get('none', 9)\ncount = 1\ncount += 2\ncount *= 3",
    // Statements outside the subset drop what they could change.
    "import json\ntotal = 0\nvalues = [1, 2, 3]\nfor v in values:\n    total += v\nvalues.append(4)\nmsg = f'{total}'\nsquares = [v * v for v in range(3)]\ntext = json.dumps({'a': 1})\nkept = 5",
    // Errors drop only the failing statement's names; so do keywords the
    // reader does not take into account.
    "a = 1 / 0\nb = 2\nc = undefined_name + 1\nd = b * 2\ne = 10 ** 400 * 1.0\nf = int('x')\ng = max(-5, 3, key=abs)\ndef h(x):\n    return x\ni = h(1, x=2)\nj = h(y=1)",
    // Strings, escapes, implicit concatenation, continuation lines.
    "s = 'a\\tb' + \"c\"\nt = ('long '\n     'label')\nu = (1 +\n     2 +\n     3)\nv = 4 + \\\n    5\nw = '''x'''",
];

#[test]
fn hand_written_programs_match_python() {
    let programs: Vec<_> = HAND_WRITTEN.iter().map(|code| statements(code)).collect();
    let python = run_python(&programs);
    let mut computed = 0;
    for (code, theirs) in HAND_WRITTEN.iter().zip(&python) {
        computed += check_program(code, theirs, false);
    }
    // Most of what the programs assign is read, not merely tolerated.
    assert!(computed >= 75, "only {computed} bindings were computed");
}

#[test]
fn statements_outside_the_subset_drop_only_what_they_could_change() {
    let reading = read_code(HAND_WRITTEN[9]);
    let names: Vec<&str> = reading.bindings.keys().map(String::as_str).collect();
    // `total` is changed by the loop and `values` by `.append`: neither is
    // guessed. f-strings, comprehensions and `json.dumps` are not read.
    assert_eq!(names, ["kept"]);
    let skipped: Vec<&str> = reading
        .skipped
        .iter()
        .map(|s| s.statement.as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "for v in values:",
            "values.append(4)",
            "msg = f'{total}'",
            "squares = [v * v for v in range(3)]",
            "text = json.dumps({'a': 1})"
        ]
    );
    let reading = read_code(HAND_WRITTEN[10]);
    let names: Vec<&str> = reading.bindings.keys().map(String::as_str).collect();
    assert_eq!(names, ["b", "d"]);
    assert_eq!(reading.bindings["d"], json!(4));
    assert_eq!(reading.skipped.len(), 7);
}

#[test]
fn hand_written_programs_in_the_subset_are_read_whole() {
    // The first nine programs use only the subset: every global Python ends
    // with, the reader computes too.
    let programs: Vec<_> = HAND_WRITTEN[..9].iter().map(|c| statements(c)).collect();
    let python = run_python(&programs);
    for (code, theirs) in HAND_WRITTEN[..9].iter().zip(&python) {
        check_program(code, theirs, true);
        assert!(read_code(code).skipped.is_empty(), "skipped in:\n{code}");
    }
}

/// A random arithmetic expression over `names` (seeded, so reproducible).
fn random_expr(rng: &mut ChaCha8Rng, names: &[String], depth: u32) -> String {
    if depth == 0 || rng.gen_bool(0.3) {
        return match rng.gen_range(0..4) {
            0 if !names.is_empty() => names[rng.gen_range(0..names.len())].clone(),
            1 => format!("{}", rng.gen_range(-20..=20)),
            2 => format!("{:.2}", rng.gen_range(-100.0..100.0)),
            _ => format!("{}.{}", rng.gen_range(0..10), rng.gen_range(0..1000)),
        };
    }
    let a = random_expr(rng, names, depth - 1);
    let b = random_expr(rng, names, depth - 1);
    match rng.gen_range(0..14) {
        0 => format!("({a} + {b})"),
        1 => format!("({a} - {b})"),
        2 => format!("({a} * {b})"),
        3 => format!("({a} / {b})"),
        4 => format!("({a} // {b})"),
        5 => format!("({a} % {b})"),
        6 => format!("({a}) ** {}", rng.gen_range(0..4)),
        7 => format!("round({a}, {})", rng.gen_range(0..4)),
        8 => format!("abs({a})"),
        9 => format!("max({a}, {b})"),
        10 => format!("min([{a}, {b}, 1])"),
        11 => format!("({a} if {a} > {b} else {b})"),
        12 => format!("-{a}"),
        _ => format!("({a} >= {b} and {a} or {b})"),
    }
}

#[test]
fn random_programs_match_python() {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let mut sources = Vec::new();
    let mut programs = Vec::new();
    for _ in 0..400 {
        let mut names: Vec<String> = Vec::new();
        let mut program = Vec::new();
        let mut code = String::new();
        for i in 0..rng.gen_range(1..12) {
            let name = format!("v{i}");
            let statement = if rng.gen_bool(0.15) && !names.is_empty() {
                let condition = random_expr(&mut rng, &names, 1);
                format!(
                    "if {condition} > 0:\n    {name} = {}\nelse:\n    {name} = {}",
                    random_expr(&mut rng, &names, 2),
                    random_expr(&mut rng, &names, 2)
                )
            } else {
                format!("{name} = {}", random_expr(&mut rng, &names, 3))
            };
            code.push_str(&statement);
            code.push('\n');
            program.push((statement, vec![name.clone()]));
            names.push(name);
        }
        sources.push(code);
        programs.push(program);
    }
    let python = run_python(&programs);
    let mut compared = 0;
    let mut bindings = 0;
    for (code, theirs) in sources.iter().zip(&python) {
        if theirs.is_null() {
            continue; // values beyond the exactly comparable range
        }
        compared += 1;
        bindings += check_program(code, theirs, true);
    }
    assert!(compared >= 300, "only {compared} of 400 programs compared");
    assert!(bindings >= 1000, "only {bindings} bindings compared");
}

#[test]
fn a_pending_python_exec_call_is_scored_by_what_its_code_computes() {
    for answer in [
        json!({"action": "python_exec", "code": "peak = (49.99 + 53.184) / 2\nprint('label:', 'wet' if peak > 50 else 'dry')\nfor x in y:\n    pass", "reason": "r"}),
        json!({"action": "tool_call", "tool": "python_exec", "args": {"code": "peak = (49.99 + 53.184) / 2\nprint('label:', 'wet' if peak > 50 else 'dry')\nfor x in y:\n    pass"}}),
    ] {
        let parsed = parse_answer(&answer);
        assert_eq!(parsed.report.shape, AnswerShape::PendingCode);
        let json = parsed.json.expect("bindings");
        assert_eq!(json["peak"], json!(51.587));
        assert_eq!(json["label"], json!("wet"));
        assert_eq!(parsed.report.remainder, "for x in y:");
    }
    // Another tool's pending call is an ordinary object.
    let search = json!({"action": "search_package_files", "query": "2023", "code": "x = 1"});
    assert_eq!(parse_answer(&search).report.shape, AnswerShape::Object);
}

#[test]
fn hostile_code_is_bounded_on_a_small_stack() {
    let cases: Vec<String> = vec![
        "x = ".to_owned() + &"(".repeat(10_000) + "1" + &")".repeat(10_000),
        "x = ".to_owned() + &"1 + ".repeat(50_000) + "1",
        "x = ".to_owned() + &"-".repeat(50_000) + "1",
        "x = ".to_owned() + &"not ".repeat(50_000) + "1",
        "x = a".to_owned() + &".b".repeat(50_000),
        (0..200)
            .map(|i| format!("{}if 1:\n", " ".repeat(i)))
            .collect::<String>()
            + &" ".repeat(200)
            + "x = 1\n",
        "def f(n):\n    return f(n) + f(n)\nx = f(1)\n".to_owned(),
        "s = 'ab'\n".to_owned() + &"s = s + s\n".repeat(40),
        "v = [1, 2, 3, 4, 5, 6, 7, 8]\n".to_owned() + &"v = v + v\n".repeat(40),
        "x = 9 ** 9 ** 9\ny = 10.0 ** 400\nz = 2 ** 62 * 4\nw = -9223372036854775808 // -1"
            .to_owned(),
        "x = 1e999999\ny = 99999999999999999999999\nz = round(1.5, 10**9)".to_owned(),
        "d = date(2024, 2, 30)\nfrom datetime import date\ne = date(2024, 2, 30)".to_owned(),
        "x = '\\".to_owned(),
        "'''".to_owned(),
        "x = [".to_owned() + &"1, ".repeat(100_000) + "1]",
    ];
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            cases
                .iter()
                .map(|code| read_code(code).bindings.len())
                .collect::<Vec<_>>()
        })
        .expect("spawn");
    let sizes = handle
        .join()
        .expect("no case overflows a 1 MiB stack or panics");
    // `z = 2 ** 62 * 4` leaves i64 and is computed as a float, as Python's
    // exact int would round to.
    let reading = read_code("z = 2 ** 62 * 4");
    assert_eq!(reading.bindings["z"], json!(1.8446744073709552e19));
    assert_eq!(sizes.len(), 15);
}
