//! Reports and text (paper §3.4): numbers, dates, places, keywords,
//! sections, tables and claims from package reports (HTML, XML, PDF, text,
//! sniffed from content by package-model), unit conversion, hazard severity
//! scales and source reconciliation.

use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::num;
use crate::tables::parse_csv;
use crate::{DomainError, Result};
use earthverse_package_model::{extract_text, sniff_bytes};
use earthverse_tool_registry::ToolFamily;
use regex::Regex;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const F: ToolFamily = ToolFamily::ReportsText;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(pattern).unwrap_or_else(|_| Regex::new("$^").unwrap_or_else(|_| unreachable!()))
    })
}

/// The text of `path` (any sniffed kind) or the inline `text` argument.
pub fn input_text(c: &OpCall<'_>) -> Result<String> {
    if c.args().get("path").is_some_and(|p| p.is_string()) {
        let (_, bytes) = c.file_bytes("path")?;
        return Ok(extract_text(&bytes, sniff_bytes(&bytes)));
    }
    match c.args().get("text") {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(c.invalid("text", "give `path` (a package file) or `text`")),
    }
}

fn text_params() -> Vec<crate::op::Param> {
    vec![
        opt(
            "path",
            Kind::File,
            "package-relative report (HTML, XML, PDF, text; sniffed)",
            Value::Null,
        ),
        opt(
            "text",
            Kind::Text,
            "inline text instead of a file",
            Value::Null,
        ),
    ]
}

/// Sentences of a text (split on . ! ? followed by space/newline, and blank lines).
pub fn sentences(text: &str) -> Vec<String> {
    static SPLIT: OnceLock<Regex> = OnceLock::new();
    re(&SPLIT, r"(?:[.!?])\s+|\n\s*\n")
        .split(text)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

const UNIT_PATTERN: &str = r"(?i)(°\s?[CF]|deg(?:rees)?\s?[CF]|mm|cm|km/h|kph|km²|km2|km|m/s|mph|kt|knots|hpa|mb|inches|inch|in\b|ft|feet|m\b|%|percent|people|persons|deaths|dead|fatalities|injured|displaced|evacuated|homes|houses|buildings|hectares|ha\b|acres|usd|us\$|\$|million|billion|mw|gw)";

/// Numbers with an optional following unit, and their sentences.
pub fn extract_numbers(text: &str) -> Vec<Value> {
    static NUM: OnceLock<Regex> = OnceLock::new();
    let num_re = re(
        &NUM,
        &format!(
            r"(?P<num>[-−]?\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|[-−]?\d+(?:\.\d+)?)\s?(?P<unit>{UNIT_PATTERN})?"
        ),
    );
    let mut out = Vec::new();
    for s in sentences(text) {
        for cap in num_re.captures_iter(&s) {
            let raw = cap.name("num").map(|m| m.as_str()).unwrap_or_default();
            let Ok(v) = raw.replace([',', ' '], "").replace('−', "-").parse::<f64>() else {
                continue;
            };
            out.push(json!({"value": v, "raw": raw, "unit": cap.name("unit").map(|m| m.as_str().trim()), "sentence": s.chars().take(300).collect::<String>()}));
        }
    }
    out
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month_no(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    MONTHS
        .iter()
        .position(|m| m.starts_with(&n[..n.len().min(3)]) && n.len() >= 3)
        .map(|i| i as u32 + 1)
}

/// Dates found in text, normalised to ISO (day or month precision).
pub fn extract_dates(text: &str) -> Vec<Value> {
    static ISO: OnceLock<Regex> = OnceLock::new();
    static DMY: OnceLock<Regex> = OnceLock::new();
    static MDY: OnceLock<Regex> = OnceLock::new();
    let iso = re(&ISO, r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?");
    let dmy = re(
        &DMY,
        r"(?i)\b(\d{1,2})\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+(\d{4})\b",
    );
    let mdy = re(
        &MDY,
        r"(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b",
    );
    let mut out: Vec<(usize, String, String)> = Vec::new();
    for c in iso.captures_iter(text) {
        let m = c
            .get(0)
            .map(|m| (m.start(), m.as_str().to_string()))
            .unwrap_or_default();
        let date = format!("{}-{}-{}", &c[1], &c[2], &c[3]);
        if chrono::NaiveDate::parse_from_str(&date, "%Y-%m-%d").is_ok() {
            out.push((m.0, m.1, date));
        }
    }
    for (regex, d_i, m_i, y_i) in [(dmy, 1, 2, 3), (mdy, 2, 1, 3)] {
        for c in regex.captures_iter(text) {
            let (Some(d), Some(mo)) = (c[d_i].parse::<u32>().ok(), month_no(&c[m_i])) else {
                continue;
            };
            let y: i32 = c[y_i].parse().unwrap_or(0);
            if let Some(date) = chrono::NaiveDate::from_ymd_opt(y, mo, d) {
                let m = c
                    .get(0)
                    .map(|m| (m.start(), m.as_str().to_string()))
                    .unwrap_or_default();
                out.push((m.0, m.1, date.format("%Y-%m-%d").to_string()));
            }
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.2 == b.2 && a.0 == b.0);
    out.into_iter()
        .map(|(pos, raw, iso)| json!({"date": iso, "raw": raw, "offset": pos}))
        .collect()
}

/// Convert `value` from unit `from` to unit `to`; None when incompatible.
pub fn convert(value: f64, from: &str, to: &str) -> Option<f64> {
    let norm = |u: &str| {
        u.trim()
            .to_lowercase()
            .replace(['°', ' '], "")
            .replace("deg", "")
    };
    let (f, t) = (norm(from), norm(to));
    let temp = |u: &str| matches!(u, "c" | "f" | "k" | "celsius" | "fahrenheit" | "kelvin");
    if temp(&f) || temp(&t) {
        let c = match f.as_str() {
            "c" | "celsius" => value,
            "f" | "fahrenheit" => (value - 32.0) * 5.0 / 9.0,
            "k" | "kelvin" => value - 273.15,
            _ => return None,
        };
        return match t.as_str() {
            "c" | "celsius" => Some(c),
            "f" | "fahrenheit" => Some(c * 9.0 / 5.0 + 32.0),
            "k" | "kelvin" => Some(c + 273.15),
            _ => None,
        };
    }
    let table: &[(&str, &str, f64)] = &[
        ("mm", "length", 1e-3),
        ("cm", "length", 1e-2),
        ("m", "length", 1.0),
        ("km", "length", 1e3),
        ("in", "length", 0.0254),
        ("inch", "length", 0.0254),
        ("inches", "length", 0.0254),
        ("ft", "length", 0.3048),
        ("feet", "length", 0.3048),
        ("mi", "length", 1609.344),
        ("mile", "length", 1609.344),
        ("nmi", "length", 1852.0),
        ("m/s", "speed", 1.0),
        ("km/h", "speed", 1.0 / 3.6),
        ("kph", "speed", 1.0 / 3.6),
        ("kt", "speed", 1852.0 / 3600.0),
        ("knots", "speed", 1852.0 / 3600.0),
        ("mph", "speed", 0.44704),
        ("pa", "pressure", 1.0),
        ("hpa", "pressure", 100.0),
        ("mb", "pressure", 100.0),
        ("kpa", "pressure", 1000.0),
        ("inhg", "pressure", 3386.389),
        ("mmhg", "pressure", 133.322_387),
        ("m2", "area", 1.0),
        ("km2", "area", 1e6),
        ("km²", "area", 1e6),
        ("ha", "area", 1e4),
        ("hectares", "area", 1e4),
        ("acre", "area", 4_046.856_422_4),
        ("acres", "area", 4_046.856_422_4),
        ("mi2", "area", 2_589_988.110_336),
        ("m3/s", "discharge", 1.0),
        ("cfs", "discharge", 0.028_316_846_592),
        ("ft3/s", "discharge", 0.028_316_846_592),
    ];
    let find = |u: &str| {
        table
            .iter()
            .find(|(n, _, _)| *n == u)
            .map(|(_, d, k)| (*d, *k))
    };
    let ((df, kf), (dt, kt)) = (find(&f)?, find(&t)?);
    (df == dt).then(|| value * kf / kt)
}

/// A hazard severity scale class.
pub fn severity(scale: &str, value: f64) -> Option<String> {
    let pick = |edges: &[(f64, &str)], below: &str| {
        edges
            .iter()
            .rev()
            .find(|(e, _)| value >= *e)
            .map(|(_, n)| n.to_string())
            .or(Some(below.to_string()))
    };
    match scale {
        "saffir_simpson_kt" => pick(
            &[
                (64.0, "category_1"),
                (83.0, "category_2"),
                (96.0, "category_3"),
                (113.0, "category_4"),
                (137.0, "category_5"),
            ],
            "below_hurricane",
        ),
        "enhanced_fujita_mph" => pick(
            &[
                (65.0, "EF0"),
                (86.0, "EF1"),
                (111.0, "EF2"),
                (136.0, "EF3"),
                (166.0, "EF4"),
                (201.0, "EF5"),
            ],
            "below_EF0",
        ),
        "beaufort_ms" => pick(
            &[
                (0.5, "1"),
                (1.6, "2"),
                (3.4, "3"),
                (5.5, "4"),
                (8.0, "5"),
                (10.8, "6"),
                (13.9, "7"),
                (17.2, "8"),
                (20.8, "9"),
                (24.5, "10"),
                (28.5, "11"),
                (32.7, "12"),
            ],
            "0",
        ),
        "magnitude_class" => pick(
            &[
                (3.0, "minor"),
                (4.0, "light"),
                (5.0, "moderate"),
                (6.0, "strong"),
                (7.0, "major"),
                (8.0, "great"),
            ],
            "micro",
        ),
        "vei_m3" => pick(
            &[
                (1e4, "1"),
                (1e6, "2"),
                (1e7, "3"),
                (1e8, "4"),
                (1e9, "5"),
                (1e10, "6"),
                (1e11, "7"),
                (1e12, "8"),
            ],
            "0",
        ),
        _ => None,
    }
}

fn html_tables(html: &str) -> Vec<Vec<Vec<String>>> {
    static TABLE: OnceLock<Regex> = OnceLock::new();
    static ROW: OnceLock<Regex> = OnceLock::new();
    static CELL: OnceLock<Regex> = OnceLock::new();
    static TAG: OnceLock<Regex> = OnceLock::new();
    let t = re(&TABLE, r"(?is)<table\b.*?</table>");
    let r = re(&ROW, r"(?is)<tr\b.*?</tr>");
    let c = re(&CELL, r"(?is)<t[dh]\b[^>]*>(.*?)</t[dh]>");
    let tag = re(&TAG, r"(?s)<[^>]*>");
    t.find_iter(html)
        .map(|tm| {
            r.find_iter(tm.as_str())
                .map(|rm| {
                    c.captures_iter(rm.as_str())
                        .map(|cc| {
                            decode(
                                tag.replace_all(&cc[1], " ")
                                    .split_whitespace()
                                    .collect::<Vec<_>>()
                                    .join(" "),
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .filter(|row| !row.is_empty())
                .collect()
        })
        .collect()
}

fn decode(s: String) -> String {
    s.replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

/// The reports and text operations.
pub fn operations() -> Vec<Operation> {
    let with_text = |extra: Vec<crate::op::Param>| {
        let mut p = text_params();
        p.extend(extra);
        p
    };
    vec![
        Operation::new("report_extract_numbers", F, "Numbers with their units (°C, mm, km/h, %, deaths, USD, million ...) and sentence context from a report.", with_text(vec![opt("unit", Kind::Text, "keep only this unit (case-insensitive)", Value::Null), opt("limit", Kind::Integer, "max results", json!(200))]), |c| {
            let mut v = extract_numbers(&input_text(c)?);
            if let Some(u) = c.args().get("unit").and_then(Value::as_str) { v.retain(|x| x["unit"].as_str().is_some_and(|w| w.eq_ignore_ascii_case(u))); }
            let n = v.len();
            v.truncate(c.int("limit")?.max(1) as usize);
            Ok(json!({"numbers": v, "total_found": n}))
        }),
        Operation::new("report_extract_dates", F, "Dates in ISO form (2021-06-25, 25 June 2021, June 25, 2021) with their offsets, plus the earliest and latest.", with_text(vec![]), |c| {
            let d = extract_dates(&input_text(c)?);
            let mut iso: Vec<&str> = d.iter().filter_map(|x| x["date"].as_str()).collect();
            iso.sort();
            Ok(json!({"dates": d, "earliest": iso.first(), "latest": iso.last()}))
        }),
        Operation::new("report_extract_places", F, "Coordinates (decimal degrees with N/S/E/W or signed pairs) and capitalised place names after 'in', 'near', 'at', 'over', 'across'.", with_text(vec![]), |c| {
            static COORD: OnceLock<Regex> = OnceLock::new();
            static PLACE: OnceLock<Regex> = OnceLock::new();
            let t = input_text(c)?;
            let cr = re(&COORD, r"(\d{1,2}(?:\.\d+)?)\s?°?\s?([NS])[,\s]+(\d{1,3}(?:\.\d+)?)\s?°?\s?([EW])");
            let pr = re(&PLACE, r"\b(?:in|near|at|over|across|of)\s+((?:[A-Z][a-zA-Z\-']+)(?:\s+[A-Z][a-zA-Z\-']+){0,3})");
            let coords: Vec<Value> = cr.captures_iter(&t).filter_map(|m| {
                let lat: f64 = m[1].parse().ok()?; let lon: f64 = m[3].parse().ok()?;
                Some(json!({"lat": if &m[2] == "S" { -lat } else { lat }, "lon": if &m[4] == "W" { -lon } else { lon }, "raw": &m[0]}))
            }).collect();
            let mut places: BTreeMap<String, usize> = BTreeMap::new();
            for m in pr.captures_iter(&t) { *places.entry(m[1].to_string()).or_default() += 1; }
            let mut pl: Vec<(String, usize)> = places.into_iter().collect();
            pl.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            Ok(json!({"coordinates": coords, "places": pl.iter().take(50).map(|(p, n)| json!({"place": p, "mentions": n})).collect::<Vec<_>>()}))
        }),
        Operation::new("report_keyword_hits", F, "Case-insensitive counts of each keyword and up to 3 snippets (±120 characters) per keyword.", with_text(vec![req("keywords", Kind::Texts, "keywords")]), |c| {
            let t = input_text(c)?;
            let lower = t.to_lowercase();
            let hits: Vec<Value> = c.texts("keywords")?.iter().map(|k| {
                let kl = k.to_lowercase();
                let pos: Vec<usize> = if kl.is_empty() { Vec::new() } else { lower.match_indices(&kl).map(|(i, _)| i).collect() };
                let snippets: Vec<String> = pos.iter().take(3).map(|p| { let a = lower.floor_boundary(p.saturating_sub(120)); let b = lower.floor_boundary((p + kl.len() + 120).min(lower.len())); t.get(a..b).unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ") }).collect();
                json!({"keyword": k, "count": pos.len(), "snippets": snippets})
            }).collect();
            Ok(json!({"hits": hits}))
        }),
        Operation::new("report_sections", F, "Sections of a report split at Markdown headings or HTML <h1>–<h4>, with titles, character offsets and lengths.", with_text(vec![]), |c| {
            static MD: OnceLock<Regex> = OnceLock::new();
            static HT: OnceLock<Regex> = OnceLock::new();
            let raw = if c.args().get("path").is_some_and(|p| p.is_string()) { let (_, b) = c.file_bytes("path")?; String::from_utf8_lossy(&b).into_owned() } else { input_text(c)? };
            let md = re(&MD, r"(?m)^(#{1,6})\s+(.+)$");
            let ht = re(&HT, r"(?is)<h([1-4])[^>]*>(.*?)</h[1-4]>");
            let mut heads: Vec<(usize, usize, String)> = md.captures_iter(&raw).filter_map(|m| Some((m.get(0)?.start(), m[1].len(), m[2].trim().to_string()))).collect();
            if heads.is_empty() { heads = ht.captures_iter(&raw).filter_map(|m| Some((m.get(0)?.start(), m[1].parse().ok()?, m[2].split_whitespace().collect::<Vec<_>>().join(" ")))).collect(); }
            let secs: Vec<Value> = heads.iter().enumerate().map(|(i, (o, l, t))| { let end = heads.get(i + 1).map(|h| h.0).unwrap_or(raw.len()); json!({"title": t, "level": l, "offset": o, "length": end - o}) }).collect();
            Ok(json!({"sections": secs, "count": secs.len()}))
        }),
        Operation::new("html_to_text", F, "Readable text of an HTML (or any sniffed) report with scripts and styles removed, cut at max_chars.", vec![req("path", Kind::File, "package-relative report"), opt("max_chars", Kind::Integer, "limit", json!(12000))], |c| {
            let (_, b) = c.file_bytes("path")?;
            let t = extract_text(&b, sniff_bytes(&b));
            let n = c.int("max_chars")?.max(1) as usize;
            let cut: String = t.chars().take(n).collect();
            Ok(json!({"text": cut, "chars": t.chars().count(), "truncated": t.chars().count() > n}))
        }),
        Operation::new("html_tables", F, "Tables of an HTML report as rows of cell texts (header row first when present).", vec![req("path", Kind::File, "package-relative HTML"), opt("max_tables", Kind::Integer, "limit", json!(10))], |c| {
            let (_, b) = c.file_bytes("path")?;
            let tables = html_tables(&String::from_utf8_lossy(&b));
            let n = tables.len();
            Ok(json!({"table_count": n, "tables": tables.into_iter().take(c.int("max_tables")?.max(1) as usize).collect::<Vec<_>>()}))
        }),
        Operation::new("claim_sentences", F, "Sentences that contain both a metric keyword and a number: candidate quantitative claims.", with_text(vec![opt("keywords", Kind::Texts, "metric keywords", json!(["temperature", "rain", "rainfall", "wind", "deaths", "killed", "damage", "loss", "evacuated", "displaced", "magnitude", "area", "record", "peak"]))]), |c| {
            static DIGIT: OnceLock<Regex> = OnceLock::new();
            let d = re(&DIGIT, r"\d");
            let kws: Vec<String> = c.texts("keywords")?.iter().map(|k| k.to_lowercase()).collect();
            let claims: Vec<Value> = sentences(&input_text(c)?).into_iter().filter(|s| d.is_match(s)).filter_map(|s| { let l = s.to_lowercase(); let k: Vec<&String> = kws.iter().filter(|k| l.contains(k.as_str())).collect(); (!k.is_empty()).then(|| json!({"sentence": s, "keywords": k})) }).collect();
            Ok(json!({"claims": claims, "count": claims.len()}))
        }),
        Operation::new("unit_convert", F, "Convert a value between units of length, speed, pressure, area, discharge and temperature (mm/in, kt/m s⁻¹, hPa/inHg, °C/K/°F ...).", vec![req("value", Kind::Number, "value"), req("from", Kind::Text, "unit"), req("to", Kind::Text, "unit")], |c| {
            let (v, f, t) = (c.num("value")?, c.text("from")?, c.text("to")?);
            let out = convert(v, &f, &t).ok_or_else(|| c.invalid("to", format!("cannot convert `{f}` to `{t}`")))?;
            Ok(json!({"value": out, "units": t}))
        }),
        Operation::new("percent_change", F, "Change from a to b: absolute difference, percent change (b − a)/|a|·100 and ratio.", vec![req("a", Kind::Number, "reference value"), req("b", Kind::Number, "new value")], |c| {
            let (a, b) = (c.num("a")?, c.num("b")?);
            Ok(json!({"difference": b - a, "percent_change": num(if a == 0.0 { f64::NAN } else { (b - a) / a.abs() * 100.0 }), "ratio": num(b / a)}))
        }),
        Operation::new("source_conflicts", F, "Reconcile one quantity reported by several sources: spread, relative spread and the sources disagreeing beyond a relative tolerance with the median.", vec![req("reports", Kind::Any, "[{source, value}, ...]"), opt("rel_tolerance", Kind::Number, "relative tolerance", json!(0.05))], |c| {
            let Some(Value::Array(items)) = c.args().get("reports") else { return Err(c.invalid("reports", "expected [{source, value}]")); };
            let rows: Vec<(String, f64)> = items.iter().filter_map(|r| Some((r.get("source")?.as_str()?.to_string(), crate::op::as_f64(r.get("value")?)?))).collect();
            crate::op::need(c, "reports", rows.len(), 2)?;
            let vals: Vec<f64> = rows.iter().map(|r| r.1).collect();
            let med = crate::stats::percentile(&vals, 50.0);
            let tol = c.num("rel_tolerance")?;
            let conflicts: Vec<Value> = rows.iter().filter(|(_, v)| (v - med).abs() > tol * med.abs()).map(|(s, v)| json!({"source": s, "value": v, "rel_diff": num((v - med) / med)})).collect();
            let (mn, mx) = (vals.iter().copied().fold(f64::INFINITY, f64::min), vals.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            Ok(json!({"median": med, "min": mn, "max": mx, "relative_spread": num((mx - mn) / med.abs()), "conflicting": conflicts, "consistent": conflicts.is_empty()}))
        }),
        Operation::new("event_timeline", F, "Ordered timeline of dated statements across several package reports: (date, sentence, file).", vec![req("paths", Kind::Texts, "package-relative reports"), opt("limit", Kind::Integer, "max entries", json!(100))], |c| {
            let mut rows: Vec<(String, String, String)> = Vec::new();
            for p in c.texts("paths")? {
                let (rel, b) = crate::input::read_package_file(c.ctx(), &p)?;
                c.record(crate::input::Provenance { file: rel.clone(), variable: None, window: None });
                for s in sentences(&extract_text(&b, sniff_bytes(&b))) {
                    if let Some(d) = extract_dates(&s).first().and_then(|d| d["date"].as_str().map(str::to_string)) { rows.push((d, s.chars().take(300).collect(), rel.clone())); }
                }
            }
            rows.sort();
            rows.dedup();
            Ok(json!({"timeline": rows.iter().take(c.int("limit")?.max(1) as usize).map(|(d, s, f)| json!({"date": d, "statement": s, "file": f})).collect::<Vec<_>>(), "entries": rows.len()}))
        }),
        Operation::new("impact_tally", F, "Impact figures (deaths, injured, displaced/evacuated, homes, economic loss) per source report, with the range across sources flagged.", vec![req("paths", Kind::Texts, "package-relative reports")], |c| {
            let cats = [("deaths", &["deaths", "dead", "fatalities", "killed"][..]), ("injured", &["injured"][..]), ("displaced", &["displaced", "evacuated"][..]), ("homes", &["homes", "houses", "buildings"][..])];
            let mut per: Vec<Value> = Vec::new();
            let mut ranges: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for p in c.texts("paths")? {
                let (rel, b) = crate::input::read_package_file(c.ctx(), &p)?;
                c.record(crate::input::Provenance { file: rel.clone(), variable: None, window: None });
                let nums = extract_numbers(&extract_text(&b, sniff_bytes(&b)));
                let mut row = serde_json::Map::new();
                row.insert("file".into(), json!(rel));
                for (cat, words) in cats {
                    let best = nums.iter().filter(|n| n["unit"].as_str().is_some_and(|u| words.contains(&u.to_lowercase().as_str()))).filter_map(|n| n["value"].as_f64()).fold(f64::NAN, f64::max);
                    if best.is_finite() { ranges.entry(cat).or_default().push(best); }
                    row.insert(cat.into(), num(best));
                }
                per.push(Value::Object(row));
            }
            Ok(json!({"by_source": per, "ranges": ranges.iter().map(|(k, v)| (k.to_string(), json!({"min": v.iter().copied().fold(f64::INFINITY, f64::min), "max": v.iter().copied().fold(f64::NEG_INFINITY, f64::max), "sources": v.len()}))).collect::<BTreeMap<_, _>>()}))
        }),
        Operation::new("severity_scale", F, "Class of a value on a hazard scale: saffir_simpson_kt (1-min wind, kt), enhanced_fujita_mph (3-s gust, mph), beaufort_ms, magnitude_class (Mw), vei_m3 (tephra volume).", vec![req("scale", Kind::Text, "scale name"), req("value", Kind::Number, "value in the scale's unit")], |c| {
            let s = c.text("scale")?;
            let cls = severity(&s, c.num("value")?).ok_or_else(|| c.invalid("scale", format!("unknown scale `{s}`")))?;
            Ok(json!({"scale": s, "class": cls}))
        }),
        Operation::new("warning_level_lookup", F, "Map a value to the level of a threshold table given by the package (or inline): the highest level whose threshold the value reaches.", vec![req("value", Kind::Number, "value"), req("levels", Kind::Any, "[{level, threshold}, ...]")], |c| {
            let v = c.num("value")?;
            let Some(Value::Array(items)) = c.args().get("levels") else { return Err(c.invalid("levels", "expected [{level, threshold}]")); };
            let mut lv: Vec<(f64, Value)> = items.iter().filter_map(|i| Some((crate::op::as_f64(i.get("threshold")?)?, i.get("level")?.clone()))).collect();
            if lv.is_empty() { return Err(c.invalid("levels", "no usable {level, threshold} entries")); }
            lv.sort_by(|a, b| a.0.total_cmp(&b.0));
            let hit = lv.iter().rev().find(|(t, _)| v >= *t);
            Ok(json!({"level": hit.map(|h| h.1.clone()), "threshold": hit.map(|h| h.0), "below_all": hit.is_none()}))
        }),
        Operation::new("csv_filter_aggregate", F, "Filter CSV rows by column equality and/or numeric range, group by a column, and aggregate a value column (sum, mean, max, min, count).", vec![req("path", Kind::File, "package-relative CSV"), req("value", Kind::Text, "value column"), opt("group_by", Kind::Text, "group column", Value::Null), opt("where_equals", Kind::Any, "{column: value}", json!({})), opt("how", Kind::Text, "sum | mean | max | min | count", json!("sum"))], |c| {
            let (rel, b) = c.file_bytes("path")?;
            let t = parse_csv(&b).map_err(|m| DomainError::Input { file: rel.clone(), message: m })?;
            let vcol = c.text("value")?;
            let vi = t.column(&vcol).ok_or_else(|| c.refuse(json!({"variable_absent": vcol}), "value column absent"))?;
            let gi = match c.args().get("group_by").and_then(Value::as_str) { Some(g) => Some(t.column(g).ok_or_else(|| c.refuse(json!({"variable_absent": g}), "group column absent"))?), None => None };
            let filters: Vec<(usize, String)> = c.value("where_equals")?.as_object().map(|m| m.iter().filter_map(|(k, v)| Some((t.column(k)?, v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))).collect()).unwrap_or_default();
            let how = c.text("how")?;
            let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &t.rows {
                if filters.iter().any(|(i, v)| r.get(*i).map(|x| x.trim()) != Some(v.as_str())) { continue; }
                let g = gi.and_then(|i| r.get(i).cloned()).unwrap_or_else(|| "all".into());
                groups.entry(g).or_default().push(r.get(vi).and_then(|x| x.trim().parse().ok()).unwrap_or(f64::NAN));
            }
            let agg = |v: &[f64]| { let f = crate::stats::finite(v); match how.as_str() { "sum" => f.iter().sum(), "max" => f.iter().copied().fold(f64::NAN, f64::max), "min" => f.iter().copied().fold(f64::NAN, f64::min), "count" => f.len() as f64, _ => crate::stats::mean(&f) } };
            Ok(json!({"groups": groups.iter().map(|(k, v)| json!({"group": k, "value": num(agg(v)), "rows": v.len()})).collect::<Vec<_>>()}))
        }),
    ]
}

trait FloorBoundary {
    fn floor_boundary(&self, i: usize) -> usize;
}

impl FloorBoundary for String {
    fn floor_boundary(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}
