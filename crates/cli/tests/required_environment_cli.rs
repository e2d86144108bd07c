//! `earthverse run --require-environment cdo` (issue 46; App. A.4, C.5,
//! D.6): a scripted agent calls CDO's audited operations on the fixture
//! station series (run by CDO in the sandbox), once with a bad argument;
//! the record keeps the condition and the compliance contract's per-run
//! fields. The baseline agent, which makes no such call, is refused until
//! the turn limit. Feature `environments` (CDO and ncgen from
//! scripts/bootstrap.sh).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn run(agent: &str, out: &Path) -> Value {
    run_with(agent, out, &[])
}

fn run_with(agent: &str, out: &Path, extra: &[&str]) -> Value {
    let status = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("run")
        .arg(release())
        .args([
            "--agent",
            agent,
            "--tasks",
            "FIX-001_Q1",
            "--quiet",
            "--max-turns",
            "8",
        ])
        .args(["--require-environment", "cdo", "--system", "s", "--out"])
        .arg(out)
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success());
    serde_json::from_slice(&std::fs::read(out.join("s/FIX-001_Q1/trajectory.json")).unwrap())
        .unwrap()
}

fn cdo_call(stat: &str) -> Value {
    json!({"action": "tool_call", "tool": "cdo_temporal_aggregate", "reason": "required environment",
           "args": {"series": {"path": "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv",
                               "field": "tmax_c", "time_field": "date"}, "stat": stat}})
}

#[test]
fn the_required_environment_is_recorded_with_its_compliance() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"model_id": "scripted-cdo", "scripts": {"FIX-001_Q1": [
        cdo_call("median"),
        cdo_call("mean"),
        cdo_call("max"),
        {"action": "final_answer", "final_answer": {"peak_tmax_c": 38.1}, "confidence": 0.5,
         "evidence": [], "reasoning_summary": [], "unsupported_or_unresolved": []}
    ]}});
    let agent = dir.path().join("agent.json");
    std::fs::write(&agent, script.to_string()).unwrap();
    let t = run(
        &format!("scripted:{}", agent.display()),
        &dir.path().join("runs"),
    );
    assert_eq!(t["condition"]["required_environment"], "cdo");
    let r = &t["required_tools"];
    assert_eq!(r["label"], "cdo");
    assert_eq!(r["attempts"], 3, "{r}");
    assert_eq!(r["successful_calls"], 2, "{r}");
    assert_eq!(r["counted"], 2, "{r}");
    assert_eq!(r["compliant"], true, "{r}");
    assert_eq!(r["failure_classes"], json!({"argument": 1}), "{r}");
    assert_eq!(r["repair_rounds"], 0);
    // CDO's version, detected when the run was set up: what `cdo
    // --version` prints here.
    let printed = Command::new("cdo").arg("--version").output().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&printed.stdout),
        String::from_utf8_lossy(&printed.stderr)
    );
    let recorded = r["versions"]["cdo"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        recorded.contains("version") && printed.contains(recorded),
        "{recorded} vs {printed}"
    );
    assert_eq!(t["diagnostics"]["termination_reason"], "model_final");
    // CDO's values, as the tool returned them: the mean and the maximum of
    // the station's 14 daily maxima.
    let csv = std::fs::read_to_string(
        release().join("packages/event_packages/standard_event_packages/packages/FIX-001/data/physical_hazard/physical_hazard_001_station_daily_temperature.csv"),
    )
    .unwrap();
    let tmax: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    let calls = t["tool_calls"].as_array().unwrap();
    let text = |i: usize| calls[i]["output"].to_string();
    let mean = tmax.iter().sum::<f64>() / tmax.len() as f64;
    let max = tmax.iter().cloned().fold(f64::MIN, f64::max);
    assert!(
        text(1).contains("\"ok\"") || text(1).contains("ok"),
        "{}",
        text(1)
    );
    let find = |i: usize| -> f64 {
        let s = text(i);
        let at = s
            .find("\\\"value\\\":")
            .or_else(|| s.find("\"value\":"))
            .unwrap_or_else(|| panic!("{s}"));
        let rest = &s[at..];
        let start = rest.find(|c: char| c.is_ascii_digit() || c == '-').unwrap();
        let num: String = rest[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == 'e')
            .collect();
        num.parse().unwrap()
    };
    assert!(
        (find(1) - mean).abs() < 1e-4,
        "cdo timmean {} vs {mean}",
        find(1)
    );
    assert!(
        (find(2) - max).abs() < 1e-9,
        "cdo timmax {} vs {max}",
        find(2)
    );

    // Under a routed catalogue (Table 7's rows use the Top-20 router) the
    // required operations are shown whatever the router picks.
    let t = run_with(
        &format!("scripted:{}", agent.display()),
        &dir.path().join("routed"),
        &["--catalogue", "topk:10"],
    );
    assert_eq!(t["condition"]["catalogue"], "topk:10");
    assert_eq!(
        t["required_tools"]["successful_calls"], 2,
        "{}",
        t["required_tools"]
    );
    assert_eq!(t["required_tools"]["compliant"], true);

    // The baseline agent never calls them: refused until the turn limit.
    let t = run("baseline", &dir.path().join("baseline"));
    let r = &t["required_tools"];
    assert_eq!(r["compliant"], false, "{r}");
    assert!(r["repair_rounds"].as_u64().unwrap() >= 1, "{r}");
    assert!(t["diagnostics"]["termination_reason"]
        .as_str()
        .unwrap()
        .starts_with("round_limit"));
}

/// Table 6b's atmospheric Fortran suite (`--catalogue atmospheric-fortran`):
/// the Fortran operations are offered beside the research tools and run by
/// gfortran in the sandbox, but not required: no compliance contract, and
/// an agent that never calls them answers at once.
#[test]
fn the_atmospheric_fortran_suite_offers_fortran_without_requiring_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = |agent: &str, out: &Path| -> Value {
        let status = Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .arg("run")
            .arg(release())
            .args(["--agent", agent, "--tasks", "FIX-001_Q1", "--quiet"])
            .args(["--catalogue", "atmospheric-fortran", "--max-turns", "48"])
            .args(["--system", "s", "--out"])
            .arg(out)
            .status()
            .unwrap();
        assert!(status.success());
        serde_json::from_slice(&std::fs::read(out.join("s/FIX-001_Q1/trajectory.json")).unwrap())
            .unwrap()
    };
    let script = json!({"model_id": "scripted-fortran", "scripts": {"FIX-001_Q1": [
        {"action": "tool_call", "tool": "fortran_rain", "reason": "suite",
         "args": {"precipitation": {"path": "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv",
                                    "field": "tmin_c", "time_field": "date"}, "window": 3}},
        {"action": "final_answer", "final_answer": {"peak_tmax_c": 38.1}, "confidence": 0.5,
         "evidence": [], "reasoning_summary": [], "unsupported_or_unresolved": []}
    ]}});
    let agent = dir.path().join("agent.json");
    std::fs::write(&agent, script.to_string()).unwrap();
    let t = run(
        &format!("scripted:{}", agent.display()),
        &dir.path().join("runs"),
    );
    assert_eq!(t["condition"]["catalogue"], "atmospheric-fortran");
    assert!(t.get("required_tools").is_none_or(Value::is_null), "{t}");
    assert_eq!(t["diagnostics"]["termination_reason"], "model_final");
    let call = &t["tool_calls"][0];
    assert_eq!(call["tool"], "fortran_rain");
    assert_eq!(call["ok"], true, "{call}");
    // gfortran's total is the column's sum, computed here from the CSV.
    let csv = std::fs::read_to_string(
        release().join("packages/event_packages/standard_event_packages/packages/FIX-001/data/physical_hazard/physical_hazard_001_station_daily_temperature.csv"),
    )
    .unwrap();
    let total: f64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse::<f64>().unwrap())
        .sum();
    let s = call["output"].to_string().replace("\\\"", "\"");
    let at = s.find("\"total_mm\":").unwrap_or_else(|| panic!("{s}"));
    let num: String = s[at + 11..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == 'e')
        .collect();
    assert!((num.parse::<f64>().unwrap() - total).abs() < 1e-6, "{s}");
    // The baseline agent makes no call of them and is not refused.
    let t = run("baseline", &dir.path().join("baseline"));
    assert!(t.get("required_tools").is_none_or(Value::is_null), "{t}");
    assert_eq!(t["diagnostics"]["termination_reason"], "model_final");
}
