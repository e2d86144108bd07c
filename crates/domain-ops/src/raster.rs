//! Raster and Earth observation (paper §3.4): GeoTIFF through `gdal`
//! (feature `gdal`), NetCDF through `netcdf` (feature `netcdf`), spectral
//! indices and change detection on inline arrays or rasters. Statistics
//! stream over row blocks (GeoTIFF) or time slices (NetCDF), so files larger
//! than memory work; operations that need a whole band refuse rasters above
//! [`MAX_WHOLE_BAND_PIXELS`].

#[cfg(feature = "netcdf")]
use crate::op::need;
use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::{self, num};
use crate::{DomainError, Result};
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};

const F: ToolFamily = ToolFamily::RasterEo;

#[cfg(feature = "gdal")]
use crate::formats::gdal_io;
#[cfg(feature = "netcdf")]
use crate::formats::nc;
pub use crate::formats::{netcdf_series, ogr_features, GridInfo, Moments, MAX_WHOLE_BAND_PIXELS};

fn feature_needed(op: &str, feature: &'static str) -> DomainError {
    DomainError::FeatureDisabled {
        operation: op.to_string(),
        feature,
    }
}

/// A band given inline (`[numbers]`) or as a raster file path (band 1).
fn band(c: &OpCall<'_>, name: &str) -> Result<(Vec<f64>, Option<GridInfo>)> {
    match c.value(name)? {
        Value::Array(_) => Ok((c.numbers(name)?, None)),
        Value::String(_) => {
            #[cfg(feature = "gdal")]
            {
                let (rel, path) = c.file_path(name)?;
                let ds = gdal_io::open(&path).map_err(|m| DomainError::Input {
                    file: rel.clone(),
                    message: m,
                })?;
                let values = gdal_io::read_all(&ds, 1).map_err(|m| DomainError::Input {
                    file: rel,
                    message: m,
                })?;
                Ok((values, Some(gdal_io::grid(&ds))))
            }
            #[cfg(not(feature = "gdal"))]
            Err(feature_needed("raster", "gdal"))
        }
        _ => Err(c.invalid(name, "expected an array of pixel values or a raster path")),
    }
}

fn same_len(c: &OpCall<'_>, a: &[f64], b: &[f64], name: &str) -> Result<()> {
    if a.len() != b.len() {
        return Err(c.refuse(
            json!({"grid_mismatch": {"argument": name, "have": b.len(), "need": a.len()}}),
            format!("`{name}` has {} pixels, expected {}", b.len(), a.len()),
        ));
    }
    Ok(())
}

fn area_of(mask: &[bool], grid: &Option<GridInfo>) -> Option<f64> {
    grid.as_ref().map(|g| {
        mask.iter()
            .enumerate()
            .filter(|(_, m)| **m)
            .map(|(i, _)| g.pixel_area_km2(i / g.width.max(1)))
            .sum()
    })
}

fn index_summary(values: &[f64], grid: &Option<GridInfo>) -> Value {
    let mut m = Moments::default();
    m.push_all(values);
    let mut out = m.to_json();
    if grid.is_none() && values.len() <= 10_000 {
        out["values"] = Value::Array(values.iter().map(|v| num(*v)).collect());
    }
    out
}

fn norm_diff(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x + y == 0.0 {
                f64::NAN
            } else {
                (x - y) / (x + y)
            }
        })
        .collect()
}

fn compare(v: f64, op: &str, t: f64) -> bool {
    match op {
        "gt" => v > t,
        "ge" => v >= t,
        "lt" => v < t,
        "le" => v <= t,
        _ => v == t,
    }
}

/// USGS / Key & Benson (2006) burn-severity class of a dNBR value.
pub fn burn_severity_class(dnbr: f64) -> &'static str {
    match dnbr {
        x if x < -0.25 => "enhanced_regrowth_high",
        x if x < -0.1 => "enhanced_regrowth_low",
        x if x < 0.1 => "unburned",
        x if x < 0.27 => "low",
        x if x < 0.44 => "moderate_low",
        x if x < 0.66 => "moderate_high",
        _ => "high",
    }
}

/// Slope (degrees) and aspect (degrees clockwise from north, downslope) of
/// the centre of a 3×3 window by Horn (1981), cell sizes in metres.
pub fn horn_slope_aspect(z: &[f64; 9], dx: f64, dy: f64) -> (f64, f64) {
    let dzdx = ((z[2] + 2.0 * z[5] + z[8]) - (z[0] + 2.0 * z[3] + z[6])) / (8.0 * dx);
    let dzdy = ((z[6] + 2.0 * z[7] + z[8]) - (z[0] + 2.0 * z[1] + z[2])) / (8.0 * dy);
    let slope = dzdx.hypot(dzdy).atan().to_degrees();
    let aspect = if dzdx == 0.0 && dzdy == 0.0 {
        f64::NAN
    } else {
        (90.0 - (dzdy).atan2(-dzdx).to_degrees()).rem_euclid(360.0)
    };
    (slope, aspect)
}

/// 4-connected components of a mask: (count, sizes descending).
pub fn patches(mask: &[bool], width: usize) -> (usize, Vec<usize>) {
    let mut label = vec![0u32; mask.len()];
    let mut sizes = Vec::new();
    let mut stack = Vec::new();
    for start in 0..mask.len() {
        if !mask[start] || label[start] != 0 {
            continue;
        }
        let id = sizes.len() as u32 + 1;
        let mut size = 0;
        stack.push(start);
        label[start] = id;
        while let Some(i) = stack.pop() {
            size += 1;
            let (x, y) = (i % width, i / width);
            let mut visit = |j: usize| {
                if mask[j] && label[j] == 0 {
                    label[j] = id;
                    stack.push(j);
                }
            };
            if x > 0 {
                visit(i - 1);
            }
            if x + 1 < width {
                visit(i + 1);
            }
            if y > 0 {
                visit(i - width);
            }
            if i + width < mask.len() {
                visit(i + width);
            }
        }
        sizes.push(size);
    }
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    (sizes.len(), sizes)
}

fn band_path_op(c: &OpCall<'_>, op: &'static str) -> Result<(String, std::path::PathBuf)> {
    if !cfg!(feature = "gdal") {
        return Err(feature_needed(op, "gdal"));
    }
    c.file_path("path")
}

/// The raster and Earth-observation operations.
pub fn operations() -> Vec<Operation> {
    let path = || {
        req(
            "path",
            Kind::File,
            "package-relative raster (GeoTIFF or any GDAL raster)",
        )
    };
    let nc_path = || req("path", Kind::File, "package-relative NetCDF file");
    let var = || req("variable", Kind::Text, "NetCDF variable name");
    vec![
        Operation::new("raster_info", F, "Raster size, bands, data types, nodata, geotransform, pixel size and CRS (gdalinfo).", vec![path()], |c| {
            let (rel, p) = band_path_op(c, "raster_info")?;
            #[cfg(feature = "gdal")]
            { let ds = gdal_io::open(&p).map_err(|m| DomainError::Input { file: rel, message: m })?; Ok(gdal_io::info(&ds)) }
            #[cfg(not(feature = "gdal"))]
            { let _ = (rel, p); Err(feature_needed("raster_info", "gdal")) }
        }),
        Operation::new("raster_band_stats", F, "Exact min, max, mean, population std and valid fraction of a band, streamed in row blocks (as gdalinfo -stats), nodata excluded.", vec![path(), opt("band", Kind::Integer, "1-based band", json!(1))], |c| {
            let (rel, p) = band_path_op(c, "raster_band_stats")?;
            #[cfg(feature = "gdal")]
            {
                let ds = gdal_io::open(&p).map_err(|m| DomainError::Input { file: rel.clone(), message: m })?;
                let mut m = Moments::default();
                gdal_io::for_rows(&ds, c.int("band")?.max(1) as usize, |_, _, v| m.push_all(v)).map_err(|e| DomainError::Input { file: rel, message: e })?;
                Ok(m.to_json())
            }
            #[cfg(not(feature = "gdal"))]
            { let _ = (rel, p); Err(feature_needed("raster_band_stats", "gdal")) }
        }),
        Operation::new("raster_histogram", F, "Histogram of a band (inline pixels or raster) over explicit bin edges, streamed.", vec![req("pixels", Kind::Any, "array of pixel values or a raster path"), req("edges", Kind::Numbers, "increasing bin edges")], |c| {
            let (v, _) = band(c, "pixels")?;
            let e = c.numbers("edges")?;
            if e.len() < 2 || e.windows(2).any(|w| w[1] <= w[0]) { return Err(c.invalid("edges", "needs ≥ 2 increasing edges")); }
            let mut counts = vec![0u64; e.len() - 1];
            for x in v.iter().filter(|x| x.is_finite()) {
                if *x >= e[0] && *x <= e[e.len() - 1] {
                    let i = e.partition_point(|b| b <= x).saturating_sub(1).min(counts.len() - 1);
                    counts[i] += 1;
                }
            }
            Ok(json!({"edges": e, "counts": counts}))
        }),
        Operation::new("raster_threshold_area", F, "Number of pixels meeting a condition (gt/ge/lt/le/eq a value) and their area in km² (spherical cell areas for geographic grids).", vec![req("pixels", Kind::Any, "array or raster path"), req("value", Kind::Number, "threshold"), opt("op", Kind::Text, "gt | ge | lt | le | eq", json!("ge")), opt("pixel_area_km2", Kind::Number, "pixel area for inline arrays", Value::Null)], |c| {
            let (v, grid) = band(c, "pixels")?;
            let (t, op) = (c.num("value")?, c.text("op")?);
            let mask: Vec<bool> = v.iter().map(|x| x.is_finite() && compare(*x, &op, t)).collect();
            let n = mask.iter().filter(|m| **m).count();
            let area = area_of(&mask, &grid).or(c.num_opt("pixel_area_km2")?.map(|a| a * n as f64));
            Ok(json!({"pixels": n, "valid_pixels": v.iter().filter(|x| x.is_finite()).count(), "area_km2": area, "units": "km2"}))
        }),
        Operation::new("raster_zonal_stats", F, "Statistics of raster pixels whose centres fall in each polygon of a vector layer (same CRS assumed; refused when the layer lies outside the raster).", vec![path(), req("zones", Kind::Any, "vector layer path or inline GeoJSON"), opt("name_field", Kind::Text, "zone name property", json!("name"))], |c| {
            let (rel, p) = band_path_op(c, "raster_zonal_stats")?;
            let zones = crate::vector::load_features(c, "zones")?;
            #[cfg(feature = "gdal")]
            {
                let ds = gdal_io::open(&p).map_err(|m| DomainError::Input { file: rel.clone(), message: m })?;
                let g = gdal_io::grid(&ds);
                let mut acc = vec![Moments::default(); zones.len()];
                let t = g.transform;
                gdal_io::for_rows(&ds, 1, |y0, w, vals| {
                    for (k, v) in vals.iter().enumerate() {
                        let (x, y) = (k % w, y0 + k / w);
                        let pt = [t[0] + (x as f64 + 0.5) * t[1] + (y as f64 + 0.5) * t[2], t[3] + (x as f64 + 0.5) * t[4] + (y as f64 + 0.5) * t[5]];
                        for (zi, z) in zones.iter().enumerate() {
                            if z.geometry.as_ref().is_some_and(|gm| gm.contains(pt)) { acc[zi].push_all(&[*v]); }
                        }
                    }
                }).map_err(|e| DomainError::Input { file: rel, message: e })?;
                if acc.iter().all(|m| m.total == 0) {
                    return Err(c.refuse(json!({"no_overlap": {"zones": zones.len()}}), "no pixel centre falls inside any zone (check the CRS)"));
                }
                let nf = c.text("name_field")?;
                Ok(json!({"zones": zones.iter().zip(&acc).map(|(z, m)| { let mut o = m.to_json(); o["zone"] = z.properties.get(&nf).cloned().unwrap_or(Value::Null); o }).collect::<Vec<_>>()}))
            }
            #[cfg(not(feature = "gdal"))]
            { let _ = (rel, p, zones); Err(feature_needed("raster_zonal_stats", "gdal")) }
        }),
        Operation::new("raster_sample_points", F, "Raster values at (lon, lat) or (x, y) points by the inverse geotransform (nearest pixel); points outside are null.", vec![path(), req("xs", Kind::Numbers, "lon or x"), req("ys", Kind::Numbers, "lat or y")], |c| {
            let (rel, p) = band_path_op(c, "raster_sample_points")?;
            let (xs, ys) = (c.numbers("xs")?, c.numbers("ys")?);
            if xs.len() != ys.len() { return Err(c.invalid("ys", "must match xs")); }
            #[cfg(feature = "gdal")]
            {
                let ds = gdal_io::open(&p).map_err(|m| DomainError::Input { file: rel.clone(), message: m })?;
                let g = gdal_io::grid(&ds);
                let b = ds.rasterband(1).map_err(|e| DomainError::Input { file: rel.clone(), message: e.to_string() })?;
                let nd = b.no_data_value();
                let t = g.transform;
                let out: Vec<Value> = xs.iter().zip(&ys).map(|(x, y)| {
                    let col = ((x - t[0]) / t[1]).floor();
                    let row = ((y - t[3]) / t[5]).floor();
                    if col < 0.0 || row < 0.0 || col >= g.width as f64 || row >= g.height as f64 { return Value::Null; }
                    b.read_as::<f64>((col as isize, row as isize), (1, 1), (1, 1), None).ok().and_then(|buf| buf.data().first().copied()).filter(|v| Some(*v) != nd).map(num).unwrap_or(Value::Null)
                }).collect();
                Ok(json!({"values": out}))
            }
            #[cfg(not(feature = "gdal"))]
            { let _ = (rel, p); Err(feature_needed("raster_sample_points", "gdal")) }
        }),
        Operation::new("raster_difference", F, "Post − pre change of two co-registered grids (arrays or rasters): difference statistics and counts of increase/decrease beyond a tolerance.", vec![req("pre", Kind::Any, "array or raster path"), req("post", Kind::Any, "array or raster path"), opt("tolerance", Kind::Number, "change ignored below this", json!(0.0))], |c| {
            let (a, _) = band(c, "pre")?;
            let (b, _) = band(c, "post")?;
            same_len(c, &a, &b, "post")?;
            let tol = c.num("tolerance")?;
            let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y - x).collect();
            let mut m = Moments::default();
            m.push_all(&d);
            let mut out = m.to_json();
            out["increase_pixels"] = json!(d.iter().filter(|x| **x > tol).count());
            out["decrease_pixels"] = json!(d.iter().filter(|x| **x < -tol).count());
            Ok(out)
        }),
        Operation::new("raster_reclassify", F, "Counts and shares of pixels per class defined by break values (class i holds breaks[i-1] ≤ v < breaks[i]).", vec![req("pixels", Kind::Any, "array or raster path"), req("breaks", Kind::Numbers, "increasing class breaks"), opt("labels", Kind::Texts, "class labels (len(breaks)+1)", Value::Null)], |c| {
            let (v, grid) = band(c, "pixels")?;
            let br = c.numbers("breaks")?;
            let labels = if c.args().get("labels").is_some_and(|l| !l.is_null()) { c.texts("labels")? } else { (0..=br.len()).map(|i| format!("class_{i}")).collect() };
            if labels.len() != br.len() + 1 { return Err(c.invalid("labels", "needs len(breaks)+1 labels")); }
            let mut counts = vec![0u64; labels.len()];
            let mut areas = vec![0f64; labels.len()];
            for (i, x) in v.iter().enumerate().filter(|(_, x)| x.is_finite()) {
                let k = br.partition_point(|b| b <= x);
                counts[k] += 1;
                if let Some(g) = &grid { areas[k] += g.pixel_area_km2(i / g.width.max(1)); }
            }
            let n: u64 = counts.iter().sum();
            Ok(json!({"classes": labels.iter().enumerate().map(|(i, l)| json!({"class": l, "pixels": counts[i], "pct": num(100.0 * counts[i] as f64 / n as f64), "area_km2": grid.as_ref().map(|_| areas[i])})).collect::<Vec<_>>()}))
        }),
        Operation::new("raster_patches", F, "Connected patches (4-connectivity) of pixels meeting a condition: count, largest sizes (pixels) and area.", vec![req("pixels", Kind::Any, "array or raster path"), opt("width", Kind::Integer, "row width for inline arrays", Value::Null), req("value", Kind::Number, "threshold"), opt("op", Kind::Text, "gt | ge | lt | le | eq", json!("ge"))], |c| {
            let (v, grid) = band(c, "pixels")?;
            let width = match (&grid, c.num_opt("width")?) { (Some(g), _) => g.width, (None, Some(w)) if w >= 1.0 => w as usize, _ => return Err(c.invalid("width", "inline arrays need a positive row width")) };
            if v.len() % width != 0 { return Err(c.invalid("width", "does not divide the pixel count")); }
            let (t, op) = (c.num("value")?, c.text("op")?);
            let mask: Vec<bool> = v.iter().map(|x| x.is_finite() && compare(*x, &op, t)).collect();
            let (n, sizes) = patches(&mask, width);
            Ok(json!({"patch_count": n, "largest_pixels": sizes.iter().take(10).collect::<Vec<_>>(), "total_pixels": sizes.iter().sum::<usize>(), "area_km2": area_of(&mask, &grid)}))
        }),
        Operation::new("index_ndvi", F, "NDVI = (NIR − Red)/(NIR + Red) per pixel, with statistics (arrays or co-registered band rasters).", vec![req("nir", Kind::Any, "array or raster path"), req("red", Kind::Any, "array or raster path")], |c| {
            let (n, g) = band(c, "nir")?;
            let (r, _) = band(c, "red")?;
            same_len(c, &n, &r, "red")?;
            Ok(json!({"ndvi": index_summary(&norm_diff(&n, &r), &g)}))
        }),
        Operation::new("index_ndwi", F, "NDWI (McFeeters 1996) = (Green − NIR)/(Green + NIR), or MNDWI (Xu 2006) with SWIR in place of NIR; water share at NDWI > 0.", vec![req("green", Kind::Any, "array or raster path"), req("nir_or_swir", Kind::Any, "NIR (NDWI) or SWIR (MNDWI)")], |c| {
            let (gr, g) = band(c, "green")?;
            let (n, _) = band(c, "nir_or_swir")?;
            same_len(c, &gr, &n, "nir_or_swir")?;
            let idx = norm_diff(&gr, &n);
            let water = idx.iter().filter(|x| **x > 0.0).count();
            Ok(json!({"ndwi": index_summary(&idx, &g), "water_pixels": water, "water_share_pct": num(100.0 * water as f64 / idx.iter().filter(|x| x.is_finite()).count() as f64)}))
        }),
        Operation::new("index_nbr_dnbr", F, "NBR = (NIR − SWIR2)/(NIR + SWIR2) before and after a fire, dNBR = NBR_pre − NBR_post, and USGS burn-severity class counts (Key & Benson 2006).", vec![req("nir_pre", Kind::Any, "array or raster"), req("swir_pre", Kind::Any, "array or raster"), req("nir_post", Kind::Any, "array or raster"), req("swir_post", Kind::Any, "array or raster")], |c| {
            let (a, g) = band(c, "nir_pre")?;
            let (b, _) = band(c, "swir_pre")?;
            let (d, _) = band(c, "nir_post")?;
            let (e, _) = band(c, "swir_post")?;
            for (x, nm) in [(&b, "swir_pre"), (&d, "nir_post"), (&e, "swir_post")] { same_len(c, &a, x, nm)?; }
            let dnbr: Vec<f64> = norm_diff(&a, &b).iter().zip(norm_diff(&d, &e)).map(|(p, q)| p - q).collect();
            let mut classes: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
            for x in dnbr.iter().filter(|x| x.is_finite()) { *classes.entry(burn_severity_class(*x)).or_default() += 1; }
            Ok(json!({"dnbr": index_summary(&dnbr, &g), "severity_classes": classes}))
        }),
        Operation::new("flood_extent_change", F, "Water masks before and after (water where value ≥ threshold, or NDWI > 0 when giving indices): newly flooded, receded and permanent water pixels and km².", vec![req("pre", Kind::Any, "array or raster"), req("post", Kind::Any, "array or raster"), opt("threshold", Kind::Number, "water if value ≥ threshold", json!(0.5)), opt("pixel_area_km2", Kind::Number, "for inline arrays", Value::Null)], |c| {
            let (a, g) = band(c, "pre")?;
            let (b, _) = band(c, "post")?;
            same_len(c, &a, &b, "post")?;
            let t = c.num("threshold")?;
            let new: Vec<bool> = a.iter().zip(&b).map(|(x, y)| (x.is_nan() || *x < t) && *y >= t).collect();
            let gone: Vec<bool> = a.iter().zip(&b).map(|(x, y)| *x >= t && (y.is_nan() || *y < t)).collect();
            let perm: Vec<bool> = a.iter().zip(&b).map(|(x, y)| *x >= t && *y >= t).collect();
            let pa = c.num_opt("pixel_area_km2")?;
            let area = |m: &[bool]| area_of(m, &g).or(pa.map(|p| p * m.iter().filter(|x| **x).count() as f64));
            Ok(json!({"newly_flooded_pixels": new.iter().filter(|x| **x).count(), "receded_pixels": gone.iter().filter(|x| **x).count(), "permanent_water_pixels": perm.iter().filter(|x| **x).count(), "newly_flooded_km2": area(&new), "receded_km2": area(&gone), "permanent_water_km2": area(&perm)}))
        }),
        Operation::new("burned_area", F, "Burned area from a dNBR grid: pixels and km² with dNBR ≥ threshold (0.1, USGS low severity), plus class counts.", vec![req("dnbr", Kind::Any, "array or raster"), opt("threshold", Kind::Number, "dNBR threshold", json!(0.1)), opt("pixel_area_km2", Kind::Number, "for inline arrays", Value::Null)], |c| {
            let (v, g) = band(c, "dnbr")?;
            let t = c.num("threshold")?;
            let mask: Vec<bool> = v.iter().map(|x| *x >= t).collect();
            let n = mask.iter().filter(|x| **x).count();
            Ok(json!({"burned_pixels": n, "burned_km2": area_of(&mask, &g).or(c.num_opt("pixel_area_km2")?.map(|p| p * n as f64)), "threshold": t}))
        }),
        Operation::new("dem_slope_aspect", F, "Slope (degrees) and aspect (degrees from north) of a DEM by Horn (1981) over interior cells; statistics of slope and the share above `steep_deg`.", vec![req("dem", Kind::Any, "array or raster"), opt("width", Kind::Integer, "row width for arrays", Value::Null), opt("cell_size_m", Kind::Number, "cell size for arrays (m)", Value::Null), opt("steep_deg", Kind::Number, "steep threshold", json!(30.0))], |c| {
            let (z, g) = band(c, "dem")?;
            let (w, dx, dy) = match &g {
                Some(g) => { let t = g.transform; let k = if g.geographic { 111_320.0 } else { 1.0 }; (g.width, t[1].abs() * k, t[5].abs() * k) }
                None => { let w = c.num_opt("width")?.ok_or_else(|| c.invalid("width", "needed for arrays"))? as usize; let s = c.num_opt("cell_size_m")?.ok_or_else(|| c.invalid("cell_size_m", "needed for arrays"))?; (w, s, s) }
            };
            if w < 3 || z.len() % w != 0 || z.len() / w < 3 { return Err(c.refuse(json!({"grid_too_small": {"need": "3x3"}}), "slope needs at least a 3×3 grid")); }
            let h = z.len() / w;
            let mut slopes = Vec::new();
            let mut aspects = Vec::new();
            for y in 1..h - 1 { for x in 1..w - 1 {
                let win = [z[(y-1)*w+x-1], z[(y-1)*w+x], z[(y-1)*w+x+1], z[y*w+x-1], z[y*w+x], z[y*w+x+1], z[(y+1)*w+x-1], z[(y+1)*w+x], z[(y+1)*w+x+1]];
                if win.iter().all(|v| v.is_finite()) { let (s, a) = horn_slope_aspect(&win, dx, dy); slopes.push(s); aspects.push(a); }
            } }
            let steep = c.num("steep_deg")?;
            let mut m = Moments::default();
            m.push_all(&slopes);
            Ok(json!({"slope_deg": m.to_json(), "steep_share_pct": num(100.0 * slopes.iter().filter(|s| **s >= steep).count() as f64 / slopes.len().max(1) as f64), "mean_aspect_deg": num(stats::mean(&stats::finite(&aspects))), "first_slope_deg": slopes.first(), "first_aspect_deg": aspects.first().map(|a| num(*a))}))
        }),
        Operation::new("dem_bathtub_inundation", F, "Bathtub inundation: DEM cells at or below a water level (m), their area, and mean depth.", vec![req("dem", Kind::Any, "array or raster"), req("water_level_m", Kind::Number, "water surface elevation, m"), opt("pixel_area_km2", Kind::Number, "for arrays", Value::Null)], |c| {
            let (z, g) = band(c, "dem")?;
            let lvl = c.num("water_level_m")?;
            let mask: Vec<bool> = z.iter().map(|v| *v <= lvl).collect();
            let depths: Vec<f64> = z.iter().filter(|v| **v <= lvl).map(|v| lvl - v).collect();
            let n = depths.len();
            Ok(json!({"inundated_pixels": n, "inundated_km2": area_of(&mask, &g).or(c.num_opt("pixel_area_km2")?.map(|p| p * n as f64)), "mean_depth_m": num(stats::mean(&depths)), "max_depth_m": num(depths.iter().copied().fold(f64::NAN, f64::max))}))
        }),
        Operation::new("image_rgb_stats", F, "Per-channel min, max, mean and population std of an RGB(A) image (PNG, JPEG...), as inspect_image but with ranges.", vec![req("path", Kind::File, "package-relative image")], |c| {
            let (rel, bytes) = c.file_bytes("path")?;
            let img = image::load_from_memory(&bytes).map_err(|e| DomainError::Input { file: rel, message: format!("not a decodable image: {e}") })?;
            let rgb = img.to_rgb8();
            let mut m = [Moments::default(), Moments::default(), Moments::default()];
            for px in rgb.pixels() { for (k, mk) in m.iter_mut().enumerate() { mk.push_all(&[px.0[k] as f64]); } }
            let channels: Vec<Value> = ["R", "G", "B"].iter().zip(&m).map(|(n, s)| json!({"channel": n, "min": s.min, "max": s.max, "mean": s.mean(), "std": s.std()})).collect();
            Ok(json!({"width": rgb.width(), "height": rgb.height(), "channels": channels}))
        }),
        Operation::new("netcdf_info", F, "NetCDF dimensions, variables (dims, units, long_name) and global attributes (ncdump -h).", vec![nc_path()], |c| {
            let (rel, p) = c.file_path("path")?;
            #[cfg(feature = "netcdf")]
            {
                let f = netcdf::open(&p).map_err(|e| DomainError::Input { file: rel, message: format!("NetCDF: {e}") })?;
                let dims: serde_json::Map<String, Value> = f.dimensions().map(|d| (d.name(), json!(d.len()))).collect();
                let vars: Vec<Value> = f.variables().map(|v| {
                    let attr = |n: &str| v.attributes().find(|a| a.name() == n).and_then(|a| a.value().ok()).map(|a| format!("{a:?}"));
                    json!({"name": v.name(), "dims": v.dimensions().iter().map(|d| d.name()).collect::<Vec<_>>(), "units": attr("units"), "long_name": attr("long_name")})
                }).collect();
                let globals: Vec<String> = f.attributes().map(|a| a.name().to_string()).collect();
                Ok(json!({"dimensions": dims, "variables": vars, "global_attributes": globals}))
            }
            #[cfg(not(feature = "netcdf"))]
            { let _ = (rel, p); Err(feature_needed("netcdf_info", "netcdf")) }
        }),
        Operation::new("netcdf_subset", F, "Statistics of a variable inside a lat/lon box and a time-index range (CDO sellonlatbox + seltimestep), read one time slice at a time.", vec![nc_path(), var(), opt("lat_min", Kind::Number, "deg", json!(-90.0)), opt("lat_max", Kind::Number, "deg", json!(90.0)), opt("lon_min", Kind::Number, "deg", json!(-180.0)), opt("lon_max", Kind::Number, "deg", json!(360.0)), opt("t_start", Kind::Integer, "first time index", json!(0)), opt("t_end", Kind::Integer, "last time index (inclusive; -1 = last)", json!(-1))], |c| {
            let (rel, p) = c.file_path("path")?;
            #[cfg(feature = "netcdf")]
            {
                let ie = |m: String| DomainError::Input { file: rel.clone(), message: m };
                let f = netcdf::open(&p).map_err(|e| ie(format!("NetCDF: {e}")))?;
                let name = c.text("variable")?;
                let v = f.variable(&name).ok_or_else(|| c.refuse(json!({"variable_absent": name}), format!("no variable `{name}`")))?;
                if v.dimensions().len() != 3 { return Err(c.refuse(json!({"dimensions": v.dimensions().len(), "need": 3}), "netcdf_subset needs a (time, lat, lon) variable")); }
                let lats = nc::coord(&f, &["lat", "latitude"]).ok_or_else(|| ie("no lat coordinate".into()))?;
                let lons = nc::coord(&f, &["lon", "longitude"]).ok_or_else(|| ie("no lon coordinate".into()))?;
                let nt = v.dimensions()[0].len();
                let t0 = c.int("t_start")?.max(0) as usize;
                let t1 = { let e = c.int("t_end")?; if e < 0 { nt.saturating_sub(1) } else { (e as usize).min(nt.saturating_sub(1)) } };
                let (a, b, d, e) = (c.num("lat_min")?, c.num("lat_max")?, c.num("lon_min")?, c.num("lon_max")?);
                let keep: Vec<bool> = lats.iter().flat_map(|la| lons.iter().map(move |lo| *la >= a && *la <= b && *lo >= d && *lo <= e)).collect();
                let mut m = Moments::default();
                for t in t0..=t1 { let s = nc::read_slice(&v, t).map_err(ie)?; let sel: Vec<f64> = s.iter().zip(&keep).filter(|(_, k)| **k).map(|(x, _)| *x).collect(); m.push_all(&sel); }
                let mut out = m.to_json();
                out["cells_in_box"] = json!(keep.iter().filter(|k| **k).count());
                out["time_steps"] = json!(t1 + 1 - t0.min(t1 + 1));
                Ok(out)
            }
            #[cfg(not(feature = "netcdf"))]
            { let _ = (rel, p); Err(feature_needed("netcdf_subset", "netcdf")) }
        }),
        Operation::new("netcdf_field_mean", F, "cos(latitude)-weighted area mean of a (time, lat, lon) variable per time step (CDO fldmean).", vec![nc_path(), var()], |c| {
            let (rel, p) = c.file_path("path")?;
            #[cfg(feature = "netcdf")]
            {
                let ie = |m: String| DomainError::Input { file: rel.clone(), message: m };
                let f = netcdf::open(&p).map_err(|e| ie(format!("NetCDF: {e}")))?;
                let name = c.text("variable")?;
                let v = f.variable(&name).ok_or_else(|| c.refuse(json!({"variable_absent": name}), format!("no variable `{name}`")))?;
                if v.dimensions().len() < 2 { return Err(c.refuse(json!({"dimensions": v.dimensions().len(), "need": ">=2"}), "field mean needs a gridded variable")); }
                let means = if v.dimensions().len() == 2 { let w = nc::lat_weights(&f, &v); vec![nc::weighted_mean(&nc::read_var(&v).map_err(ie)?, &w)] } else { nc::field_means(&f, &v).map_err(ie)? };
                Ok(json!({"field_mean": means.iter().map(|x| num(*x)).collect::<Vec<_>>(), "overall_mean": num(stats::mean(&stats::finite(&means)))}))
            }
            #[cfg(not(feature = "netcdf"))]
            { let _ = (rel, p); Err(feature_needed("netcdf_field_mean", "netcdf")) }
        }),
        Operation::new("netcdf_time_stat", F, "Per-cell statistic over time (CDO timmean / timmax / timmin), streamed one time slice at a time, summarised over the grid (min, max, cos-lat mean).", vec![nc_path(), var(), opt("stat", Kind::Text, "mean | max | min", json!("mean"))], |c| {
            let (rel, p) = c.file_path("path")?;
            #[cfg(feature = "netcdf")]
            {
                let ie = |m: String| DomainError::Input { file: rel.clone(), message: m };
                let f = netcdf::open(&p).map_err(|e| ie(format!("NetCDF: {e}")))?;
                let name = c.text("variable")?;
                let stat = c.text("stat")?;
                let v = f.variable(&name).ok_or_else(|| c.refuse(json!({"variable_absent": name}), format!("no variable `{name}`")))?;
                let nt = v.dimensions().first().map(|d| d.len()).unwrap_or(0);
                need(c, "variable", nt, 1)?;
                let mode = match stat.as_str() { "mean" => nc::TimeStat::Mean, "max" => nc::TimeStat::Max, "min" => nc::TimeStat::Min, other => return Err(c.invalid("stat", format!("`{other}` is not mean, max or min"))) };
                let acc = nc::time_reduce(&v, mode).map_err(ie)?;
                let w = nc::lat_weights(&f, &v);
                let mut m = Moments::default();
                m.push_all(&acc);
                let mut out = m.to_json();
                out["weighted_mean"] = num(nc::weighted_mean(&acc, &w));
                out["time_steps"] = json!(nt);
                out["stat"] = json!(stat);
                Ok(out)
            }
            #[cfg(not(feature = "netcdf"))]
            { let _ = (rel, p); Err(feature_needed("netcdf_time_stat", "netcdf")) }
        }),
        Operation::new("netcdf_anomaly", F, "Field-mean anomaly per time step of a variable against the time mean of a climatology variable (same grid; CDO sub with timmean), cos-lat weighted.", vec![nc_path(), var(), req("climatology_path", Kind::File, "package-relative NetCDF with the baseline"), opt("climatology_variable", Kind::Text, "default: same name", Value::Null)], |c| {
            let (rel, p) = c.file_path("path")?;
            let (crel, cp) = c.file_path("climatology_path")?;
            #[cfg(feature = "netcdf")]
            {
                let ie = |file: &str, m: String| DomainError::Input { file: file.to_string(), message: m };
                let name = c.text("variable")?;
                let cname = c.args().get("climatology_variable").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| name.clone());
                let f = netcdf::open(&p).map_err(|e| ie(&rel, format!("NetCDF: {e}")))?;
                let g = netcdf::open(&cp).map_err(|e| ie(&crel, format!("NetCDF: {e}")))?;
                let v = f.variable(&name).ok_or_else(|| c.refuse(json!({"variable_absent": name}), "variable absent"))?;
                let cv = g.variable(&cname).ok_or_else(|| c.refuse(json!({"variable_absent": cname}), "climatology variable absent"))?;
                let cl = nc::field_means(&g, &cv).map_err(|m| ie(&crel, m))?;
                let base = stats::mean(&stats::finite(&cl));
                let series = nc::field_means(&f, &v).map_err(|m| ie(&rel, m))?;
                Ok(json!({"baseline_field_mean": base, "anomaly": series.iter().map(|x| num(x - base)).collect::<Vec<_>>(), "max_anomaly": num(series.iter().map(|x| x - base).fold(f64::NEG_INFINITY, f64::max))}))
            }
            #[cfg(not(feature = "netcdf"))]
            { let _ = (rel, p, crel, cp); Err(feature_needed("netcdf_anomaly", "netcdf")) }
        }),
    ]
}
