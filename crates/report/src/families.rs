//! Figs. 8–10 from run-level failure families (issue #48, §D.2): the data
//! the report needs (computed elsewhere: `rubric_judge::families`) and
//! the three plots.

use crate::Result;
use earthverse_evidence_ledger::RunFamily;
use earthverse_stats_bootstrap::Estimate;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const FONT: &str = "sans-serif";

/// One run as the family figures read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyRunRow {
    /// System id.
    pub system: String,
    /// System family (Table 2's groups).
    pub system_family: String,
    /// Published (or scored) Core of the run.
    pub core: f64,
    /// Primary family.
    pub primary: Option<RunFamily>,
    /// Every family found.
    pub families: Vec<RunFamily>,
}

/// Fig. 10's effect of one family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyEffectRow {
    /// The family.
    pub family: RunFamily,
    /// Runs with it (of systems that also have runs without it).
    pub runs_with: usize,
    /// Mean within-system Core difference with its interval.
    pub delta: Estimate,
}

/// Everything Figs. 8–10 show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FamilyFigures {
    /// The runs.
    pub runs: Vec<FamilyRunRow>,
    /// Fig. 10's effects.
    pub effects: Vec<FamilyEffectRow>,
    /// Strongest co-occurrences: families, runs with both, lift.
    pub co_occurrences: Vec<(RunFamily, RunFamily, usize, f64)>,
}

const COLOURS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Core band of Fig. 9.
fn band(core: f64) -> usize {
    if core < 40.0 {
        0
    } else if core < 70.0 {
        1
    } else {
        2
    }
}
const BANDS: [&str; 3] = ["Core < 40", "40–70", "≥ 70"];

fn by_family(runs: &[FamilyRunRow]) -> BTreeMap<&str, Vec<&FamilyRunRow>> {
    let mut out: BTreeMap<&str, Vec<&FamilyRunRow>> = BTreeMap::new();
    for r in runs {
        out.entry(r.system_family.as_str()).or_default().push(r);
    }
    out
}

/// Fig. 8: per system family, the share of its runs with each diagnosed
/// family (grouped bars), its mean task Core in the legend.
pub fn fig8(runs: &[FamilyRunRow]) -> Result<String> {
    const PLOT: &str = "Fig. 8";
    let groups = by_family(runs);
    let k = groups.len().max(1) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (980, 420)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption(
                    "Fig. 8: diagnosed failure families by system family",
                    (FONT, 18)
                )
                .margin(12)
                .margin_top(40)
                .x_label_area_size(60)
                .y_label_area_size(50)
                .build_cartesian_2d(0f64..RunFamily::ALL.len() as f64, 0f64..100f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .y_desc("Runs with the family (%)")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        for (g, (name, rs)) in groups.iter().enumerate() {
            let colour = COLOURS[g % COLOURS.len()];
            let n = rs.len() as f64;
            for (i, f) in RunFamily::ALL.iter().enumerate() {
                let share = 100.0 * rs.iter().filter(|r| r.families.contains(f)).count() as f64 / n;
                let x0 = i as f64 + 0.1 + 0.8 * g as f64 / k;
                let x1 = x0 + 0.8 / k;
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, share)],
                        colour.filled()
                    )))
                );
            }
            let core = rs.iter().map(|r| r.core).sum::<f64>() / n;
            let y0 = 8 + 16 * g as i32;
            tri!(
                PLOT,
                root.draw(&Rectangle::new(
                    [(700, y0), (712, y0 + 10)],
                    colour.filled()
                ))
            );
            tri!(
                PLOT,
                root.draw(&Text::new(
                    format!("{name} (n={}, mean Core {core:.1})", rs.len()),
                    (716, y0),
                    (FONT, 11).into_font()
                ))
            );
        }
        let centre = Pos::new(HPos::Center, VPos::Top);
        for (i, f) in RunFamily::ALL.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            tri!(
                PLOT,
                root.draw(&Text::new(
                    f.as_str().replace('_', " "),
                    (px, py + 6),
                    TextStyle::from((FONT, 11).into_font()).pos(centre)
                ))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// Fig. 9: system family → primary family → Core band, as a grid of runs
/// (one row per system family and primary family; cells shaded by the
/// row's share in each band).
pub fn fig9(runs: &[FamilyRunRow]) -> Result<String> {
    const PLOT: &str = "Fig. 9";
    let mut rows: BTreeMap<(&str, usize), [usize; 3]> = BTreeMap::new();
    for r in runs {
        let p = r.primary.map_or(RunFamily::ALL.len(), |p| p as usize);
        rows.entry((r.system_family.as_str(), p)).or_default()[band(r.core)] += 1;
    }
    let n = rows.len().max(1);
    let height = (80 + 20 * n).min(2_400) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, height)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        tri!(
            PLOT,
            root.draw(&Text::new(
                "Fig. 9: system family → primary failure family → Core band (runs)",
                (10, 8),
                (FONT, 16).into_font()
            ))
        );
        let left = 330;
        let cell = 130;
        for (b, name) in BANDS.iter().enumerate() {
            tri!(
                PLOT,
                root.draw(&Text::new(
                    *name,
                    (left + cell * b as i32 + 40, 36),
                    (FONT, 12).into_font()
                ))
            );
        }
        for (i, ((sf, p), counts)) in rows.iter().enumerate() {
            let y = 56 + 20 * i as i32;
            let primary = RunFamily::ALL
                .get(*p)
                .map_or("no failure found", |f| f.as_str());
            tri!(
                PLOT,
                root.draw(&Text::new(
                    format!("{sf} → {primary}"),
                    (10, y + 3),
                    (FONT, 12).into_font()
                ))
            );
            let total: usize = counts.iter().sum();
            for (b, &c) in counts.iter().enumerate() {
                let share = c as f64 / total.max(1) as f64;
                let shade = (235.0 - 180.0 * share) as u8;
                let x = left + cell * b as i32;
                tri!(
                    PLOT,
                    root.draw(&Rectangle::new(
                        [(x, y), (x + cell - 4, y + 17)],
                        RGBColor(shade, shade, 255).filled()
                    ))
                );
                tri!(
                    PLOT,
                    root.draw(&Text::new(
                        c.to_string(),
                        (x + cell / 2 - 8, y + 3),
                        (FONT, 12).into_font()
                    ))
                );
            }
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// Fig. 10: within-system Core difference with vs without each family,
/// point and 95 % interval.
pub fn fig10(effects: &[FamilyEffectRow]) -> Result<String> {
    const PLOT: &str = "Fig. 10";
    let shown: Vec<&FamilyEffectRow> = effects.iter().filter(|e| e.delta.value.is_some()).collect();
    let n = shown.len().max(1);
    let lo = shown
        .iter()
        .filter_map(|e| e.delta.ci_low.or(e.delta.value))
        .fold(-5.0f64, f64::min)
        .floor();
    let hi = shown
        .iter()
        .filter_map(|e| e.delta.ci_high.or(e.delta.value))
        .fold(5.0f64, f64::max)
        .ceil();
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (860, (110 + 26 * n) as u32)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption(
                    "Fig. 10: within-system Core difference with vs without each family",
                    (FONT, 16)
                )
                .margin(12)
                .margin_left(210)
                .x_label_area_size(40)
                .build_cartesian_2d(lo..hi, 0f64..n as f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc("Core points (95% bootstrap CI)")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        tri!(
            PLOT,
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (0.0, n as f64)],
                RGBColor(120, 120, 120)
            )))
        );
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, e) in shown.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let v = e.delta.value.unwrap_or_default();
            if let (Some(l), Some(h)) = (e.delta.ci_low, e.delta.ci_high) {
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(l, y), (h, y)],
                        COLOURS[0].stroke_width(2)
                    )))
                );
            }
            let colour = if e.family.is_loop_failure() {
                RGBColor(214, 39, 40)
            } else {
                COLOURS[0]
            };
            tri!(
                PLOT,
                chart.draw_series(std::iter::once(Circle::new((v, y), 5, colour.filled())))
            );
            let (px, py) = chart.backend_coord(&(lo, y));
            tri!(
                PLOT,
                root.draw(&Text::new(
                    format!("{} (n={})", e.family.as_str(), e.runs_with),
                    (px - 8, py),
                    TextStyle::from((FONT, 12).into_font()).pos(right)
                ))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}
