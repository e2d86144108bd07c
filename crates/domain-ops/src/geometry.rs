//! Great-circle geometry on the sphere (R = 6,371.0088 km, the IUGG mean
//! radius) and GeoJSON features: plain data and pure functions, a leaf
//! that the vector operations and the file readers share.

use serde_json::{Map, Value};

/// Mean Earth radius, km (IUGG).
pub const EARTH_RADIUS_KM: f64 = 6371.0088;

/// Great-circle distance (km) between (lat, lon) points in degrees.
pub fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().asin()
}

/// Initial bearing (degrees clockwise from north) from point 1 to point 2.
pub fn bearing_deg(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dl = (lon2 - lon1).to_radians();
    let y = dl.sin() * p2.cos();
    let x = p1.cos() * p2.sin() - p1.sin() * p2.cos() * dl.cos();
    y.atan2(x).to_degrees().rem_euclid(360.0)
}

/// Area (km²) of a ring of (lon, lat) on the sphere (Chamberlain & Duquette 2007).
pub fn ring_area_km2(ring: &[[f64; 2]]) -> f64 {
    if ring.len() < 3 {
        return 0.0;
    }
    let mut total = 0.0;
    for i in 0..ring.len() {
        let a = ring[i];
        let b = ring[(i + 1) % ring.len()];
        total +=
            (b[0] - a[0]).to_radians() * (2.0 + a[1].to_radians().sin() + b[1].to_radians().sin());
    }
    (total * EARTH_RADIUS_KM * EARTH_RADIUS_KM / 2.0).abs()
}

/// A geometry as lists of rings/lines of (lon, lat).
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    /// Points.
    Points(Vec<[f64; 2]>),
    /// Lines.
    Lines(Vec<Vec<[f64; 2]>>),
    /// Polygons: each an outer ring then holes.
    Polygons(Vec<Vec<Vec<[f64; 2]>>>),
}

fn coord(v: &Value) -> Option<[f64; 2]> {
    let a = v.as_array()?;
    Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?])
}

fn coords(v: &Value) -> Vec<[f64; 2]> {
    v.as_array()
        .map(|a| a.iter().filter_map(coord).collect())
        .unwrap_or_default()
}

/// Parses a GeoJSON geometry object.
pub fn parse_geometry(g: &Value) -> Option<Geometry> {
    let c = g.get("coordinates");
    match g.get("type")?.as_str()? {
        "Point" => Some(Geometry::Points(vec![coord(c?)?])),
        "MultiPoint" => Some(Geometry::Points(coords(c?))),
        "LineString" => Some(Geometry::Lines(vec![coords(c?)])),
        "MultiLineString" => Some(Geometry::Lines(c?.as_array()?.iter().map(coords).collect())),
        "Polygon" => Some(Geometry::Polygons(vec![c?
            .as_array()?
            .iter()
            .map(coords)
            .collect()])),
        "MultiPolygon" => Some(Geometry::Polygons(
            c?.as_array()?
                .iter()
                .map(|p| {
                    p.as_array()
                        .map(|r| r.iter().map(coords).collect())
                        .unwrap_or_default()
                })
                .collect(),
        )),
        _ => None,
    }
}

impl Geometry {
    /// Type name.
    pub fn kind(&self) -> &'static str {
        match self {
            Geometry::Points(_) => "point",
            Geometry::Lines(_) => "line",
            Geometry::Polygons(_) => "polygon",
        }
    }

    /// All vertices.
    pub fn vertices(&self) -> Vec<[f64; 2]> {
        match self {
            Geometry::Points(p) => p.clone(),
            Geometry::Lines(l) => l.concat(),
            Geometry::Polygons(p) => p
                .iter()
                .flat_map(|r| r.first().cloned().unwrap_or_default())
                .collect(),
        }
    }

    /// A representative (lon, lat): the point, or the vertex mean.
    pub fn centroid(&self) -> Option<[f64; 2]> {
        let v = self.vertices();
        if v.is_empty() {
            return None;
        }
        let n = v.len() as f64;
        Some([
            v.iter().map(|p| p[0]).sum::<f64>() / n,
            v.iter().map(|p| p[1]).sum::<f64>() / n,
        ])
    }

    /// Geodesic area on the sphere (km²), holes subtracted.
    pub fn area_km2(&self) -> f64 {
        match self {
            Geometry::Polygons(p) => p
                .iter()
                .map(|rings| {
                    rings
                        .iter()
                        .enumerate()
                        .map(|(i, r)| {
                            if i == 0 {
                                ring_area_km2(r)
                            } else {
                                -ring_area_km2(r)
                            }
                        })
                        .sum::<f64>()
                })
                .sum(),
            _ => 0.0,
        }
    }

    /// Great-circle length (km).
    pub fn length_km(&self) -> f64 {
        let line_len = |l: &Vec<[f64; 2]>| {
            l.windows(2)
                .map(|w| haversine_km(w[0][1], w[0][0], w[1][1], w[1][0]))
                .sum::<f64>()
        };
        match self {
            Geometry::Lines(ls) => ls.iter().map(line_len).sum(),
            Geometry::Polygons(p) => p.iter().flat_map(|r| r.first()).map(line_len).sum(),
            Geometry::Points(_) => 0.0,
        }
    }

    /// Whether (lon, lat) is inside (even-odd rule, holes excluded).
    pub fn contains(&self, pt: [f64; 2]) -> bool {
        match self {
            Geometry::Polygons(p) => p.iter().any(|rings| {
                rings.first().is_some_and(|outer| ring_contains(outer, pt))
                    && !rings.iter().skip(1).any(|h| ring_contains(h, pt))
            }),
            _ => false,
        }
    }

    /// Distance (km) from (lon, lat) to the geometry's nearest vertex, or 0 inside a polygon.
    pub fn distance_km(&self, pt: [f64; 2]) -> f64 {
        if self.contains(pt) {
            return 0.0;
        }
        let mut best = f64::INFINITY;
        let mut visit = |a: [f64; 2], b: [f64; 2]| {
            // densify the segment so distances to long edges are not overestimated
            let steps =
                ((haversine_km(a[1], a[0], b[1], b[0]) / 1.0).ceil() as usize).clamp(1, 2000);
            for k in 0..=steps {
                let t = k as f64 / steps as f64;
                let q = [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t];
                best = best.min(haversine_km(pt[1], pt[0], q[1], q[0]));
            }
        };
        match self {
            Geometry::Points(p) => p.iter().for_each(|q| visit(*q, *q)),
            Geometry::Lines(ls) => ls
                .iter()
                .for_each(|l| l.windows(2).for_each(|w| visit(w[0], w[1]))),
            Geometry::Polygons(p) => p
                .iter()
                .flatten()
                .for_each(|r| r.windows(2).for_each(|w| visit(w[0], w[1]))),
        }
        best
    }
}

fn ring_contains(ring: &[[f64; 2]], pt: [f64; 2]) -> bool {
    let mut inside = false;
    let n = ring.len();
    if n < 3 {
        return false;
    }
    let mut j = n - 1;
    for i in 0..n {
        let (a, b) = (ring[i], ring[j]);
        if (a[1] > pt[1]) != (b[1] > pt[1])
            && pt[0] < (b[0] - a[0]) * (pt[1] - a[1]) / (b[1] - a[1]) + a[0]
        {
            inside = !inside;
        }
        j = i;
    }
    inside
}

/// A feature: geometry and properties.
#[derive(Debug, Clone)]
pub struct Feature {
    /// Geometry (None when absent or unsupported).
    pub geometry: Option<Geometry>,
    /// Properties.
    pub properties: Map<String, Value>,
}

/// Features of a GeoJSON FeatureCollection / Feature / geometry value.
pub fn features_from_geojson(doc: &Value) -> Vec<Feature> {
    match doc.get("type").and_then(Value::as_str) {
        Some("FeatureCollection") => doc
            .get("features")
            .and_then(Value::as_array)
            .map(|fs| fs.iter().flat_map(features_from_geojson).collect())
            .unwrap_or_default(),
        Some("Feature") => vec![Feature {
            geometry: doc.get("geometry").and_then(parse_geometry),
            properties: doc
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }],
        Some(_) => vec![Feature {
            geometry: parse_geometry(doc),
            properties: Map::new(),
        }],
        None => Vec::new(),
    }
}
