//! Domain operations on large gridded files beside the reference tools, in
//! the same run, as whole processes with peak memory and CPU time: raster
//! band statistics of a 10,000 × 10,000 float32 GeoTIFF against `gdalinfo
//! -stats`; on a 365 × 720 × 1,440 float32 NetCDF-4 file, the time mean and
//! maximum against `cdo timmean` / `cdo timmax`, the field mean against
//! `cdo fldmean` and the field-mean anomaly against `cdo sub -fldmean
//! -timmean -fldmean`. The inputs are generated once under
//! `target/bench-data/` (≈ 0.4 GB and 1.5 GB).
//!
//! Run: `cargo bench -p earthverse-benches --features formats --bench domain_ops`
//! (needs Debian's `gdal-bin`, `cdo` and `time`). Set `EV_BENCH_SMALL=1` for
//! a quick run on 10× smaller inputs, `EV_BENCH_ONLY=timmean,fldmean` to run
//! some cases (raster, timmean, timmax, fldmean, anomaly).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_domain_ops::operation;
use earthverse_tool_registry::ToolContext;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data_dir() -> PathBuf {
    let dir = earthverse_benches::project_root().join("target/bench-data");
    std::fs::create_dir_all(dir.join("PKG/data")).expect("bench data dir");
    dir
}

fn small() -> bool {
    std::env::var_os("EV_BENCH_SMALL").is_some()
}

/// The inputs' sizes and package-relative paths. The names carry the
/// sizes, so a quick run never reuses a full run's files or the reverse
/// (both stay under `target/bench-data/`).
struct Inputs {
    raster_side: usize,
    grid: [usize; 3],
    raster: String,
    netcdf: String,
}

fn inputs() -> Inputs {
    let (raster_side, grid) = if small() {
        (1000, [36, 720, 144])
    } else {
        (10_000, [365, 720, 1440])
    };
    let [nt, ny, nx] = grid;
    Inputs {
        raster_side,
        grid,
        raster: format!("data/raster_{raster_side}x{raster_side}.tif"),
        netcdf: format!("data/grid_{nt}x{ny}x{nx}.nc"),
    }
}

fn make_geotiff(path: &Path, n: usize) {
    if path.exists() {
        return;
    }
    eprintln!("generating {n}×{n} float32 GeoTIFF …");
    let driver = gdal::DriverManager::get_driver_by_name("GTiff").expect("GTiff driver");
    let tmp = path.with_extension("tmp.tif");
    let mut ds = driver
        .create_with_band_type::<f32, _>(&tmp, n, n, 1)
        .expect("create");
    ds.set_geo_transform(&[0.0, 0.001, 0.0, 10.0, 0.0, -0.001])
        .expect("transform");
    let mut band = ds.rasterband(1).expect("band");
    let rows = 256.min(n);
    let mut y = 0;
    while y < n {
        let h = rows.min(n - y);
        let data: Vec<f32> = (0..n * h)
            .map(|i| (((y * n + i) % 9973) as f32) * 0.01)
            .collect();
        let mut buf = gdal::raster::Buffer::new((n, h), data);
        band.write((0, y as isize), (n, h), &mut buf)
            .expect("write");
        y += h;
    }
    drop(ds);
    std::fs::rename(tmp, path).expect("rename");
}

fn make_netcdf(path: &Path, nt: usize, ny: usize, nx: usize) {
    if path.exists() {
        return;
    }
    eprintln!("generating {nt}×{ny}×{nx} float32 NetCDF …");
    let tmp = path.with_extension("tmp.nc");
    let mut f = netcdf::create(&tmp).expect("create");
    f.add_dimension("time", nt).expect("dim");
    f.add_dimension("lat", ny).expect("dim");
    f.add_dimension("lon", nx).expect("dim");
    let lats: Vec<f64> = (0..ny)
        .map(|j| -89.875 + 180.0 * j as f64 / ny as f64)
        .collect();
    f.add_variable::<f64>("lat", &["lat"])
        .expect("lat")
        .put_values(&lats, ..)
        .expect("lat values");
    let lons: Vec<f64> = (0..nx).map(|i| 360.0 * i as f64 / nx as f64).collect();
    f.add_variable::<f64>("lon", &["lon"])
        .expect("lon")
        .put_values(&lons, ..)
        .expect("lon values");
    let mut v = f
        .add_variable::<f32>("t2m", &["time", "lat", "lon"])
        .expect("var");
    for t in 0..nt {
        let slab: Vec<f32> = (0..ny * nx)
            .map(|i| 250.0 + ((i + t * 7) % 600) as f32 * 0.1)
            .collect();
        v.put_values(&slab, (t, .., ..)).expect("slab");
    }
    drop(v);
    drop(f);
    std::fs::rename(tmp, path).expect("rename");
}

/// Runs a command under `/usr/bin/time`, returning (wall seconds, measured
/// here to the microsecond, peak RSS MiB, CPU seconds user + system).
fn timed(cmd: &mut Command) -> (f64, f64, f64) {
    let start = std::time::Instant::now();
    let mut full = Command::new("/usr/bin/time");
    full.arg("-f")
        .arg("EVTIME %e %M %U %S")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    let out = full.output().expect("run under /usr/bin/time");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .rev()
        .find(|l| l.starts_with("EVTIME"))
        .expect("time output");
    let parts: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    (seconds, parts[1] / 1024.0, parts[2] + parts[3])
}

fn child(op: &str, args: serde_json::Value) {
    let root = data_dir().join("PKG");
    let ctx = ToolContext::new(&root, std::env::temp_dir());
    let (out, _) = operation(op).expect("op").run(&ctx, &args).expect("run");
    println!("{out}");
}

/// One comparison: our operation (run as `--child NAME` in a new process)
/// beside the reference tool's command on the same input.
struct Case {
    /// Name of the case, also the `--child` argument.
    name: &'static str,
    label: &'static str,
    reference_label: &'static str,
    reference: Command,
}

/// Our side of a case: the operation and its arguments.
fn case_call(name: &str) -> (&'static str, serde_json::Value) {
    let i = inputs();
    let nc = i.netcdf.as_str();
    match name {
        "raster" => ("raster_band_stats", json!({"path": i.raster})),
        "timmean" => (
            "netcdf_time_stat",
            json!({"path": nc, "variable": "t2m", "stat": "mean"}),
        ),
        "timmax" => (
            "netcdf_time_stat",
            json!({"path": nc, "variable": "t2m", "stat": "max"}),
        ),
        "fldmean" => ("netcdf_field_mean", json!({"path": nc, "variable": "t2m"})),
        "anomaly" => (
            "netcdf_anomaly",
            json!({"path": nc, "variable": "t2m", "climatology_path": nc}),
        ),
        other => panic!("unknown case {other}"),
    }
}

fn cases(dir: &Path, tif: &Path, nc: &Path) -> Vec<Case> {
    let cdo = |args: &[&str], out: &str| {
        let mut c = Command::new("cdo");
        c.args(["-s", "-O"]).args(args).arg(dir.join(out));
        c
    };
    let nc_s = nc.to_str().expect("utf-8 path");
    let mut gdal = Command::new("gdalinfo");
    gdal.arg("-stats").arg("-nomd").arg(tif);
    vec![
        Case {
            name: "raster",
            label: "earthverse raster_band_stats",
            reference_label: "gdalinfo -stats",
            reference: gdal,
        },
        Case {
            name: "timmean",
            label: "earthverse netcdf_time_stat (mean)",
            reference_label: "cdo timmean",
            reference: cdo(&["timmean", nc_s], "timmean.nc"),
        },
        Case {
            name: "timmax",
            label: "earthverse netcdf_time_stat (max)",
            reference_label: "cdo timmax",
            reference: cdo(&["timmax", nc_s], "timmax.nc"),
        },
        Case {
            name: "fldmean",
            label: "earthverse netcdf_field_mean",
            reference_label: "cdo fldmean",
            reference: cdo(&["fldmean", nc_s], "fldmean.nc"),
        },
        Case {
            name: "anomaly",
            label: "earthverse netcdf_anomaly (clim = same)",
            reference_label: "cdo sub -fldmean -timmean -fldmean",
            reference: cdo(
                &["sub", "-fldmean", nc_s, "-timmean", "-fldmean", nc_s],
                "anomaly.nc",
            ),
        },
    ]
}

/// Rounds of each measurement; ours and the reference alternate within a
/// round, so both see the same load on a shared machine. Each column is the
/// best of the rounds (wall and CPU time separately; memory the largest).
const ROUNDS: usize = 5;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--child") {
        let (op, args) = case_call(&argv[2]);
        child(op, args);
        return;
    }
    if argv.iter().any(|a| a == "--list" || a == "--test") {
        return;
    }
    // `EV_BENCH_ONLY=timmean,fldmean` runs only the named cases.
    let only: Option<Vec<String>> = std::env::var("EV_BENCH_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let dir = data_dir();
    let inputs = inputs();
    let tif = dir.join("PKG").join(&inputs.raster);
    let nc = dir.join("PKG").join(&inputs.netcdf);
    let mut cases = cases(&dir, &tif, &nc);
    cases.retain(|c| only.as_ref().is_none_or(|o| o.iter().any(|n| n == c.name)));
    if cases.iter().any(|c| c.name == "raster") {
        make_geotiff(&tif, inputs.raster_side);
    }
    let [nt, ny, nx] = inputs.grid;
    make_netcdf(&nc, nt, ny, nx);
    let me = std::env::current_exe().expect("exe");
    println!(
        "inputs: {n}×{n} float32 GeoTIFF; {nt}×{ny}×{nx} float32 NetCDF-4 (contiguous)",
        n = inputs.raster_side
    );
    println!(
        "{:<40} {:>7} {:>6} {:>7} {:<35} {:>7} {:>6} {:>7} {:>6} {:>6}",
        "ours (whole process, best of 5)",
        "wall s",
        "cpu s",
        "MiB",
        "reference",
        "wall s",
        "cpu s",
        "MiB",
        "wall×",
        "cpu×"
    );
    for mut case in cases {
        let mut ours_cmd = Command::new(&me);
        ours_cmd.args(["--child", case.name]);
        let best =
            |a: (f64, f64, f64), b: (f64, f64, f64)| (a.0.min(b.0), a.1.max(b.1), a.2.min(b.2));
        let (mut ours, mut reference) = (
            (f64::INFINITY, 0.0, f64::INFINITY),
            (f64::INFINITY, 0.0, f64::INFINITY),
        );
        for _ in 0..ROUNDS {
            // gdalinfo -stats caches statistics in an .aux.xml sidecar: remove it before each run
            let _ = std::fs::remove_file(tif.with_extension("tif.aux.xml"));
            ours = best(ours, timed(&mut ours_cmd));
            reference = best(reference, timed(&mut case.reference));
        }
        println!(
            "{:<40} {:>7.3} {:>6.2} {:>7.1} {:<35} {:>7.3} {:>6.2} {:>7.1} {:>5.2}× {:>5.2}×",
            case.label,
            ours.0,
            ours.2,
            ours.1,
            case.reference_label,
            reference.0,
            reference.2,
            reference.1,
            ours.0 / reference.0,
            ours.2 / reference.2
        );
    }
}
