//! File readers of the domain operations: GeoTIFF and OGR layers through
//! `gdal` (feature `gdal`), NetCDF through `netcdf` (feature `netcdf`),
//! streamed (row blocks, time slices) with the accumulators the statistics
//! use. A leaf under the operations (`raster`, `vector`, `input`), so
//! reading a format never imports an operation module.

use crate::stats::num;
use serde_json::{json, Value};
use std::path::Path;

/// A 1-D series and its optional labels (time coordinate).
pub(crate) type Columns = (Vec<f64>, Option<Vec<String>>);

/// Largest band (pixels) loaded whole by index and patch operations.
pub const MAX_WHOLE_BAND_PIXELS: usize = 200_000_000;

/// Streaming accumulator of min/max/sum/sum of squares.
#[derive(Debug, Clone, Copy)]
pub struct Moments {
    /// Valid values seen.
    pub n: u64,
    /// All values seen (valid or not).
    pub total: u64,
    /// Sum.
    pub sum: f64,
    /// Sum of squares about the shift.
    pub sumsq: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    shift: Option<f64>,
}

impl Default for Moments {
    fn default() -> Self {
        Self {
            n: 0,
            total: 0,
            sum: 0.0,
            sumsq: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            shift: None,
        }
    }
}

impl Moments {
    /// Adds values (non-finite ones count as invalid).
    pub fn push_all(&mut self, values: &[f64]) {
        for &v in values {
            self.total += 1;
            if v.is_finite() {
                let k = *self.shift.get_or_insert(v);
                let d = v - k;
                self.n += 1;
                self.sum += d;
                self.sumsq += d * d;
                self.min = self.min.min(v);
                self.max = self.max.max(v);
            }
        }
    }

    /// Mean.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.shift.unwrap_or(0.0) + self.sum / self.n as f64
        }
    }

    /// Population standard deviation (as `gdalinfo -stats`).
    pub fn std(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let m = self.sum / self.n as f64;
        (self.sumsq / self.n as f64 - m * m).max(0.0).sqrt()
    }

    /// JSON summary.
    pub fn to_json(&self) -> Value {
        json!({"min": num(self.min), "max": num(self.max), "mean": num(self.mean()), "std": num(self.std()), "valid_count": self.n, "valid_fraction": num(self.n as f64 / self.total as f64)})
    }
}

/// Geometry of a raster grid.
#[derive(Debug, Clone, PartialEq)]
pub struct GridInfo {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// GDAL geotransform.
    pub transform: [f64; 6],
    /// Whether the CRS is geographic (degrees).
    pub geographic: bool,
}

impl GridInfo {
    /// Area (km²) of one pixel in row `row`: spherical cell area for
    /// geographic grids, |a·e| (m² → km²) for projected ones.
    pub fn pixel_area_km2(&self, row: usize) -> f64 {
        let t = &self.transform;
        if self.geographic {
            let lat0 = t[3] + t[5] * row as f64;
            let lat1 = lat0 + t[5];
            let r = crate::geometry::EARTH_RADIUS_KM;
            (r * r
                * t[1].abs().to_radians()
                * (lat0.to_radians().sin() - lat1.to_radians().sin()).abs())
            .abs()
        } else {
            (t[1] * t[5] - t[2] * t[4]).abs() / 1e6
        }
    }
}

#[cfg(feature = "gdal")]
pub(crate) mod gdal_io {
    use super::*;
    use gdal::vector::LayerAccess;
    use gdal::Dataset;

    pub fn open(path: &Path) -> std::result::Result<Dataset, String> {
        limit_block_cache();
        Dataset::open(path).map_err(|e| format!("GDAL cannot open: {e}"))
    }

    /// GDAL's block cache defaults to 5% of RAM, so one streamed pass over
    /// a 400 MB raster would leave all of it resident. The operations read
    /// each block once (row blocks) or a few pixels, for which 64 MB is
    /// plenty; a `GDAL_CACHEMAX` the user set (environment or GDAL config)
    /// is left alone. GDAL reads the setting when its cache is first used.
    fn limit_block_cache() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let configured = std::env::var_os("GDAL_CACHEMAX").is_some()
                || !gdal::config::get_config_option("GDAL_CACHEMAX", "")
                    .unwrap_or_default()
                    .is_empty();
            if !configured {
                let _ = gdal::config::set_config_option("GDAL_CACHEMAX", "64");
            }
        });
    }

    pub fn grid(ds: &Dataset) -> GridInfo {
        let (width, height) = ds.raster_size();
        let transform = ds
            .geo_transform()
            .unwrap_or([0.0, 1.0, 0.0, 0.0, 0.0, -1.0]);
        let wkt = ds.projection();
        let geographic = (wkt.starts_with("GEOGCS") || wkt.starts_with("GEOGCRS"))
            || (wkt.is_empty() && transform[1].abs() < 1.0 && transform[3].abs() <= 90.0);
        GridInfo {
            width,
            height,
            transform,
            geographic,
        }
    }

    /// Streams band `band` in row blocks: `f(first_row, width, values)`.
    pub fn for_rows(
        ds: &Dataset,
        band: usize,
        mut f: impl FnMut(usize, usize, &[f64]),
    ) -> std::result::Result<(), String> {
        let b = ds
            .rasterband(band)
            .map_err(|e| format!("band {band}: {e}"))?;
        let (w, h) = b.size();
        let nodata = b.no_data_value();
        let rows = (4_000_000 / w.max(1)).clamp(1, h.max(1));
        let mut y = 0;
        while y < h {
            let n = rows.min(h - y);
            let buf = b
                .read_as::<f64>((0, y as isize), (w, n), (w, n), None)
                .map_err(|e| format!("read rows {y}..{}: {e}", y + n))?;
            let (_, mut data) = buf.into_shape_and_vec();
            if let Some(nd) = nodata {
                for v in &mut data {
                    if *v == nd || (nd.is_nan() && v.is_nan()) {
                        *v = f64::NAN;
                    }
                }
            }
            f(y, w, &data);
            y += n;
        }
        Ok(())
    }

    pub fn read_all(ds: &Dataset, band: usize) -> std::result::Result<Vec<f64>, String> {
        let (w, h) = ds.raster_size();
        if w * h > MAX_WHOLE_BAND_PIXELS {
            return Err(format!(
                "raster of {w}×{h} pixels exceeds the whole-band limit"
            ));
        }
        let mut out = Vec::with_capacity(w * h);
        for_rows(ds, band, |_, _, v| out.extend_from_slice(v))?;
        Ok(out)
    }

    pub fn info(ds: &Dataset) -> Value {
        let g = grid(ds);
        let bands: Vec<Value> = (1..=ds.raster_count())
            .filter_map(|i| ds.rasterband(i).ok().map(|b| json!({"band": i, "dtype": format!("{:?}", b.band_type()), "nodata": b.no_data_value(), "block_size": b.block_size()})))
            .collect();
        let wkt = ds.projection();
        json!({"width": g.width, "height": g.height, "bands": bands, "geotransform": g.transform, "pixel_size": [g.transform[1], g.transform[5]], "crs_wkt_head": wkt.chars().take(160).collect::<String>(), "geographic": g.geographic, "driver": ds.driver().short_name()})
    }

    pub fn features(path: &Path) -> std::result::Result<Vec<crate::geometry::Feature>, String> {
        let target = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
            || crate::formats::is_zip(path)
        {
            format!("/vsizip/{}", path.display())
        } else {
            path.display().to_string()
        };
        let ds = Dataset::open(&target).map_err(|e| format!("OGR cannot open: {e}"))?;
        let mut out = Vec::new();
        for li in 0..ds.layer_count() {
            let mut layer = ds.layer(li).map_err(|e| e.to_string())?;
            for feature in layer.features() {
                let geometry = feature
                    .geometry()
                    .and_then(|g| g.json().ok())
                    .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                    .and_then(|v| crate::geometry::parse_geometry(&v));
                let mut properties = serde_json::Map::new();
                for (name, value) in feature.fields() {
                    use gdal::vector::FieldValue as FV;
                    let v = match value {
                        Some(FV::IntegerValue(i)) => json!(i),
                        Some(FV::Integer64Value(i)) => json!(i),
                        Some(FV::RealValue(x)) => num(x),
                        Some(FV::StringValue(s)) => json!(s),
                        Some(FV::DateValue(d)) => json!(d.to_string()),
                        Some(FV::DateTimeValue(d)) => json!(d.to_rfc3339()),
                        Some(other) => json!(format!("{other:?}")),
                        None => Value::Null,
                    };
                    properties.insert(name, v);
                }
                out.push(crate::geometry::Feature {
                    geometry,
                    properties,
                });
            }
        }
        Ok(out)
    }
}

#[cfg(feature = "gdal")]
pub(crate) fn is_zip(path: &Path) -> bool {
    std::fs::File::open(path)
        .and_then(|mut f| {
            let mut head = [0u8; 4];
            std::io::Read::read_exact(&mut f, &mut head).map(|_| head == *b"PK\x03\x04")
        })
        .unwrap_or(false)
}

/// Features of any OGR dataset (zipped shapefiles through `/vsizip/`).
#[cfg(feature = "gdal")]
pub fn ogr_features(path: &Path) -> std::result::Result<Vec<crate::geometry::Feature>, String> {
    gdal_io::features(path)
}

/// Without `gdal`, non-GeoJSON vector layers are refused clearly.
#[cfg(not(feature = "gdal"))]
pub fn ogr_features(_path: &Path) -> std::result::Result<Vec<crate::geometry::Feature>, String> {
    Err("this build lacks the `gdal` feature needed to read non-GeoJSON vector layers".into())
}

/// A 1-D NetCDF variable, or the cos(latitude)-weighted field mean per
/// time step of a gridded one, with an optional time coordinate.
#[cfg(feature = "netcdf")]
pub fn netcdf_series(
    path: &Path,
    field: &str,
    time_field: Option<&str>,
) -> std::result::Result<Columns, String> {
    let file = netcdf::open(path).map_err(|e| format!("NetCDF: {e}"))?;
    let var = file
        .variable(field)
        .ok_or_else(|| format!("no variable `{field}` in NetCDF file"))?;
    let values = if var.dimensions().len() <= 1 {
        nc::read_var(&var)?
    } else {
        nc::field_means(&file, &var)?
    };
    let times = match time_field {
        Some(t) => {
            let tv = file
                .variable(t)
                .ok_or_else(|| format!("no variable `{t}` in NetCDF file"))?;
            Some(nc::read_var(&tv)?.iter().map(|x| format!("{x}")).collect())
        }
        None => None,
    };
    Ok((values, times))
}

/// Without the `netcdf` feature, NetCDF inputs are refused with a clear error.
#[cfg(not(feature = "netcdf"))]
pub fn netcdf_series(
    _path: &Path,
    _field: &str,
    _time_field: Option<&str>,
) -> std::result::Result<Columns, String> {
    Err("this build lacks the `netcdf` feature; rebuild with --features netcdf".into())
}

#[cfg(feature = "netcdf")]
pub(crate) mod nc {
    use crate::nc_tiles::{for_each_tile, Tiling};
    use netcdf::{Extent, Variable};

    /// A numeric attribute, looked up by listing (asking HDF5 for a missing
    /// attribute prints diagnostics to stderr).
    fn attr_f64(var: &Variable, name: &str) -> Option<f64> {
        var.attributes()
            .find(|a| a.name() == name)
            .and_then(|a| a.value().ok())
            .and_then(|v| f64::try_from(v).ok())
    }

    fn fill_of(var: &Variable) -> Option<f64> {
        attr_f64(var, "_FillValue").or_else(|| attr_f64(var, "missing_value"))
    }

    fn unpack(var: &Variable, raw: Vec<f64>) -> Vec<f64> {
        let fill = fill_of(var);
        let scale = attr_f64(var, "scale_factor").unwrap_or(1.0);
        let offset = attr_f64(var, "add_offset").unwrap_or(0.0);
        raw.into_iter()
            .map(|v| {
                if Some(v) == fill || !v.is_finite() || v.abs() > 9.0e35 {
                    f64::NAN
                } else {
                    v * scale + offset
                }
            })
            .collect()
    }

    pub fn read_var(var: &Variable) -> std::result::Result<Vec<f64>, String> {
        let raw: Vec<f64> = var
            .get_values::<f64, _>(..)
            .map_err(|e| format!("NetCDF `{}`: {e}", var.name()))?;
        Ok(unpack(var, raw))
    }

    /// One slice along the first dimension.
    pub fn read_slice(var: &Variable, t: usize) -> std::result::Result<Vec<f64>, String> {
        let mut ext: Vec<Extent> = vec![t.into()];
        for _ in 1..var.dimensions().len() {
            ext.push((..).into());
        }
        let raw: Vec<f64> = var
            .get_values::<f64, _>(ext)
            .map_err(|e| format!("NetCDF `{}`[{t}]: {e}", var.name()))?;
        Ok(unpack(var, raw))
    }

    /// Per-cell reduction over the first dimension of a variable: `Mean`,
    /// `Max` or `Min` of the unpacked values, NaN where a cell has no valid
    /// value. Values equal to the fill value, non-finite, beyond ±9e35 or
    /// non-finite after `scale_factor`/`add_offset` are skipped (the
    /// unpacking of [`read_slice`] followed by a finite check), and each
    /// cell is accumulated in time order, so results match a slice-by-slice
    /// reduction bit for bit.
    ///
    /// Streams the variable in tiles of whole rows ([`crate::nc_tiles`]:
    /// contiguous runs of at least 128 KiB per time step, about 768 KiB per
    /// tile, or whole chunks of a chunked variable). Memory: the per-cell
    /// accumulators (12 bytes a cell) plus two tile buffers. A tile is
    /// reduced on a second thread while the next one is read (one thread
    /// on a one-core machine); 4-byte floats are read as such, not
    /// converted to `f64` by the library.
    pub fn time_reduce(var: &Variable, stat: TimeStat) -> std::result::Result<Vec<f64>, String> {
        let unpack = Unpack::of(var);
        let is_f32 = matches!(
            var.vartype(),
            netcdf::types::NcVariableType::Float(netcdf::types::FloatType::F32)
        );
        let tiling = Tiling::of(var, if is_f32 { 4 } else { 8 });
        let per = tiling.cells();
        let plain = is_f32.then(|| PlainF32::new(&unpack)).flatten();
        let mut acc = vec![
            if stat == TimeStat::Mean {
                0.0
            } else {
                f64::NAN
            };
            per
        ];
        let mut cnt = vec![0u32; per];
        if is_f32 {
            for_each_tile::<f32, _>(var, &tiling, |tile, raw| {
                let (a, n) = (
                    &mut acc[tile.c0..tile.c0 + tile.cells],
                    &mut cnt[tile.c0..tile.c0 + tile.cells],
                );
                match plain {
                    Some(p) => p.reduce_block(raw, tile.cells, a, n, &unpack, stat),
                    None => reduce_block(raw, tile.cells, a, n, &unpack, stat),
                }
            })?;
        } else {
            for_each_tile::<f64, _>(var, &tiling, |tile, raw| {
                reduce_block(
                    raw,
                    tile.cells,
                    &mut acc[tile.c0..tile.c0 + tile.cells],
                    &mut cnt[tile.c0..tile.c0 + tile.cells],
                    &unpack,
                    stat,
                );
            })?;
        }
        if stat == TimeStat::Mean {
            for (a, n) in acc.iter_mut().zip(&cnt) {
                *a = if *n == 0 {
                    f64::NAN
                } else {
                    *a / f64::from(*n)
                };
            }
        }
        Ok(acc)
    }

    /// The mean of unpacked 4-byte floats without `scale_factor`/`add_offset`
    /// (the common case), tested in `f32`: twice the lanes of the general
    /// kernel and no unpacking arithmetic. Equivalent to the general kernel:
    /// `f64::from(x) == fill` iff `x == fill32`, `|f64::from(x)| <= 9e35` iff
    /// `|x| <= limit`, `x * 1.0 + 0.0` is `x` (or +0 for −0, and adding ±0
    /// to a running sum that is never −0 gives the same sum) and is finite.
    #[derive(Clone, Copy)]
    struct PlainF32 {
        /// The fill value as an `f32`, NaN (matches nothing) when the fill
        /// value is absent or no `f32` equals it.
        fill: f32,
        /// The largest `f32` not above 9e35.
        limit: f32,
    }

    impl PlainF32 {
        fn new(u: &Unpack) -> Option<Self> {
            // Only exact 1 and 0: bit-identical results are the contract.
            #[allow(clippy::float_cmp)]
            if u.scale != 1.0 || u.offset != 0.0 {
                return None;
            }
            let f = u.fill as f32;
            let fill = if f64::from(f) == u.fill { f } else { f32::NAN };
            let mut limit = 9.0e35_f64 as f32;
            if f64::from(limit) > 9.0e35 {
                // the next `f32` towards zero (positive and finite here)
                limit = f32::from_bits(limit.to_bits() - 1);
            }
            Some(Self { fill, limit })
        }

        /// Whether a value counts (not the fill value, within ±9e35).
        #[inline(always)]
        fn valid(self, x: f32) -> bool {
            x != self.fill && x.abs() <= self.limit
        }

        /// [`reduce_block`] for this case: `raw` holds k time steps of `per`
        /// cells, folded into the running sums/counts in time order.
        ///
        /// Each cell chunk is first checked in `f32`; when every value of
        /// the chunk counts (the usual case), each group of [`LANES`] cells
        /// keeps its running values in registers across the tile's time
        /// steps ([`fold_all_valid`]) and the counts grow by k once. Else
        /// the chunk takes the general per-step fold. Both add (or compare)
        /// the same values in the same order.
        fn reduce_block(
            self,
            raw: &[f32],
            per: usize,
            acc: &mut [f64],
            cnt: &mut [u32],
            u: &Unpack,
            stat: TimeStat,
        ) {
            const CHUNK: usize = 1024;
            let k = raw.len() / per.max(1);
            let mut c0 = 0;
            while c0 < per {
                let len = CHUNK.min(per - c0);
                let all_valid = (0..k).all(|j| {
                    raw[j * per + c0..j * per + c0 + len]
                        .iter()
                        .fold(true, |ok, x| ok & self.valid(*x))
                });
                let (a, n) = (&mut acc[c0..c0 + len], &mut cnt[c0..c0 + len]);
                let k32 = u32::try_from(k).unwrap_or(u32::MAX);
                if all_valid {
                    // `x * 1.0 + 0.0` is the general unpacking with this
                    // case's scale and offset (it turns −0 into +0, which
                    // max and min may tell apart).
                    //
                    // Max and min are taken in `f32` and folded into `a`
                    // once: valid values are never NaN and `+ 0.0` turns −0
                    // into +0 in `f32` as in `f64`, so the order is total,
                    // the fold associative, and `f32` → `f64` exact and
                    // monotone: the same bits as folding
                    // `a.max(f64::from(x) * 1.0 + 0.0)` step by step, with
                    // twice the lanes and no NaN handling (`f64::max` of a
                    // NaN start returns the other value).
                    match stat {
                        TimeStat::Mean => fold_all_valid::<f64, LANES>(
                            raw,
                            per,
                            c0,
                            a,
                            |a| a,
                            |a, x| a + f64::from(x),
                            |_, s| s,
                        ),
                        TimeStat::Max => fold_all_valid::<f32, LANES_F32>(
                            raw,
                            per,
                            c0,
                            a,
                            |_| f32::NEG_INFINITY,
                            |s, x| if x + 0.0 > s { x + 0.0 } else { s },
                            |a, s| a.max(f64::from(s)),
                        ),
                        TimeStat::Min => fold_all_valid::<f32, LANES_F32>(
                            raw,
                            per,
                            c0,
                            a,
                            |_| f32::INFINITY,
                            |s, x| if x + 0.0 < s { x + 0.0 } else { s },
                            |a, s| a.min(f64::from(s)),
                        ),
                    }
                    n.iter_mut().for_each(|n| *n += k32);
                } else {
                    for j in 0..k {
                        let r = &raw[j * per + c0..j * per + c0 + len];
                        match stat {
                            TimeStat::Mean => {
                                for ((a, n), x) in a.iter_mut().zip(n.iter_mut()).zip(r) {
                                    let ok = self.valid(*x);
                                    *a += if ok { f64::from(*x) } else { 0.0 };
                                    *n += u32::from(ok);
                                }
                            }
                            TimeStat::Max => fold(a, n, r, u, f64::max),
                            TimeStat::Min => fold(a, n, r, u, f64::min),
                        }
                    }
                }
                c0 += len;
            }
        }
    }

    /// `f64` running values [`fold_all_valid`] keeps in registers.
    const LANES: usize = 8;
    /// `f32` running values [`fold_all_valid`] keeps in registers (four
    /// SSE registers).
    const LANES_F32: usize = 16;

    /// Folds the `a.len()` cells starting at `c0` of every time step of
    /// `raw` (steps of `per` cells) into `a`, in time order for each cell:
    /// `a[i] = end(a[i], op(… op(op(start(a[i]), x0), x1) …, xk))`, with
    /// `L` cells at a time kept in registers (as `A`) across the steps.
    /// Nothing changes when `raw` holds no step.
    #[inline(always)]
    fn fold_all_valid<A: Copy + Default, const L: usize>(
        raw: &[f32],
        per: usize,
        c0: usize,
        a: &mut [f64],
        start: impl Fn(f64) -> A,
        op: impl Fn(A, f32) -> A,
        end: impl Fn(f64, A) -> f64,
    ) {
        let k = raw.len() / per.max(1);
        if k == 0 {
            return;
        }
        let len = a.len();
        let mut i = 0;
        while i + L <= len {
            let mut s = [A::default(); L];
            for (s, a) in s.iter_mut().zip(&a[i..i + L]) {
                *s = start(*a);
            }
            for j in 0..k {
                let at = j * per + c0 + i;
                let r = &raw[at..at + L];
                for l in 0..L {
                    s[l] = op(s[l], r[l]);
                }
            }
            for (a, s) in a[i..i + L].iter_mut().zip(s) {
                *a = end(*a, s);
            }
            i += L;
        }
        for (i, a) in a.iter_mut().enumerate().skip(i) {
            let mut s = start(*a);
            for j in 0..k {
                s = op(s, raw[j * per + c0 + i]);
            }
            *a = end(*a, s);
        }
    }

    /// The statistic of [`time_reduce`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TimeStat {
        /// Mean of the valid values.
        Mean,
        /// Maximum of the valid values.
        Max,
        /// Minimum of the valid values.
        Min,
    }

    /// Unpacking parameters (fill value NaN when absent).
    struct Unpack {
        fill: f64,
        scale: f64,
        offset: f64,
    }

    impl Unpack {
        /// The variable's `_FillValue` (else `missing_value`),
        /// `scale_factor` and `add_offset`.
        fn of(var: &Variable) -> Self {
            Self {
                // `x != NaN` is always true: no fill value means nothing matches.
                fill: fill_of(var).unwrap_or(f64::NAN),
                scale: attr_f64(var, "scale_factor").unwrap_or(1.0),
                offset: attr_f64(var, "add_offset").unwrap_or(0.0),
            }
        }
    }

    /// Folds `raw` (k time steps of `per` cells each) into the running
    /// per-cell `acc`/`cnt`, in time order for each cell.
    fn reduce_block<T: Copy + Into<f64>>(
        raw: &[T],
        per: usize,
        acc: &mut [f64],
        cnt: &mut [u32],
        u: &Unpack,
        stat: TimeStat,
    ) {
        for_each_chunk(raw, per, acc, cnt, |a, n, r| match stat {
            TimeStat::Mean => fold(a, n, r, u, |a, v| a + v),
            TimeStat::Max => fold(a, n, r, u, f64::max),
            TimeStat::Min => fold(a, n, r, u, f64::min),
        });
    }

    /// Walks `raw` (k time steps of `per` cells) in cell chunks small enough
    /// to stay in cache, calling `f(acc, cnt, values)` for each time step of
    /// each chunk, in time order for each cell.
    #[inline(always)]
    fn for_each_chunk<T>(
        raw: &[T],
        per: usize,
        acc: &mut [f64],
        cnt: &mut [u32],
        mut f: impl FnMut(&mut [f64], &mut [u32], &[T]),
    ) {
        const CHUNK: usize = 2048;
        let k = raw.len() / per.max(1);
        let mut c0 = 0;
        while c0 < per {
            let len = CHUNK.min(per - c0);
            let a = &mut acc[c0..c0 + len];
            let n = &mut cnt[c0..c0 + len];
            for j in 0..k {
                f(a, n, &raw[j * per + c0..j * per + c0 + len]);
            }
            c0 += len;
        }
    }

    /// One time step of one cell chunk, without branches: a value counts when
    /// it is not the fill value, lies within ±9e35 (so is finite) and stays
    /// finite after unpacking. `op(a, v)` is the accumulate; a skipped value
    /// leaves `a` as it is (for the mean, `a + 0.0 == a` as the running sum
    /// starts at +0 and so is never −0).
    #[inline(always)]
    fn fold<T: Copy + Into<f64>>(
        a: &mut [f64],
        n: &mut [u32],
        r: &[T],
        u: &Unpack,
        op: impl Fn(f64, f64) -> f64,
    ) {
        for ((a, n), x) in a.iter_mut().zip(n.iter_mut()).zip(r) {
            let x: f64 = (*x).into();
            let v = x * u.scale + u.offset;
            let ok = x != u.fill && x.abs() <= 9.0e35 && v.abs() <= f64::MAX;
            *a = if ok { op(*a, v) } else { *a };
            *n += u32::from(ok);
        }
    }

    pub fn coord(file: &netcdf::File, names: &[&str]) -> Option<Vec<f64>> {
        names
            .iter()
            .find_map(|n| file.variable(n))
            .and_then(|v| read_var(&v).ok())
    }

    pub fn lat_weights(file: &netcdf::File, var: &Variable) -> Vec<f64> {
        let dims = var.dimensions();
        let ny = dims
            .get(dims.len().saturating_sub(2))
            .map(|d| d.len())
            .unwrap_or(1);
        let nx = dims.last().map(|d| d.len()).unwrap_or(1);
        let lats = coord(file, &["lat", "latitude", "y"]).filter(|l| l.len() == ny);
        let mut w = Vec::with_capacity(ny * nx);
        for j in 0..ny {
            let wj = lats
                .as_ref()
                .map(|l| l[j].to_radians().cos().max(0.0))
                .unwrap_or(1.0);
            w.extend(std::iter::repeat_n(wj, nx));
        }
        w
    }

    pub fn weighted_mean(values: &[f64], weights: &[f64]) -> f64 {
        let (mut s, mut ws) = (0.0, 0.0);
        for (v, w) in values.iter().zip(weights.iter().cycle()) {
            if v.is_finite() {
                s += v * w;
                ws += w;
            }
        }
        if ws == 0.0 {
            f64::NAN
        } else {
            s / ws
        }
    }

    /// The cos(latitude)-weighted mean of each time step: per step, the
    /// sum of `value × weight` and of `weight` over the valid unpacked
    /// values (as [`unpack`] then [`weighted_mean`] of each slice, cell by
    /// cell in file order, so the same sums bit for bit), NaN when a step
    /// has no valid value.
    ///
    /// Streams tiles of several time steps ([`crate::nc_tiles`]); the
    /// kernel walks a tile cell by cell and, for each cell, the tile's
    /// steps, so each step's running sums form an independent chain and
    /// the steps' additions overlap. Memory: one weight per cell, two sums
    /// per time step and two tile buffers.
    pub fn field_means(
        file: &netcdf::File,
        var: &Variable,
    ) -> std::result::Result<Vec<f64>, String> {
        let unpack = Unpack::of(var);
        let is_f32 = matches!(
            var.vartype(),
            netcdf::types::NcVariableType::Float(netcdf::types::FloatType::F32)
        );
        let tiling = Tiling::of(var, if is_f32 { 4 } else { 8 });
        let per = tiling.cells();
        // The weights of one step's cells, as `weighted_mean` pairs them.
        let w: Vec<f64> = lat_weights(file, var)
            .into_iter()
            .cycle()
            .take(per)
            .collect();
        let mut s = vec![0.0; tiling.nt];
        let mut ws = vec![0.0; tiling.nt];
        if is_f32 {
            for_each_tile::<f32, _>(var, &tiling, |tile, raw| {
                weighted_sums(raw, tile, &w, &mut s, &mut ws, &unpack);
            })?;
        } else {
            for_each_tile::<f64, _>(var, &tiling, |tile, raw| {
                weighted_sums(raw, tile, &w, &mut s, &mut ws, &unpack);
            })?;
        }
        Ok(s.iter()
            .zip(&ws)
            .map(|(s, ws)| if *ws == 0.0 { f64::NAN } else { s / ws })
            .collect())
    }

    /// Adds one tile's valid values to the running sums of its steps: for
    /// each cell (cells beyond `w.len()` carry no weight and are skipped,
    /// as `zip` skips them), for each step, `s += v × w` and `ws += w`. A
    /// skipped value adds +0 to sums that start at +0 and so are never −0,
    /// which leaves them as they are.
    ///
    /// [`STEPS`] steps at a time, in blocks of [`CELLS`] cells: the terms
    /// of each step are first computed branch-free (so they vectorise),
    /// then added cell by cell to the steps' running sums, which are
    /// independent chains and so overlap. When every value of the block
    /// counts, the weight is added directly.
    #[inline(always)]
    fn weighted_sums<T: Copy + Into<f64>>(
        raw: &[T],
        tile: &crate::nc_tiles::Tile,
        w: &[f64],
        s: &mut [f64],
        ws: &mut [f64],
        u: &Unpack,
    ) {
        let (cells, k) = (tile.cells, tile.k);
        let w = &w[tile.c0.min(w.len())..(tile.c0 + cells).min(w.len())];
        let mut p = [[0f64; CELLS]; STEPS];
        let mut q = [[0f64; CELLS]; STEPS];
        let mut j0 = 0;
        while j0 < k {
            let kk = STEPS.min(k - j0);
            let (mut sa, mut wa) = ([0f64; STEPS], [0f64; STEPS]);
            sa[..kk].copy_from_slice(&s[tile.t0 + j0..tile.t0 + j0 + kk]);
            wa[..kk].copy_from_slice(&ws[tile.t0 + j0..tile.t0 + j0 + kk]);
            let mut c = 0;
            while c < w.len() {
                let len = CELLS.min(w.len() - c);
                let wc = &w[c..c + len];
                let mut all_ok = true;
                for (j, (pj, qj)) in p.iter_mut().zip(q.iter_mut()).enumerate() {
                    let (pj, qj) = (&mut pj[..len], &mut qj[..len]);
                    if j >= kk {
                        pj.fill(0.0);
                        qj.fill(0.0);
                        continue;
                    }
                    let at = (j0 + j) * cells + c;
                    let r = &raw[at..at + len];
                    let mut ok_all = true;
                    for i in 0..len {
                        let x: f64 = r[i].into();
                        let wi = wc[i];
                        let v = x * u.scale + u.offset;
                        let ok = (x != u.fill) & (x.abs() <= 9.0e35) & (v.abs() <= f64::MAX);
                        // `if ok { a } else { 0.0 }` as a bit mask: the
                        // compiler keeps it branch-free and vectorises it.
                        let mask = u64::from(ok).wrapping_neg();
                        pj[i] = f64::from_bits((v * wi).to_bits() & mask);
                        qj[i] = f64::from_bits(wi.to_bits() & mask);
                        ok_all &= ok;
                    }
                    all_ok &= ok_all;
                }
                if all_ok {
                    for (i, wi) in wc.iter().enumerate() {
                        for j in 0..STEPS {
                            sa[j] += p[j][i];
                            wa[j] += wi;
                        }
                    }
                } else {
                    for i in 0..len {
                        for j in 0..STEPS {
                            sa[j] += p[j][i];
                            wa[j] += q[j][i];
                        }
                    }
                }
                c += len;
            }
            s[tile.t0 + j0..tile.t0 + j0 + kk].copy_from_slice(&sa[..kk]);
            ws[tile.t0 + j0..tile.t0 + j0 + kk].copy_from_slice(&wa[..kk]);
            j0 += kk;
        }
    }

    /// Time steps summed side by side by [`weighted_sums`].
    const STEPS: usize = 4;
    /// Cells per block of [`weighted_sums`]' scratch (2 × 16 KiB).
    const CELLS: usize = 256;

    /// The tiled read path against the slice-by-slice path it replaced
    /// ([`read_slice`] with the library's conversion to `f64`, then a
    /// per-cell fold or [`weighted_mean`]), bit for bit, on generated files:
    /// contiguous and chunked + deflated, `f32` with fill values, NaN and
    /// out-of-range values, packed `i16`, `f64`, and a 4-D variable.
    #[cfg(test)]
    #[allow(clippy::unwrap_used, clippy::expect_used)]
    mod tests {
        use super::*;

        fn same(a: &[f64], b: &[f64]) -> bool {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        }

        /// The reduction as it was: one slice at a time, unpacked to `f64`.
        fn slice_by_slice(var: &Variable, stat: TimeStat) -> Vec<f64> {
            let dims = var.dimensions();
            let nt = dims[0].len();
            let per: usize = dims.iter().skip(1).map(|d| d.len()).product();
            let mut acc = vec![
                if stat == TimeStat::Mean {
                    0.0
                } else {
                    f64::NAN
                };
                per
            ];
            let mut cnt = vec![0u32; per];
            for t in 0..nt {
                for (i, v) in read_slice(var, t).unwrap().into_iter().enumerate() {
                    if v.is_finite() {
                        acc[i] = match stat {
                            TimeStat::Mean => acc[i] + v,
                            TimeStat::Max => acc[i].max(v),
                            TimeStat::Min => acc[i].min(v),
                        };
                        cnt[i] += 1;
                    }
                }
            }
            if stat == TimeStat::Mean {
                for (a, n) in acc.iter_mut().zip(&cnt) {
                    *a = if *n == 0 {
                        f64::NAN
                    } else {
                        *a / f64::from(*n)
                    };
                }
            }
            acc
        }

        fn field_means_by_slice(file: &netcdf::File, var: &Variable) -> Vec<f64> {
            let w = lat_weights(file, var);
            (0..var.dimensions()[0].len())
                .map(|t| weighted_mean(&read_slice(var, t).unwrap(), &w))
                .collect()
        }

        /// A value for cell `i` of step `t`: mostly smooth, sometimes the
        /// fill value, NaN, ±inf or beyond ±9e35, and −0.
        fn value(t: usize, i: usize, fill: f32) -> f32 {
            match (i * 7 + t * 13) % 101 {
                0 => fill,
                1 => f32::NAN,
                2 => f32::INFINITY,
                3 => -1.0e36,
                4 => -0.0,
                _ => 250.0 + ((i + t * 7) % 600) as f32 * 0.1 - (i % 3) as f32 * 1.0e-3,
            }
        }

        fn write(path: &std::path::Path, dims: &[(&str, usize)], chunked: bool) {
            let mut f = netcdf::create(path).unwrap();
            for (name, len) in dims {
                f.add_dimension(name, *len).unwrap();
            }
            let names: Vec<&str> = dims.iter().map(|d| d.0).collect();
            let ny = dims[dims.len() - 2].1;
            let lats: Vec<f64> = (0..ny)
                .map(|j| -80.0 + 160.0 * j as f64 / ny as f64)
                .collect();
            f.add_variable::<f64>("lat", &[names[names.len() - 2]])
                .unwrap()
                .put_values(&lats, ..)
                .unwrap();
            let nt = dims[0].1;
            let per: usize = dims.iter().skip(1).map(|d| d.1).product();
            let fill = -999.0f32;
            let all: Vec<f32> = (0..nt)
                .flat_map(|t| (0..per).map(move |i| value(t, i, fill)))
                .collect();
            {
                let mut v = f.add_variable::<f32>("f32", &names).unwrap();
                if chunked {
                    let mut ch: Vec<usize> = dims.iter().map(|d| d.1).collect();
                    ch[0] = 3;
                    ch[1] = ch[1].div_ceil(4);
                    v.set_chunking(&ch).unwrap();
                    v.set_compression(1, true).unwrap();
                }
                v.put_attribute("_FillValue", fill).unwrap();
                v.put_values(&all, ..).unwrap();
            }
            {
                // Every value counts (the all-valid kernels), with ±0 and
                // repeated extremes.
                let valid: Vec<f32> = (0..nt)
                    .flat_map(|t| {
                        (0..per).map(move |i| match (i * 7 + t * 13) % 101 {
                            // cells whose maximum, resp. minimum, is a zero
                            _ if i % 5 == 0 => [-0.0, 0.0, -3.0][(t + i) % 3],
                            _ if i % 5 == 1 => [-0.0, 7.0, 0.0][(t * 2 + i) % 3],
                            0 | 1 => -0.0,
                            2 | 3 => 0.0,
                            4 => -5.0,
                            _ => value(t, i, fill),
                        })
                    })
                    .collect();
                let mut v = f.add_variable::<f32>("f32_valid", &names).unwrap();
                v.put_attribute("_FillValue", fill).unwrap();
                v.put_values(&valid, ..).unwrap();
            }
            {
                let packed: Vec<i16> = all
                    .iter()
                    .map(|x| {
                        if x.is_finite() && x.abs() < 1.0e3 {
                            ((x - 250.0) * 100.0) as i16
                        } else {
                            -32767
                        }
                    })
                    .collect();
                let mut v = f.add_variable::<i16>("i16", &names).unwrap();
                v.put_attribute("_FillValue", -32767i16).unwrap();
                v.put_attribute("scale_factor", 0.01f64).unwrap();
                v.put_attribute("add_offset", 250.0f64).unwrap();
                v.put_values(&packed, ..).unwrap();
            }
            {
                let wide: Vec<f64> = all.iter().map(|x| f64::from(*x) * 1.5).collect();
                let mut v = f.add_variable::<f64>("f64", &names).unwrap();
                v.put_values(&wide, ..).unwrap();
            }
        }

        #[test]
        fn tiled_reads_match_slice_by_slice() {
            let dir = tempfile::tempdir().unwrap();
            type Dims = Vec<(&'static str, usize)>;
            let cases: [(&str, Dims, bool); 4] = [
                (
                    "contiguous.nc",
                    vec![("time", 37), ("lat", 181), ("lon", 240)],
                    false,
                ),
                (
                    "chunked.nc",
                    vec![("time", 37), ("lat", 181), ("lon", 240)],
                    true,
                ),
                (
                    "four_d.nc",
                    vec![("time", 9), ("level", 3), ("lat", 40), ("lon", 50)],
                    false,
                ),
                (
                    "one_step.nc",
                    vec![("time", 1), ("lat", 7), ("lon", 5)],
                    false,
                ),
            ];
            for (name, dims, chunked) in cases {
                let path = dir.path().join(name);
                write(&path, &dims, chunked);
                let file = netcdf::open(&path).unwrap();
                for var in ["f32", "f32_valid", "i16", "f64"] {
                    let v = file.variable(var).unwrap();
                    for stat in [TimeStat::Mean, TimeStat::Max, TimeStat::Min] {
                        assert!(
                            same(&time_reduce(&v, stat).unwrap(), &slice_by_slice(&v, stat)),
                            "{name} {var} {stat:?}"
                        );
                    }
                    assert!(
                        same(
                            &field_means(&file, &v).unwrap(),
                            &field_means_by_slice(&file, &v)
                        ),
                        "{name} {var} field means"
                    );
                }
            }
        }

        #[test]
        fn tiles_follow_the_storage() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.nc");
            write(&path, &[("time", 37), ("lat", 181), ("lon", 240)], true);
            let file = netcdf::open(&path).unwrap();
            // Chunks of 3 steps × 46 rows: tiles hold whole chunks.
            let t = Tiling::of(&file.variable("f32").unwrap(), 4);
            assert_eq!((t.k, t.row), (3, 240));
            assert!(t.h % 46 == 0 || t.h == t.ny, "{t:?}");
            // Contiguous: each step's run is at least 128 KiB.
            let t = Tiling::of(&file.variable("f64").unwrap(), 8);
            assert!(t.h * t.row * 8 >= crate::nc_tiles::BLOCK_BYTES || t.h == t.ny);
        }
    }
}
