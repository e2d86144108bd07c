//! Infrastructure (paper §3.4): outages and restoration, resilience loss,
//! network connectivity and detours, facility exposure, depth–damage and
//! fragility, river stage, rating curves, SCS-CN runoff, the rational
//! method and reservoir storage.

use crate::op::need;
use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::{self, norm_cdf, num};
use crate::vector::interp;
use crate::Result;
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

const F: ToolFamily = ToolFamily::Infrastructure;

/// A weighted undirected graph from `[[a, b, w?], ...]` edges.
type Graph = BTreeMap<String, Vec<(String, f64)>>;

fn node_name(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

fn edges(c: &OpCall<'_>, name: &str) -> Result<Vec<(String, String, f64)>> {
    let Some(Value::Array(items)) = c.args().get(name) else {
        return Err(c.invalid(name, "expected an array of [from, to, weight?] edges"));
    };
    items
        .iter()
        .map(|e| match e.as_array() {
            Some(a) if a.len() >= 2 => Ok((
                node_name(&a[0]),
                node_name(&a[1]),
                a.get(2).and_then(crate::op::as_f64).unwrap_or(1.0),
            )),
            _ => Err(c.invalid(name, "each edge must be [from, to] or [from, to, weight]")),
        })
        .collect()
}

fn closed_set(c: &OpCall<'_>) -> Result<BTreeSet<(String, String)>> {
    let mut out = BTreeSet::new();
    if let Some(Value::Array(items)) = c.args().get("closed") {
        for e in items {
            if let Some(a) = e.as_array().filter(|a| a.len() >= 2) {
                let (x, y) = (node_name(&a[0]), node_name(&a[1]));
                out.insert((x.clone(), y.clone()));
                out.insert((y, x));
            } else {
                return Err(c.invalid("closed", "each closed edge must be [from, to]"));
            }
        }
    }
    Ok(out)
}

fn build(edges: &[(String, String, f64)], closed: &BTreeSet<(String, String)>) -> Graph {
    let mut g: Graph = BTreeMap::new();
    for (a, b, w) in edges {
        g.entry(a.clone()).or_default();
        g.entry(b.clone()).or_default();
        if !closed.contains(&(a.clone(), b.clone())) {
            g.entry(a.clone()).or_default().push((b.clone(), *w));
            g.entry(b.clone()).or_default().push((a.clone(), *w));
        }
    }
    g
}

#[derive(PartialEq)]
struct State(f64, String);
impl Eq for State {}
impl PartialOrd for State {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for State {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.total_cmp(&self.0).then_with(|| self.1.cmp(&o.1))
    }
}

/// Dijkstra distances from `src`.
pub fn dijkstra(g: &Graph, src: &str) -> BTreeMap<String, f64> {
    let mut dist = BTreeMap::new();
    let mut heap = BinaryHeap::new();
    heap.push(State(0.0, src.to_string()));
    while let Some(State(d, u)) = heap.pop() {
        if dist.contains_key(&u) {
            continue;
        }
        dist.insert(u.clone(), d);
        for (v, w) in g.get(&u).map(Vec::as_slice).unwrap_or(&[]) {
            if !dist.contains_key(v) {
                heap.push(State(d + w, v.clone()));
            }
        }
    }
    dist
}

/// The infrastructure operations.
pub fn operations() -> Vec<Operation> {
    vec![
        Operation::new("outage_summary", F, "Power-outage time series: peak customers out and its time, share of customers served at the peak, and steps with any outage.", vec![req("customers_out", Kind::Series, "customers without power per step"), req("customers_total", Kind::Number, "customers served")], |c| {
            let s = c.series("customers_out")?;
            need(c, "customers_out", s.valid_count(), 1)?;
            let total = c.num("customers_total")?;
            let (i, peak) = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).fold((0, f64::NEG_INFINITY), |a, (i, v)| if *v > a.1 { (i, *v) } else { a });
            Ok(json!({"peak_customers_out": peak, "peak_time": s.time(i), "peak_pct_out": 100.0 * peak / total, "pct_served_at_peak": 100.0 - 100.0 * peak / total, "steps_with_outage": s.values.iter().filter(|v| **v > 0.0).count()}))
        }),
        Operation::new("restoration_time", F, "Time from the outage peak until customers out fall to (100 − pct)% of the peak (e.g. 90 % restored), in steps and hours.", vec![req("customers_out", Kind::Series, "customers without power per step"), opt("pct", Kind::Number, "share of the peak restored, %", json!(90.0)), opt("step_hours", Kind::Number, "hours per step", json!(1.0))], |c| {
            let s = c.series("customers_out")?;
            need(c, "customers_out", s.valid_count(), 2)?;
            let (ip, peak) = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).fold((0, f64::NEG_INFINITY), |a, (i, v)| if *v > a.1 { (i, *v) } else { a });
            let target = peak * (1.0 - c.num("pct")? / 100.0);
            match s.values.iter().enumerate().skip(ip).find(|(_, v)| **v <= target + 1e-9 * peak.abs()) {
                Some((j, _)) => Ok(json!({"restored": true, "steps": j - ip, "hours": (j - ip) as f64 * c.num("step_hours")?, "restored_time": s.time(j), "peak_time": s.time(ip)})),
                None => Err(c.refuse(json!({"not_reached": {"target": target, "last": s.values.last()}}), "the record ends before the restoration target is reached")),
            }
        }),
        Operation::new("resilience_loss", F, "Resilience loss (Bruneau et al. 2003): area of the resilience triangle ∫(100 − Q(t)) dt for functionality Q in %, trapezoidal, in %·hours.", vec![req("functionality_pct", Kind::Series, "functionality per step, %"), opt("step_hours", Kind::Number, "hours per step", json!(1.0))], |c| {
            let q = c.series("functionality_pct")?.values;
            need(c, "functionality_pct", q.len(), 2)?;
            let dt = c.num("step_hours")?;
            let loss: f64 = q.windows(2).map(|w| ((100.0 - w[0]) + (100.0 - w[1])) / 2.0 * dt).sum();
            Ok(json!({"resilience_loss_pct_hours": loss, "min_functionality_pct": q.iter().copied().fold(f64::INFINITY, f64::min)}))
        }),
        Operation::new("network_components", F, "Connected components of a network after closing edges: count and node sets.", vec![req("edges", Kind::Any, "[[from, to, weight?], ...]"), opt("closed", Kind::Any, "[[from, to], ...] closed edges", json!([]))], |c| {
            let g = build(&edges(c, "edges")?, &closed_set(c)?);
            let mut seen = BTreeSet::new();
            let mut comps: Vec<Vec<String>> = Vec::new();
            for n in g.keys() {
                if seen.contains(n) { continue; }
                let d = dijkstra(&g, n);
                let comp: Vec<String> = d.keys().cloned().collect();
                seen.extend(comp.iter().cloned());
                comps.push(comp);
            }
            comps.sort_by_key(|c| std::cmp::Reverse(c.len()));
            Ok(json!({"components": comps.len(), "sizes": comps.iter().map(Vec::len).collect::<Vec<_>>(), "nodes": comps}))
        }),
        Operation::new("shortest_path_detour", F, "Shortest-path distance between two nodes before and after closing edges (Dijkstra), and the detour.", vec![req("edges", Kind::Any, "[[from, to, weight], ...]"), req("from", Kind::Text, "origin node"), req("to", Kind::Text, "destination node"), opt("closed", Kind::Any, "[[from, to], ...]", json!([]))], |c| {
            let e = edges(c, "edges")?;
            let (a, b) = (c.text("from")?, c.text("to")?);
            let before = dijkstra(&build(&e, &BTreeSet::new()), &a).get(&b).copied();
            let after = dijkstra(&build(&e, &closed_set(c)?), &a).get(&b).copied();
            let Some(before) = before else { return Err(c.refuse(json!({"unreachable": {"from": a, "to": b}}), "no path even before closures")); };
            Ok(json!({"distance_before": before, "distance_after": after, "detour": after.map(|x| x - before), "disconnected": after.is_none()}))
        }),
        Operation::new("service_area", F, "Nodes reachable from facility nodes within a network distance (multi-source Dijkstra).", vec![req("edges", Kind::Any, "[[from, to, weight], ...]"), req("facilities", Kind::Texts, "facility nodes"), req("max_distance", Kind::Number, "limit"), opt("closed", Kind::Any, "[[from, to], ...]", json!([]))], |c| {
            let g = build(&edges(c, "edges")?, &closed_set(c)?);
            let lim = c.num("max_distance")?;
            let mut best: BTreeMap<String, f64> = BTreeMap::new();
            for f in c.texts("facilities")? { for (n, d) in dijkstra(&g, &f) { let e = best.entry(n).or_insert(f64::INFINITY); *e = e.min(d); } }
            let served: Vec<&String> = best.iter().filter(|(_, d)| **d <= lim).map(|(n, _)| n).collect();
            Ok(json!({"served_nodes": served, "served_count": served.len(), "total_nodes": g.len()}))
        }),
        Operation::new("critical_facility_exposure", F, "Critical facilities (hospitals, schools, power ...) of a point layer inside hazard polygons, counted by type.", vec![req("facilities", Kind::Any, "layer path or GeoJSON"), req("hazard", Kind::Any, "polygon layer path or GeoJSON"), opt("type_field", Kind::Text, "facility type property", json!("type"))], |c| {
            let fs = crate::vector::load_features(c, "facilities")?;
            let zs = crate::vector::load_features(c, "hazard")?;
            let tf = c.text("type_field")?;
            let mut by: BTreeMap<String, usize> = BTreeMap::new();
            let mut names = Vec::new();
            for f in &fs {
                let inside = f.geometry.as_ref().and_then(crate::vector::Geometry::centroid).is_some_and(|p| zs.iter().any(|z| z.geometry.as_ref().is_some_and(|g| g.contains(p))));
                if inside {
                    *by.entry(f.properties.get(&tf).and_then(Value::as_str).unwrap_or("(unknown)").to_string()).or_default() += 1;
                    names.push(f.properties.get("name").cloned().unwrap_or(Value::Null));
                }
            }
            Ok(json!({"exposed_by_type": by, "exposed_total": names.len(), "exposed_names": names, "facilities_total": fs.len()}))
        }),
        Operation::new("flood_depth_at_assets", F, "Flood depth at assets, from given depths or by sampling a depth raster at asset coordinates, with counts above depth thresholds.", vec![opt("depths_m", Kind::Numbers, "depth at each asset, m", Value::Null), opt("depth_raster", Kind::File, "package-relative depth GeoTIFF", Value::Null), opt("xs", Kind::Numbers, "asset lon/x (with raster)", Value::Null), opt("ys", Kind::Numbers, "asset lat/y (with raster)", Value::Null), opt("thresholds_m", Kind::Numbers, "depth thresholds", json!([0.0, 0.5, 1.0, 2.0]))], |c| {
            let depths = if c.args().get("depths_m").is_some_and(|v| !v.is_null()) { c.numbers("depths_m")? } else {
                let op = crate::operation("raster_sample_points").ok_or_else(|| crate::DomainError::compute("flood_depth_at_assets", "raster sampler missing"))?;
                let (v, _) = op.run(c.ctx(), &json!({"path": c.value("depth_raster")?, "xs": c.value("xs")?, "ys": c.value("ys")?}))?;
                v["values"].as_array().map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect()).unwrap_or_default()
            };
            let th = c.numbers("thresholds_m")?;
            Ok(json!({"depths_m": depths.iter().map(|d| num(*d)).collect::<Vec<_>>(), "assets_above": th.iter().map(|t| json!({"threshold_m": t, "count": depths.iter().filter(|d| **d > *t).count()})).collect::<Vec<_>>(), "max_depth_m": num(stats::finite(&depths).into_iter().fold(f64::NAN, f64::max))}))
        }),
        Operation::new("depth_damage_loss", F, "Building loss from flood depth with a depth–damage curve (HAZUS style: depth above first floor → % damage, linear between points, 0 below the first point) times building value. The curve must be given: pick the occupancy class curve of your source.", vec![req("depths_ft", Kind::Numbers, "depth above first floor, ft"), req("values", Kind::Numbers, "building replacement values"), req("curve_depth_ft", Kind::Numbers, "curve depths, increasing"), req("curve_damage_pct", Kind::Numbers, "curve damage, %")], |c| {
            let (d, v) = (c.numbers("depths_ft")?, c.numbers("values")?);
            if d.len() != v.len() { return Err(c.invalid("values", "must match depths_ft")); }
            let (cx, cy) = (c.numbers("curve_depth_ft")?, c.numbers("curve_damage_pct")?);
            if cx.len() != cy.len() || cx.len() < 2 || cx.windows(2).any(|w| w[1] <= w[0]) { return Err(c.invalid("curve_damage_pct", "curve needs matching depth/damage arrays")); }
            let dmg: Vec<f64> = d.iter().map(|x| if *x < cx[0] { 0.0 } else { interp(&cx, &cy, *x) }).collect();
            let loss: f64 = dmg.iter().zip(&v).map(|(p, val)| p / 100.0 * val).sum();
            Ok(json!({"damage_pct": dmg, "total_loss": loss}))
        }),
        Operation::new("wind_fragility", F, "Lognormal fragility P(DS ≥ ds | V) = Φ(ln(V/median)/β) for each damage state (HAZUS hurricane style).", vec![req("wind", Kind::Number, "wind speed"), req("medians", Kind::Numbers, "median capacity per damage state"), req("betas", Kind::Numbers, "log standard deviation per damage state")], |c| {
            let v = c.num("wind")?;
            let (m, b) = (c.numbers("medians")?, c.numbers("betas")?);
            if m.len() != b.len() || m.iter().chain(&b).any(|x| x.is_nan() || *x <= 0.0) { return Err(c.invalid("betas", "medians and betas must be positive and of equal length")); }
            let p: Vec<f64> = m.iter().zip(&b).map(|(mi, bi)| norm_cdf((v / mi).ln() / bi)).collect();
            Ok(json!({"exceedance_probabilities": p}))
        }),
        Operation::new("stage_exceedance", F, "River stage above flood stage: steps/hours above, crest value and time, first and last exceedance.", vec![req("stage", Kind::Series, "stage series"), req("flood_stage", Kind::Number, "flood stage"), opt("step_hours", Kind::Number, "hours per step", json!(1.0))], |c| {
            let s = c.series("stage")?;
            need(c, "stage", s.valid_count(), 1)?;
            let fs = c.num("flood_stage")?;
            let above: Vec<usize> = s.values.iter().enumerate().filter(|(_, v)| **v > fs).map(|(i, _)| i).collect();
            let (ic, crest) = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).fold((0, f64::NEG_INFINITY), |a, (i, v)| if *v > a.1 { (i, *v) } else { a });
            Ok(json!({"steps_above": above.len(), "hours_above": above.len() as f64 * c.num("step_hours")?, "crest": crest, "crest_time": s.time(ic), "crest_above_flood_stage": crest - fs, "first_above": above.first().and_then(|i| s.time(*i)), "last_above": above.last().and_then(|i| s.time(*i))}))
        }),
        Operation::new("rating_curve", F, "Discharge from stage with a power-law rating curve Q = a (h − h0)^b (0 at or below h0).", vec![req("stage", Kind::Any, "stage value(s)"), req("a", Kind::Number, "coefficient"), req("b", Kind::Number, "exponent"), opt("h0", Kind::Number, "stage of zero flow", json!(0.0))], |c| {
            let (a, b, h0) = (c.num("a")?, c.num("b")?, c.num("h0")?);
            let q: Vec<f64> = crate::op::vals(c, "stage")?.iter().map(|h| if *h <= h0 { 0.0 } else { a * (h - h0).powf(b) }).collect();
            Ok(json!({"discharge": q, "peak_discharge": q.iter().copied().fold(f64::NAN, f64::max)}))
        }),
        Operation::new("scs_curve_number_runoff", F, "SCS curve-number direct runoff Q = (P − Ia)²/(P − Ia + S), S = 25400/CN − 254 mm, Ia = λS (λ = 0.2) (USDA TR-55).", vec![req("p_mm", Kind::Number, "event rainfall, mm"), req("cn", Kind::Number, "curve number (30–100)"), opt("lambda", Kind::Number, "initial abstraction ratio", json!(0.2))], |c| {
            let (p, cn, l) = (c.num("p_mm")?, c.num("cn")?, c.num("lambda")?);
            if !(30.0..=100.0).contains(&cn) { return Err(c.invalid("cn", "curve number must lie in 30–100")); }
            let s = 25400.0 / cn - 254.0;
            let ia = l * s;
            let q = if p <= ia { 0.0 } else { (p - ia).powi(2) / (p - ia + s) };
            Ok(json!({"runoff_mm": q, "retention_s_mm": s, "initial_abstraction_mm": ia, "runoff_coefficient": num(q / p)}))
        }),
        Operation::new("rational_peak_flow", F, "Rational method peak discharge Q = C i A / 3.6 (m³/s; i in mm/h, A in km²).", vec![req("c", Kind::Number, "runoff coefficient 0–1"), req("i_mmh", Kind::Number, "rainfall intensity, mm/h"), req("area_km2", Kind::Number, "catchment area, km²")], |c| {
            let cc = c.num("c")?;
            if !(0.0..=1.0).contains(&cc) { return Err(c.invalid("c", "runoff coefficient must lie in 0–1")); }
            let a = c.num("area_km2")?;
            if a > 80.0 { return Err(c.refuse(json!({"outside_validity_range": {"area_km2_max": 80}}), "the rational method applies to small catchments (≲ 80 km²)")); }
            Ok(json!({"peak_discharge_m3s": cc * c.num("i_mmh")? * a / 3.6, "units": "m3/s"}))
        }),
        Operation::new("reservoir_storage_change", F, "Reservoir storage change over a record: start, end, minimum, Δstorage and shares of capacity.", vec![req("storage", Kind::Series, "storage per step"), req("capacity", Kind::Number, "capacity, same units")], |c| {
            let s = c.series("storage")?;
            let v = s.valid();
            need(c, "storage", v.len(), 2)?;
            let cap = c.num("capacity")?;
            let (a, b) = (v[0], v[v.len() - 1]);
            let mn = v.iter().copied().fold(f64::INFINITY, f64::min);
            Ok(json!({"start": a, "end": b, "change": b - a, "start_pct_capacity": 100.0 * a / cap, "end_pct_capacity": 100.0 * b / cap, "min_pct_capacity": 100.0 * mn / cap}))
        }),
    ]
}
