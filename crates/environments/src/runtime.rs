//! The command-line runtimes of Table 7 (b): how each operation's inputs
//! are written to the call's scratch directory (CSV, plain values, or CDL
//! turned into NetCDF by `ncgen` inside the sandbox) and which programs run
//! in the sandbox, in order; and how the last one's output is read.

use crate::call::{EnvironmentSettings, LoadedInput, WorkDir};
use crate::catalog::{Environment, OperationSpec};
use crate::detect::find_on_path;
use crate::outcome::{Failure, FailureClass};
use earthverse_sandbox::SandboxProgram;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The R adapter.
pub const R_ADAPTER: &str = include_str!("../adapters/r_climate.R");
/// The NCL adapter.
pub const NCL_ADAPTER: &str = include_str!("../adapters/ncl_summary.ncl");
/// The Fortran adapter's source (compiled once outside the sandbox).
pub const FORTRAN_ADAPTER: &str = include_str!("../adapters/fortran_ops.f90");
/// The Julia adapter (untested here).
pub const JULIA_ADAPTER: &str = include_str!("../adapters/julia_ops.jl");

/// Missing values in files handed to runtimes.
const MISSING: f64 = -9.0e33;

/// One sandboxed program and what it is, for error messages.
#[derive(Debug, Clone)]
pub struct Step {
    /// The program.
    pub program: SandboxProgram,
    /// What it does.
    pub what: String,
}

impl Step {
    /// A step.
    pub fn new(program: SandboxProgram, what: &str) -> Self {
        Self {
            program,
            what: what.to_string(),
        }
    }
}

/// The steps of one call and the reader of the last step's stdout.
pub struct Plan {
    /// Programs run in order; each must exit 0.
    pub steps: Vec<Step>,
    /// Reads the result.
    pub parse: fn(&str, &WorkDir) -> Result<Value, Failure>,
}

fn adapter(m: impl Into<String>) -> Failure {
    Failure::new(FailureClass::Adapter, m)
}

fn bin(name: &str, settings: &EnvironmentSettings) -> Result<PathBuf, Failure> {
    find_on_path(name, settings.path.as_ref())
        .ok_or_else(|| adapter(format!("`{name}` is not on PATH")))
}

fn program(exe: PathBuf, args: Vec<String>) -> SandboxProgram {
    SandboxProgram {
        executable: exe,
        args,
        ..SandboxProgram::default()
    }
}

fn same_length(inputs: &[&LoadedInput]) -> Result<usize, Failure> {
    let n = inputs.first().map(|i| i.values.len()).unwrap_or(0);
    if inputs.iter().any(|i| i.values.len() != n) {
        return Err(Failure::new(
            FailureClass::InputIncompatibility,
            format!(
                "the inputs differ in length: {}",
                inputs
                    .iter()
                    .map(|i| format!("{} has {}", i.name, i.values.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(n)
}

fn fmt(v: f64) -> String {
    if v.is_finite() {
        format!("{v:e}")
    } else {
        format!("{MISSING:e}")
    }
}

/// Hours since 1970-01-01 of an ISO label (`2021-06-25`, `2021-06-25T13:00`).
fn hours(label: &str) -> Option<f64> {
    let date = label.get(..10)?;
    let mut it = date.split('-');
    let (y, m, d): (i64, i64, i64) = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let (hh, mm) = match label.get(11..16) {
        Some(t) => (
            t.get(..2)?.parse::<f64>().ok()?,
            t.get(3..5)?.parse::<f64>().ok()?,
        ),
        None => (0.0, 0.0),
    };
    Some(days as f64 * 24.0 + hh + mm / 60.0)
}

/// CDL of the inputs on a time axis: each input a variable `name(time)`,
/// or, with `field`, one variable `x(time, lat, lon)` of the inputs as
/// points along `lon` (equal weights at lat 0).
fn cdl(inputs: &[&LoadedInput], field: bool) -> Result<String, Failure> {
    let n = same_length(inputs)?;
    let times: Vec<f64> = match inputs.first().and_then(|i| i.times.as_ref()) {
        Some(t) => t
            .iter()
            .map(|l| hours(l))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| {
                Failure::new(
                    FailureClass::InputIncompatibility,
                    "time labels are not ISO dates (YYYY-MM-DD[THH:MM])",
                )
            })?,
        None => (0..n).map(|i| i as f64).collect(),
    };
    let join = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
    let mut s = String::from("netcdf input {\ndimensions:\n");
    let _ = writeln!(s, "  time = {n} ;");
    if field {
        let _ = writeln!(s, "  lat = 1 ;\n  lon = {} ;", inputs.len());
    }
    s.push_str("variables:\n  double time(time) ;\n    time:units = \"hours since 1970-01-01 00:00:00\" ;\n    time:calendar = \"standard\" ;\n    time:standard_name = \"time\" ;\n");
    if field {
        s.push_str("  double lat(lat) ;\n    lat:units = \"degrees_north\" ;\n  double lon(lon) ;\n    lon:units = \"degrees_east\" ;\n");
        let _ = writeln!(
            s,
            "  double x(time, lat, lon) ;\n    x:_FillValue = {} ;\n    x:units = \"{}\" ;",
            fmt(MISSING),
            inputs[0].units
        );
    } else {
        for i in inputs {
            let _ = writeln!(
                s,
                "  double {}(time) ;\n    {}:_FillValue = {} ;\n    {}:units = \"{}\" ;\n    {}:source = \"{}: {}\" ;",
                i.name, i.name, fmt(MISSING), i.name, i.units.replace('"', "'"), i.name,
                i.file.replace('"', "'"), i.field.replace('"', "'")
            );
        }
    }
    s.push_str("data:\n");
    let _ = writeln!(s, "  time = {} ;", join(&mut times.iter().map(|t| fmt(*t))));
    if field {
        let _ = writeln!(s, "  lat = 0 ;");
        let _ = writeln!(
            s,
            "  lon = {} ;",
            join(&mut (0..inputs.len()).map(|i| i.to_string()))
        );
        let values = (0..n).flat_map(|t| inputs.iter().map(move |i| fmt(i.values[t])));
        let _ = writeln!(s, "  x = {} ;", values.collect::<Vec<_>>().join(", "));
    } else {
        for i in inputs {
            let _ = writeln!(
                s,
                "  {} = {} ;",
                i.name,
                join(&mut i.values.iter().map(|v| fmt(*v)))
            );
        }
    }
    s.push_str("}\n");
    Ok(s)
}

fn ncgen_step(
    settings: &EnvironmentSettings,
    work: &WorkDir,
    inputs: &[&LoadedInput],
    field: bool,
) -> Result<(Step, String), Failure> {
    let cdl_path = work.write("input.cdl", cdl(inputs, field)?.as_bytes())?;
    let nc = format!("{}/input.nc", work.sandboxed);
    let step = Step::new(
        program(
            bin("ncgen", settings)?,
            vec!["-k".into(), "nc4".into(), "-o".into(), nc.clone(), cdl_path],
        ),
        "ncgen (writing the series as NetCDF)",
    );
    Ok((step, nc))
}

/// CSV of the inputs, one column each (`NA` = missing), and a `time`
/// column of the first input's labels when it has them.
fn csv(inputs: &[&LoadedInput]) -> Result<String, Failure> {
    let n = same_length(inputs)?;
    let times = inputs.first().and_then(|i| i.times.as_ref());
    let mut s = inputs.iter().map(|i| i.name).collect::<Vec<_>>().join(",");
    if times.is_some() {
        s.push_str(",time");
    }
    s.push('\n');
    for t in 0..n {
        let row: Vec<String> = inputs
            .iter()
            .map(|i| {
                let v = i.values[t];
                if v.is_finite() {
                    format!("{v:e}")
                } else {
                    "NA".into()
                }
            })
            .collect();
        s.push_str(&row.join(","));
        if let Some(times) = times {
            s.push(',');
            s.push_str(&times[t].replace([',', '"'], " "));
        }
        s.push('\n');
    }
    Ok(s)
}

fn param_str(params: &Map<String, Value>, name: &str) -> Option<String> {
    params.get(name).map(|v| match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    })
}

fn stat(params: &Map<String, Value>) -> Result<String, Failure> {
    let s = param_str(params, "stat").unwrap_or_default();
    if ["mean", "max", "min", "sum", "std"].contains(&s.as_str()) {
        Ok(s)
    } else {
        Err(Failure::new(
            FailureClass::Argument,
            format!("stat `{s}` is not one of mean, max, min, sum, std"),
        ))
    }
}

/// Plans one runtime call.
pub fn plan(
    env: &Environment,
    op: &OperationSpec,
    inputs: &[LoadedInput],
    params: &Map<String, Value>,
    work: &WorkDir,
    settings: &EnvironmentSettings,
) -> Result<Plan, Failure> {
    let all: Vec<&LoadedInput> = inputs.iter().collect();
    match op.name {
        "cdo_temporal_aggregate" => {
            let stat = stat(params)?;
            let period = param_str(params, "period").unwrap_or_else(|| "all".into());
            let prefix = match period.as_str() {
                "all" => "tim",
                "day" => "day",
                "month" => "mon",
                other => {
                    return Err(Failure::new(
                        FailureClass::Argument,
                        format!("period `{other}` is not one of all, day, month"),
                    ))
                }
            };
            if prefix != "tim" && all[0].times.is_none() {
                return Err(Failure::new(
                    FailureClass::InputIncompatibility,
                    "daily or monthly aggregates need a time axis (time_field)",
                ));
            }
            let (gen, nc) = ncgen_step(settings, work, &all[..1], true)?;
            let cdo = Step::new(
                program(
                    bin("cdo", settings)?,
                    vec![
                        "-s".into(),
                        "outputtab,date,time,value".into(),
                        format!("-{prefix}{stat}"),
                        nc,
                    ],
                ),
                "cdo",
            );
            Ok(Plan {
                steps: vec![gen, cdo],
                parse: parse_cdo_table,
            })
        }
        "cdo_field_aggregate" => {
            let stat = stat(params)?;
            let (gen, nc) = ncgen_step(settings, work, &all, true)?;
            let cdo = Step::new(
                program(
                    bin("cdo", settings)?,
                    vec![
                        "-s".into(),
                        "outputtab,date,time,value".into(),
                        format!("-fld{stat}"),
                        nc,
                    ],
                ),
                "cdo",
            );
            Ok(Plan {
                steps: vec![gen, cdo],
                parse: parse_cdo_table,
            })
        }
        "nco_inspect" => {
            let (gen, nc) = ncgen_step(settings, work, &all, false)?;
            let ncks = Step::new(
                program(
                    bin("ncks", settings)?,
                    vec!["-m".into(), "--json".into(), nc],
                ),
                "ncks",
            );
            Ok(Plan {
                steps: vec![gen, ncks],
                parse: parse_json_stdout,
            })
        }
        "nco_weighted_mean" => {
            let (gen, nc) = ncgen_step(settings, work, &all, false)?;
            let out = format!("{}/weighted.nc", work.sandboxed);
            let ncwa = Step::new(
                program(
                    bin("ncwa", settings)?,
                    vec![
                        "-O".into(),
                        // NCO moves its temporary file with /bin/mv: no
                        // process may start in the sandbox, so write in place.
                        "--no_tmp_fl".into(),
                        "-a".into(),
                        "time".into(),
                        "-w".into(),
                        "weight".into(),
                        "-v".into(),
                        "series".into(),
                        nc,
                        out.clone(),
                    ],
                ),
                "ncwa",
            );
            let ncks = Step::new(
                program(
                    bin("ncks", settings)?,
                    vec!["--json".into(), "-v".into(), "series".into(), out],
                ),
                "ncks",
            );
            Ok(Plan {
                steps: vec![gen, ncwa, ncks],
                parse: parse_nco_values,
            })
        }
        "nco_derive_field" => {
            let expr = param_str(params, "expression").unwrap_or_default();
            let allowed = expr
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " _+-*/().,^".contains(c));
            if expr.trim().is_empty() || !allowed {
                return Err(Failure::new(
                    FailureClass::Argument,
                    "expression may hold only names, numbers, spaces and + - * / ^ ( ) . ,",
                ));
            }
            let (gen, nc) = ncgen_step(settings, work, &all, false)?;
            let out = format!("{}/derived.nc", work.sandboxed);
            let script =
                format!("out={expr};out_mean=out.avg();out_min=out.min();out_max=out.max();");
            let ncap2 = Step::new(
                program(
                    bin("ncap2", settings)?,
                    vec![
                        "-O".into(),
                        "--no_tmp_fl".into(),
                        "-v".into(),
                        "-s".into(),
                        script,
                        nc,
                        out.clone(),
                    ],
                ),
                "ncap2",
            );
            let ncks = Step::new(
                program(
                    bin("ncks", settings)?,
                    vec![
                        "--json".into(),
                        "-v".into(),
                        "out_mean,out_min,out_max".into(),
                        out,
                    ],
                ),
                "ncks",
            );
            Ok(Plan {
                steps: vec![gen, ncap2, ncks],
                parse: parse_nco_values,
            })
        }
        "r_climate_summary" | "r_climate_trend" | "r_climate_gev" | "r_climate_spei" => {
            let script = work.write("r_climate.R", R_ADAPTER.as_bytes())?;
            let data = work.write("input.csv", csv(&all)?.as_bytes())?;
            let mut p = String::from("name,value\n");
            for (k, _) in params {
                let _ = writeln!(p, "{k},{}", param_str(params, k).unwrap_or_default());
            }
            let pfile = work.write("params.csv", p.as_bytes())?;
            let prog = r_program(vec![
                format!("--file={script}"),
                "--args".into(),
                op.name.into(),
                data,
                pfile,
            ]);
            Ok(Plan {
                steps: vec![Step::new(prog, "R")],
                parse: parse_status_json,
            })
        }
        "ncl_summary" => {
            let script = work.write("ncl_summary.ncl", NCL_ADAPTER.as_bytes())?;
            let values: String = all[0].values.iter().map(|v| fmt(*v) + "\n").collect();
            let data = work.write("values.txt", values.as_bytes())?;
            let mut prog = program(
                bin("ncl", settings)?,
                vec![
                    "-n".into(),
                    "-Q".into(),
                    format!("values=\"{data}\""),
                    script,
                ],
            );
            prog.env = vec![("NCARG_ROOT".into(), "/usr".into())];
            Ok(Plan {
                steps: vec![Step::new(prog, "ncl")],
                parse: parse_status_json,
            })
        }
        "fortran_rain" | "fortran_kinematics" | "fortran_moisture_transport" => {
            let exe = compiled_fortran(settings)?;
            let n = same_length(&all)?;
            let mut text = format!("{n} {}\n", all.len());
            for t in 0..n {
                let row: Vec<String> = all.iter().map(|i| fmt(i.values[t])).collect();
                text.push_str(&row.join(" "));
                text.push('\n');
            }
            let data = work.write("input.txt", text.as_bytes())?;
            let p1 = param_str(params, "threshold_mm").unwrap_or_else(|| "0.1".into());
            let p2 = param_str(params, "window").unwrap_or_else(|| "24".into());
            Ok(Plan {
                steps: vec![Step::new(
                    program(exe, vec![op.name.into(), data, p1, p2]),
                    "the Fortran adapter",
                )],
                parse: parse_status_json,
            })
        }
        "julia_summary" | "julia_integration" | "julia_sensitivity" => {
            let julia = bin("julia", settings)?;
            let real = julia.canonicalize().unwrap_or(julia.clone());
            let script = work.write("julia_ops.jl", JULIA_ADAPTER.as_bytes())?;
            let data = work.write("input.csv", csv(&all)?.as_bytes())?;
            let dt = param_str(params, "dt").unwrap_or_else(|| "1".into());
            let mut prog = program(
                julia,
                vec!["--startup-file=no".into(), script, op.name.into(), data, dt],
            );
            if let Some(root) = real.parent().and_then(Path::parent) {
                prog.read_only.push(root.to_path_buf());
            }
            prog.execute.push(real);
            Ok(Plan {
                steps: vec![Step::new(prog, "julia")],
                parse: parse_status_json,
            })
        }
        other => Err(adapter(format!(
            "{} has no runtime adapter for `{other}`",
            env.name
        ))),
    }
}

/// R's own binary (`/usr/lib/R/bin/exec/R`: the `R` and `Rscript` front
/// ends are shell scripts and wrappers that start processes, which the
/// sandbox forbids) with the environment its front end would set, `/etc/R`
/// readable, no default packages (the adapter attaches stats and utils after
/// making `Sys.which` answer "not found"), `--no-echo --vanilla` and `args`.
pub fn r_program(args: Vec<String>) -> SandboxProgram {
    let mut all = vec!["--no-echo".to_string(), "--vanilla".to_string()];
    all.extend(args);
    let mut prog = program(PathBuf::from("/usr/lib/R/bin/exec/R"), all);
    prog.read_only = vec![PathBuf::from("/etc/R")];
    prog.env = [
        ("R_HOME", "/usr/lib/R"),
        ("R_SHARE_DIR", "/usr/share/R/share"),
        ("R_INCLUDE_DIR", "/usr/share/R/include"),
        ("R_DOC_DIR", "/usr/share/R/doc"),
        (
            "R_LIBS_SITE",
            "/usr/local/lib/R/site-library:/usr/lib/R/site-library:/usr/lib/R/library",
        ),
        ("LD_LIBRARY_PATH", "/usr/lib/R/lib"),
        ("R_DEFAULT_PACKAGES", "NULL"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    prog
}

/// Compiles the Fortran adapter once per source version (outside the
/// sandbox: a fixed, trusted source; the model supplies only data) into
/// the user's cache, and returns the binary.
fn compiled_fortran(settings: &EnvironmentSettings) -> Result<PathBuf, Failure> {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(FORTRAN_ADAPTER.as_bytes()));
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let dir = base
        .join("earthverse/environments")
        .join(format!("fortran-{}", &digest[..16]));
    let exe = dir.join("fortran_ops");
    if exe.is_file() {
        return Ok(exe);
    }
    let gfortran = bin("gfortran", settings)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| adapter(format!("cannot create {}: {e}", dir.display())))?;
    let src = dir.join("fortran_ops.f90");
    std::fs::write(&src, FORTRAN_ADAPTER)
        .map_err(|e| adapter(format!("cannot write {}: {e}", src.display())))?;
    let tmp = dir.join(format!("fortran_ops.{}.tmp", std::process::id()));
    let out = std::process::Command::new(gfortran)
        .arg("-O2")
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .current_dir(&dir)
        .output()
        .map_err(|e| adapter(format!("cannot run gfortran: {e}")))?;
    if !out.status.success() {
        return Err(adapter(format!(
            "gfortran failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    std::fs::rename(&tmp, &exe)
        .map_err(|e| adapter(format!("cannot install {}: {e}", exe.display())))?;
    Ok(exe)
}

fn parse_status_json(stdout: &str, _work: &WorkDir) -> Result<Value, Failure> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("{\"status\""))
        .ok_or_else(|| {
            adapter(format!(
                "no outcome printed: {}",
                stdout.chars().take(400).collect::<String>()
            ))
        })?;
    let v: Value = serde_json::from_str(line)
        .map_err(|e| adapter(format!("unreadable outcome `{line}`: {e}")))?;
    if v["status"] == "ok" {
        return Ok(v["result"].clone());
    }
    let class = v["failure_class"]
        .as_str()
        .and_then(FailureClass::parse)
        .unwrap_or(FailureClass::Adapter);
    Err(Failure::new(
        class,
        v["message"].as_str().unwrap_or("failed"),
    ))
}

fn parse_json_stdout(stdout: &str, _work: &WorkDir) -> Result<Value, Failure> {
    serde_json::from_str(stdout).map_err(|e| adapter(format!("unreadable ncks output: {e}")))
}

/// `ncks --json` of scalar variables: `{name: value}`.
fn parse_nco_values(stdout: &str, _work: &WorkDir) -> Result<Value, Failure> {
    let v: Value = serde_json::from_str(stdout)
        .map_err(|e| adapter(format!("unreadable ncks output: {e}")))?;
    let vars = v
        .get("variables")
        .and_then(Value::as_object)
        .ok_or_else(|| adapter("ncks printed no variables"))?;
    let mut out = Map::new();
    for (name, var) in vars {
        out.insert(
            name.clone(),
            var.get("data").cloned().unwrap_or(Value::Null),
        );
    }
    Ok(Value::Object(out))
}

/// CDO `outputtab,date,time,value`: one row per output step.
fn parse_cdo_table(stdout: &str, _work: &WorkDir) -> Result<Value, Failure> {
    let mut rows = Vec::new();
    for line in stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if let [date, time, value] = cols[..] {
            let value: f64 = value
                .parse()
                .map_err(|_| adapter(format!("unreadable cdo row `{line}`")))?;
            let value = if value.abs() > 1e30 {
                Value::Null
            } else {
                json!(value)
            };
            rows.push(json!({"date": date, "time": time, "value": value}));
        }
    }
    if rows.is_empty() {
        return Err(adapter(format!("cdo printed no value: {stdout}")));
    }
    let finite: Vec<f64> = rows.iter().filter_map(|r| r["value"].as_f64()).collect();
    let mean = if finite.is_empty() {
        Value::Null
    } else {
        json!(finite.iter().sum::<f64>() / finite.len() as f64)
    };
    Ok(json!({"steps": rows, "mean_over_steps": mean}))
}
