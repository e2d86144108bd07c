//! Vector data and exposure (paper §3.4): GeoJSON (and, with the `gdal`
//! feature, any OGR layer such as the release's zipped Natural Earth
//! shapefiles), great-circle geometry on the sphere (R = 6,371.0088 km, the
//! IUGG mean radius), point-in-polygon, exposure and loss tallies, and
//! storm-track kinematics.

use crate::op::need;
use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::{self, num};
use crate::{DomainError, Result};
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const F: ToolFamily = ToolFamily::VectorExposure;
pub use crate::geometry::{
    bearing_deg, features_from_geojson, haversine_km, parse_geometry, ring_area_km2, Feature,
    Geometry, EARTH_RADIUS_KM,
};

/// Loads features from an inline GeoJSON value or a package file (GeoJSON,
/// or any OGR dataset incl. zipped shapefiles with the `gdal` feature).
pub fn load_features(c: &OpCall<'_>, name: &str) -> Result<Vec<Feature>> {
    match c.value(name)? {
        Value::String(_) => {
            let (rel, bytes) = c.file_bytes(name)?;
            match earthverse_package_model::sniff_bytes(&bytes) {
                earthverse_package_model::FileKind::Json => {
                    let doc: Value =
                        serde_json::from_slice(&bytes).map_err(|e| DomainError::Input {
                            file: rel.clone(),
                            message: format!("invalid GeoJSON: {e}"),
                        })?;
                    Ok(features_from_geojson(&doc))
                }
                _ => {
                    let (_, path) = c.file_path(name)?;
                    crate::formats::ogr_features(&path).map_err(|m| DomainError::Input {
                        file: rel,
                        message: m,
                    })
                }
            }
        }
        doc @ Value::Object(_) => Ok(features_from_geojson(doc)),
        _ => Err(c.invalid(name, "expected a package file path or a GeoJSON object")),
    }
}

fn point_arg(c: &OpCall<'_>) -> Result<[f64; 2]> {
    Ok([c.num("lon")?, c.num("lat")?])
}

fn prop_f64(f: &Feature, key: &str) -> f64 {
    f.properties
        .get(key)
        .and_then(crate::op::as_f64)
        .unwrap_or(f64::NAN)
}

fn feature_json(f: &Feature, extra: Value) -> Value {
    let mut m = f.properties.clone();
    if let Value::Object(e) = extra {
        m.extend(e);
    }
    Value::Object(m)
}

fn features_inside(points: &[Feature], zones: &[Feature]) -> Vec<(usize, Option<usize>)> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = p.geometry.as_ref().and_then(Geometry::centroid);
            (
                i,
                c.and_then(|pt| {
                    zones
                        .iter()
                        .position(|z| z.geometry.as_ref().is_some_and(|g| g.contains(pt)))
                }),
            )
        })
        .collect()
}

/// The vector and exposure operations.
pub fn operations() -> Vec<Operation> {
    let layer = |n: &'static str| {
        req(
            n,
            Kind::Any,
            "package-relative GeoJSON/shapefile path, or an inline GeoJSON object",
        )
    };
    vec![
        Operation::new("geojson_summary", F, "Feature count, geometry types, bounding box and numeric property statistics of a vector layer.", vec![layer("layer")], |c| {
            let fs = load_features(c, "layer")?;
            let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
            let mut props: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            let mut bb = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
            for f in &fs {
                if let Some(g) = &f.geometry {
                    *kinds.entry(g.kind()).or_default() += 1;
                    for v in g.vertices() { bb = [bb[0].min(v[0]), bb[1].min(v[1]), bb[2].max(v[0]), bb[3].max(v[1])]; }
                }
                for (k, v) in &f.properties { if let Some(x) = v.as_f64() { props.entry(k.clone()).or_default().push(x); } }
            }
            let ps: BTreeMap<String, Value> = props.into_iter().map(|(k, v)| (k, json!({"count": v.len(), "min": num(v.iter().copied().fold(f64::INFINITY, f64::min)), "max": num(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)), "sum": v.iter().sum::<f64>(), "mean": num(stats::mean(&v))}))).collect();
            Ok(json!({"features": fs.len(), "geometry_types": kinds, "bbox": bb.map(num), "numeric_properties": ps}))
        }),
        Operation::new("haversine_distance", F, "Great-circle distance (km) between two points on a sphere of radius 6,371.0088 km, and the initial bearing.", vec![req("lat1", Kind::Number, "deg"), req("lon1", Kind::Number, "deg"), req("lat2", Kind::Number, "deg"), req("lon2", Kind::Number, "deg")], |c| {
            let (a, b, d, e) = (c.num("lat1")?, c.num("lon1")?, c.num("lat2")?, c.num("lon2")?);
            if a.abs() > 90.0 || d.abs() > 90.0 { return Err(c.invalid("lat1", "latitudes must lie within ±90°")); }
            Ok(json!({"distance_km": haversine_km(a, b, d, e), "initial_bearing_deg": bearing_deg(a, b, d, e), "units": "km"}))
        }),
        Operation::new("nearest_features", F, "The k features of a layer nearest to a point (great-circle km; 0 inside polygons).", vec![layer("layer"), req("lat", Kind::Number, "deg"), req("lon", Kind::Number, "deg"), opt("k", Kind::Integer, "count", json!(5))], |c| {
            let fs = load_features(c, "layer")?;
            let pt = point_arg(c)?;
            let mut d: Vec<(f64, &Feature)> = fs.iter().filter_map(|f| f.geometry.as_ref().map(|g| (g.distance_km(pt), f))).collect();
            d.sort_by(|a, b| a.0.total_cmp(&b.0));
            Ok(json!({"nearest": d.iter().take(c.int("k")?.max(1) as usize).map(|(km, f)| feature_json(f, json!({"distance_km": km}))).collect::<Vec<_>>()}))
        }),
        Operation::new("points_in_polygon", F, "Features of layer `points` whose location lies inside any polygon of layer `polygons` (even-odd rule, holes excluded).", vec![layer("points"), layer("polygons")], |c| {
            let ps = load_features(c, "points")?;
            let zs = load_features(c, "polygons")?;
            if !zs.iter().any(|z| matches!(z.geometry, Some(Geometry::Polygons(_)))) {
                return Err(c.refuse(json!({"geometry_mismatch": {"argument": "polygons", "need": "polygon"}}), "`polygons` holds no polygon geometry"));
            }
            let inside: Vec<Value> = features_inside(&ps, &zs).into_iter().filter(|(_, z)| z.is_some()).map(|(i, _)| Value::Object(ps[i].properties.clone())).collect();
            Ok(json!({"inside_count": inside.len(), "total": ps.len(), "inside": inside}))
        }),
        Operation::new("within_distance", F, "Features of a layer within `radius_km` of a point.", vec![layer("layer"), req("lat", Kind::Number, "deg"), req("lon", Kind::Number, "deg"), req("radius_km", Kind::Number, "km")], |c| {
            let fs = load_features(c, "layer")?;
            let pt = point_arg(c)?;
            let r = c.num("radius_km")?;
            let hits: Vec<Value> = fs.iter().filter_map(|f| f.geometry.as_ref().map(|g| (g.distance_km(pt), f))).filter(|(d, _)| *d <= r).map(|(d, f)| feature_json(f, json!({"distance_km": d}))).collect();
            Ok(json!({"count": hits.len(), "features": hits}))
        }),
        Operation::new("polygon_area", F, "Geodesic area (km²) of each polygon feature on the sphere and their total.", vec![layer("layer")], |c| {
            let fs = load_features(c, "layer")?;
            let areas: Vec<f64> = fs.iter().map(|f| f.geometry.as_ref().map(Geometry::area_km2).unwrap_or(0.0)).collect();
            Ok(json!({"total_km2": areas.iter().sum::<f64>(), "areas_km2": areas, "units": "km2"}))
        }),
        Operation::new("line_length", F, "Great-circle length (km) of each line feature and the total.", vec![layer("layer")], |c| {
            let fs = load_features(c, "layer")?;
            let l: Vec<f64> = fs.iter().map(|f| f.geometry.as_ref().map(Geometry::length_km).unwrap_or(0.0)).collect();
            Ok(json!({"total_km": l.iter().sum::<f64>(), "lengths_km": l, "units": "km"}))
        }),
        Operation::new("centroid_bbox", F, "Vertex-mean centroid and bounding box of each feature and of the layer.", vec![layer("layer")], |c| {
            let fs = load_features(c, "layer")?;
            let all: Vec<[f64; 2]> = fs.iter().filter_map(|f| f.geometry.as_ref()).flat_map(Geometry::vertices).collect();
            need(c, "layer", all.len(), 1)?;
            let bb = all.iter().fold([f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY], |b, v| [b[0].min(v[0]), b[1].min(v[1]), b[2].max(v[0]), b[3].max(v[1])]);
            let n = all.len() as f64;
            Ok(json!({"centroid_lon": all.iter().map(|p| p[0]).sum::<f64>() / n, "centroid_lat": all.iter().map(|p| p[1]).sum::<f64>() / n, "bbox": bb, "features": fs.iter().map(|f| f.geometry.as_ref().and_then(Geometry::centroid)).collect::<Vec<_>>()}))
        }),
        Operation::new("spatial_join", F, "Attach the attributes of the containing polygon (layer `polygons`, property `key`) to each point feature.", vec![layer("points"), layer("polygons"), req("key", Kind::Text, "polygon property to attach")], |c| {
            let ps = load_features(c, "points")?;
            let zs = load_features(c, "polygons")?;
            let key = c.text("key")?;
            let rows: Vec<Value> = features_inside(&ps, &zs).into_iter().map(|(i, z)| feature_json(&ps[i], json!({ "joined": z.and_then(|z| zs[z].properties.get(&key).cloned()) }))).collect();
            Ok(json!({"rows": rows, "matched": rows.iter().filter(|r| !r["joined"].is_null()).count()}))
        }),
        Operation::new("group_by_admin", F, "Sum, mean and count of a numeric property per value of a grouping property (e.g. admin unit).", vec![layer("layer"), req("group", Kind::Text, "grouping property"), req("value", Kind::Text, "numeric property")], |c| {
            let fs = load_features(c, "layer")?;
            let (g, v) = (c.text("group")?, c.text("value")?);
            let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for f in &fs {
                let key = f.properties.get(&g).map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string())).unwrap_or_else(|| "(missing)".into());
                groups.entry(key).or_default().push(prop_f64(f, &v));
            }
            Ok(json!({"groups": groups.iter().map(|(k, xs)| { let f = stats::finite(xs); json!({"group": k, "count": xs.len(), "sum": f.iter().sum::<f64>(), "mean": num(stats::mean(&f))}) }).collect::<Vec<_>>()}))
        }),
        Operation::new("exposure_population", F, "Population inside a hazard footprint: sum of a population property over features (points or polygon centroids) inside the footprint polygons.", vec![layer("population"), layer("footprint"), opt("field", Kind::Text, "population property", json!("population"))], |c| {
            let ps = load_features(c, "population")?;
            let zs = load_features(c, "footprint")?;
            let field = c.text("field")?;
            if !ps.iter().any(|p| p.properties.contains_key(&field)) {
                return Err(c.refuse(json!({"variable_absent": {"argument": "population", "field": field}}), format!("no feature carries `{field}`")));
            }
            let inside: f64 = features_inside(&ps, &zs).into_iter().filter(|(_, z)| z.is_some()).map(|(i, _)| prop_f64(&ps[i], &field)).filter(|v| v.is_finite()).sum();
            let total: f64 = ps.iter().map(|p| prop_f64(p, &field)).filter(|v| v.is_finite()).sum();
            Ok(json!({"exposed_population": inside, "total_population": total, "share_pct": num(100.0 * inside / total)}))
        }),
        Operation::new("exposure_assets", F, "Count and summed value of assets inside a footprint, by asset class.", vec![layer("assets"), layer("footprint"), opt("class_field", Kind::Text, "class property", json!("class")), opt("value_field", Kind::Text, "value property", json!("value"))], |c| {
            let ps = load_features(c, "assets")?;
            let zs = load_features(c, "footprint")?;
            let (cf, vf) = (c.text("class_field")?, c.text("value_field")?);
            let mut by: BTreeMap<String, (usize, f64)> = BTreeMap::new();
            for (i, z) in features_inside(&ps, &zs) {
                if z.is_some() {
                    let k = ps[i].properties.get(&cf).and_then(Value::as_str).unwrap_or("(none)").to_string();
                    let e = by.entry(k).or_default();
                    e.0 += 1;
                    let v = prop_f64(&ps[i], &vf);
                    if v.is_finite() { e.1 += v; }
                }
            }
            Ok(json!({"by_class": by.iter().map(|(k, (n, v))| json!({"class": k, "count": n, "value": v})).collect::<Vec<_>>(), "count": by.values().map(|x| x.0).sum::<usize>()}))
        }),
        Operation::new("damage_grade_distribution", F, "Counts and percentages of features per damage grade (e.g. Copernicus EMS / FEMA grades).", vec![layer("layer"), opt("field", Kind::Text, "grade property", json!("damage_grade"))], |c| {
            let fs = load_features(c, "layer")?;
            let f = c.text("field")?;
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for x in &fs { if let Some(v) = x.properties.get(&f) { *counts.entry(v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).or_default() += 1; } }
            let n: usize = counts.values().sum();
            if n == 0 { return Err(c.refuse(json!({"variable_absent": {"field": f}}), "no feature carries the grade field")); }
            Ok(json!({"grades": counts.iter().map(|(k, v)| json!({"grade": k, "count": v, "pct": 100.0 * *v as f64 / n as f64})).collect::<Vec<_>>(), "total": n}))
        }),
        Operation::new("vulnerability_curve_apply", F, "Damage ratio by linear interpolation in a vulnerability curve (hazard intensity → damage ratio 0–1), clamped at the curve's ends.", vec![req("intensities", Kind::Numbers, "hazard values at assets"), req("curve_x", Kind::Numbers, "curve intensities, increasing"), req("curve_y", Kind::Numbers, "damage ratios 0–1")], |c| {
            let x = c.numbers("curve_x")?;
            let y = c.numbers("curve_y")?;
            if x.len() != y.len() || x.len() < 2 || x.windows(2).any(|w| w[1] <= w[0]) { return Err(c.invalid("curve_x", "needs ≥ 2 strictly increasing points matching curve_y")); }
            let out: Vec<f64> = c.numbers("intensities")?.iter().map(|v| interp(&x, &y, *v)).collect();
            Ok(json!({"damage_ratio": out.iter().map(|v| num(*v)).collect::<Vec<_>>(), "mean_damage_ratio": num(stats::mean(&stats::finite(&out)))}))
        }),
        Operation::new("expected_loss", F, "Expected loss Σ exposure value × damage ratio.", vec![req("values", Kind::Numbers, "exposed values"), req("damage_ratios", Kind::Numbers, "0–1")], |c| {
            let v = c.numbers("values")?;
            let d = c.numbers("damage_ratios")?;
            if v.len() != d.len() { return Err(c.invalid("damage_ratios", "must match values")); }
            if d.iter().any(|x| x.is_finite() && !(0.0..=1.0).contains(x)) { return Err(c.invalid("damage_ratios", "must lie in [0, 1]")); }
            let loss: f64 = v.iter().zip(&d).filter(|(a, b)| a.is_finite() && b.is_finite()).map(|(a, b)| a * b).sum();
            Ok(json!({"expected_loss": loss, "exposed_value": v.iter().filter(|x| x.is_finite()).sum::<f64>()}))
        }),
        Operation::new("top_k_affected", F, "Rank features by a numeric property (descending) and return the top k.", vec![layer("layer"), req("field", Kind::Text, "numeric property"), opt("k", Kind::Integer, "count", json!(5))], |c| {
            let fs = load_features(c, "layer")?;
            let f = c.text("field")?;
            let mut v: Vec<(f64, &Feature)> = fs.iter().map(|x| (prop_f64(x, &f), x)).filter(|(v, _)| v.is_finite()).collect();
            v.sort_by(|a, b| b.0.total_cmp(&a.0));
            Ok(json!({"top": v.iter().take(c.int("k")?.max(1) as usize).enumerate().map(|(i, (_, x))| feature_json(x, json!({"rank": i + 1}))).collect::<Vec<_>>()}))
        }),
        Operation::new("track_speed_heading", F, "Forward speed (km/h) and heading (degrees) along a storm track of (lat, lon, hours) fixes.", vec![req("lats", Kind::Numbers, "deg"), req("lons", Kind::Numbers, "deg"), req("hours", Kind::Numbers, "time of each fix, hours")], |c| {
            let (la, lo, h) = (c.numbers("lats")?, c.numbers("lons")?, c.numbers("hours")?);
            if la.len() != lo.len() || la.len() != h.len() { return Err(c.invalid("lons", "lats, lons and hours must have equal lengths")); }
            need(c, "lats", la.len(), 2)?;
            let segs: Vec<Value> = (1..la.len()).map(|i| {
                let d = haversine_km(la[i - 1], lo[i - 1], la[i], lo[i]);
                let dt = h[i] - h[i - 1];
                json!({"distance_km": d, "speed_kmh": num(d / dt), "heading_deg": bearing_deg(la[i - 1], lo[i - 1], la[i], lo[i])})
            }).collect();
            let total: f64 = segs.iter().filter_map(|s| s["distance_km"].as_f64()).sum();
            Ok(json!({"segments": segs, "total_km": total, "mean_speed_kmh": num(total / (h[h.len() - 1] - h[0]))}))
        }),
        Operation::new("track_closest_approach", F, "Minimum great-circle distance between a track (linearly interpolated between fixes) and a site, with the interpolated time.", vec![req("lats", Kind::Numbers, "deg"), req("lons", Kind::Numbers, "deg"), req("hours", Kind::Numbers, "hours"), req("site_lat", Kind::Number, "deg"), req("site_lon", Kind::Number, "deg")], |c| {
            let (la, lo, h) = (c.numbers("lats")?, c.numbers("lons")?, c.numbers("hours")?);
            if la.len() != lo.len() || la.len() != h.len() { return Err(c.invalid("lons", "lats, lons and hours must have equal lengths")); }
            need(c, "lats", la.len(), 1)?;
            let (sl, so) = (c.num("site_lat")?, c.num("site_lon")?);
            let mut best = (haversine_km(la[0], lo[0], sl, so), h[0]);
            for i in 1..la.len() {
                for k in 0..=200 {
                    let t = k as f64 / 200.0;
                    let d = haversine_km(la[i - 1] + (la[i] - la[i - 1]) * t, lo[i - 1] + (lo[i] - lo[i - 1]) * t, sl, so);
                    if d < best.0 { best = (d, h[i - 1] + (h[i] - h[i - 1]) * t); }
                }
            }
            Ok(json!({"min_distance_km": best.0, "time_hours": best.1}))
        }),
    ]
}

/// Linear interpolation with clamping.
pub fn interp(x: &[f64], y: &[f64], v: f64) -> f64 {
    if !v.is_finite() || x.is_empty() {
        return f64::NAN;
    }
    if v <= x[0] {
        return y[0];
    }
    if v >= x[x.len() - 1] {
        return y[y.len() - 1];
    }
    let i = x.partition_point(|a| *a <= v);
    let (x0, x1, y0, y1) = (x[i - 1], x[i], y[i - 1], y[i]);
    y0 + (y1 - y0) * (v - x0) / (x1 - x0)
}
