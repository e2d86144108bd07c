//! The report's SVG plots, drawn with `plotters`' SVG backend.

use crate::Result;
use earthverse_stats_bootstrap::{LeaderboardRow, PairedDelta, SliceTable};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &str = "sans-serif";
const MARK: RGBColor = RGBColor(31, 119, 180);
const ACCENT: RGBColor = RGBColor(214, 39, 40);
const GREY: RGBColor = RGBColor(120, 120, 120);

/// Height of a plot with one band per row.
fn band_height(rows: usize) -> u32 {
    (90 + 22 * rows.max(1)).min(2_000) as u32
}

/// Fig. 1(b): mean unit accuracy against mean tokens per task, one point per
/// system (systems without token counts are left out).
pub fn landscape(rows: &[LeaderboardRow]) -> Result<String> {
    const PLOT: &str = "landscape";
    let points: Vec<(f64, f64, &str)> = rows
        .iter()
        .filter_map(|r| r.tokens.map(|t| (t / 1e3, r.unit_acc, r.system.as_str())))
        .collect();
    let x_max = points.iter().map(|p| p.0).fold(1.0f64, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (860, 480)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption("Unit accuracy against tokens per task", (FONT, 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(50)
                .build_cartesian_2d(0f64..x_max, 0f64..100f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .x_desc("Tokens per task (k)")
                .y_desc("Mean unit accuracy (%)")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        tri!(
            PLOT,
            chart.draw_series(points.iter().map(|&(x, y, name)| {
                EmptyElement::at((x, y))
                    + Circle::new((0, 0), 5, MARK.filled())
                    + Text::new(name.to_owned(), (7, -12), (FONT, 11).into_font())
            }))
        );
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// The Table 8 heat map: Core by capability, one row per system.
pub fn heat_map(table: &SliceTable) -> Result<String> {
    const PLOT: &str = "capability heat map";
    let n_rows = table.rows.len().max(1);
    let n_cols = table.columns.len().max(1);
    let width = (260 + 100 * n_cols) as u32;
    let height = band_height(n_rows) + 40;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption("Core by capability (Table 8)", (FONT, 18))
                .margin(10)
                .margin_left(200)
                .margin_bottom(50)
                .build_cartesian_2d(0f64..n_cols as f64, 0f64..n_rows as f64)
        );
        let cells = table.rows.iter().enumerate().flat_map(|(r, row)| {
            let y = (n_rows - 1 - r) as f64;
            row.cells.iter().enumerate().filter_map(move |(c, cell)| {
                cell.map(|cell| {
                    let x = c as f64;
                    (x, y, cell.core)
                })
            })
        });
        let cells: Vec<(f64, f64, f64)> = cells.collect();
        tri!(
            PLOT,
            chart.draw_series(cells.iter().map(|&(x, y, core)| {
                Rectangle::new([(x, y), (x + 1.0, y + 1.0)], ramp(core).filled())
            }))
        );
        let centre = Pos::new(HPos::Center, VPos::Center);
        for &(x, y, core) in &cells {
            let colour = if core < 45.0 { WHITE } else { BLACK };
            let style = TextStyle::from((FONT, 12).into_font())
                .color(&colour)
                .pos(centre);
            let at = chart.backend_coord(&(x + 0.5, y + 0.5));
            tri!(PLOT, root.draw(&Text::new(format!("{core:.1}"), at, style)));
        }
        let right = Pos::new(HPos::Right, VPos::Center);
        for (r, row) in table.rows.iter().enumerate() {
            let y = (n_rows - 1 - r) as f64 + 0.5;
            let (px, py) = chart.backend_coord(&(0.0, y));
            let style = TextStyle::from((FONT, 12).into_font()).pos(right);
            tri!(
                PLOT,
                root.draw(&Text::new(row.system.clone(), (px - 6, py), style))
            );
        }
        let top = Pos::new(HPos::Center, VPos::Top);
        for (c, column) in table.columns.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(c as f64 + 0.5, 0.0));
            let style = TextStyle::from((FONT, 11).into_font()).pos(top);
            tri!(
                PLOT,
                root.draw(&Text::new(short_capability(column), (px, py + 6), style))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// Table 8's short column names for the release's capability tags.
pub fn short_capability(tag: &str) -> String {
    match tag {
        "physical_mechanism" => "Physical mech.".into(),
        "spatiotemporal_process" => "Spatio-temporal".into(),
        "quantitative_calculation" => "Quant. calc.".into(),
        "multi_source_evidence" => "Multi-source".into(),
        "causal_chain" => "Causal chain".into(),
        "ranking_decision" => "Ranking".into(),
        "remote_sensing_geospatial" => "RS / geo.".into(),
        other => other.replace('_', " "),
    }
}

/// White → blue ramp for scores 0–100.
fn ramp(score: f64) -> RGBColor {
    let t = (score / 100.0).clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(247.0, 8.0), lerp(251.0, 48.0), lerp(255.0, 107.0))
}

/// Forest plot of paired differences with their intervals.
pub fn forest(deltas: &[PairedDelta], metric_label: &str) -> Result<String> {
    const PLOT: &str = "forest";
    let n = deltas.len().max(1);
    let lo = deltas.iter().map(|d| d.ci_low).fold(0.0f64, f64::min);
    let hi = deltas.iter().map(|d| d.ci_high).fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.08).max(1.0);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (860, band_height(n) + 30)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption(
                    format!("Paired Δ{metric_label} with 95% bootstrap CIs"),
                    (FONT, 18)
                )
                .margin(12)
                .margin_left(330)
                .x_label_area_size(40)
                .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..n as f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc(format!("Δ{metric_label} (first − second)"))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        tri!(
            PLOT,
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (0.0, n as f64)],
                GREY.stroke_width(1),
            )))
        );
        let y_of = |i: usize| (n - 1 - i) as f64 + 0.5;
        tri!(
            PLOT,
            chart.draw_series(deltas.iter().enumerate().map(|(i, d)| {
                PathElement::new(
                    vec![(d.ci_low, y_of(i)), (d.ci_high, y_of(i))],
                    MARK.stroke_width(2),
                )
            }))
        );
        tri!(
            PLOT,
            chart.draw_series(deltas.iter().enumerate().map(|(i, d)| {
                let colour = if d.excludes_zero() { ACCENT } else { MARK };
                Circle::new((d.delta, y_of(i)), 4, colour.filled())
            }))
        );
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, d) in deltas.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(lo - pad, y_of(i)));
            let style = TextStyle::from((FONT, 11).into_font()).pos(right);
            let label = format!("{} − {} (n={})", d.a, d.b, d.n_tasks);
            tri!(PLOT, root.draw(&Text::new(label, (px - 8, py), style)));
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// Fig. 8: the distribution of task Core per system (box from the quartiles,
/// whiskers to min and max, every task as a point).
pub fn distribution(per_system: &[(String, Vec<f64>)]) -> Result<String> {
    const PLOT: &str = "distribution";
    let n = per_system.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (860, band_height(n) + 30)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption("Task Core by system (Fig. 8)", (FONT, 18))
                .margin(12)
                .margin_left(200)
                .x_label_area_size(40)
                .build_cartesian_2d(0f64..100f64, 0f64..n as f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc("Task Core")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, (system, values)) in per_system.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            if let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) {
                let q = |p: f64| {
                    let mut v = sorted.clone();
                    earthverse_stats_bootstrap::percentile(&mut v, p)
                };
                let (q1, median, q3) = (q(0.25), q(0.5), q(0.75));
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(min, y), (max, y)],
                        GREY.stroke_width(1)
                    )))
                );
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(q1, y - 0.3), (q3, y + 0.3)],
                        RGBColor(198, 219, 239).filled()
                    )))
                );
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(median, y - 0.3), (median, y + 0.3)],
                        BLACK.stroke_width(2)
                    )))
                );
                tri!(
                    PLOT,
                    chart.draw_series(values.iter().enumerate().map(|(k, &v)| {
                        // Deterministic jitter so points do not overlap.
                        let jitter = ((k * 37 % 17) as f64 / 17.0 - 0.5) * 0.5;
                        Circle::new((v, y + jitter), 2, MARK.mix(0.6).filled())
                    }))
                );
            }
            let (px, py) = chart.backend_coord(&(0.0, y));
            let style = TextStyle::from((FONT, 12).into_font()).pos(right);
            tri!(
                PLOT,
                root.draw(&Text::new(system.clone(), (px - 8, py), style))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// Colours of the error families, in [`earthverse_evidence_ledger::ErrorFamily::ALL`] order.
const FAMILY_COLOURS: [RGBColor; 9] = [
    RGBColor(127, 127, 127),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(188, 189, 34),
    RGBColor(31, 119, 180),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Figs. 8–10 as a table's plot: for each system, the share of its wrong
/// answer units in each error family (one stacked bar per system, families
/// in [`earthverse_evidence_ledger::ErrorFamily::ALL`] order, with a legend).
pub fn error_families(per_system: &[(String, [usize; 9])]) -> Result<String> {
    use earthverse_evidence_ledger::ErrorFamily;
    const PLOT: &str = "error families";
    let n = per_system.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (860, band_height(n) + 60)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption(
                    "Error families of wrong answer units (Figs. 8–10)",
                    (FONT, 18)
                )
                .margin(12)
                .margin_left(200)
                .margin_top(50)
                .x_label_area_size(40)
                .build_cartesian_2d(0f64..100f64, 0f64..n as f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc("Share of the system's wrong units (%)")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, (system, counts)) in per_system.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let total: usize = counts.iter().sum();
            let mut x = 0.0;
            for (k, &c) in counts.iter().enumerate() {
                if total == 0 || c == 0 {
                    continue;
                }
                let w = 100.0 * c as f64 / total as f64;
                tri!(
                    PLOT,
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x, y - 0.35), (x + w, y + 0.35)],
                        FAMILY_COLOURS[k].filled()
                    )))
                );
                x += w;
            }
            let (px, py) = chart.backend_coord(&(0.0, y));
            let style = TextStyle::from((FONT, 12).into_font()).pos(right);
            tri!(
                PLOT,
                root.draw(&Text::new(
                    format!("{system} (n={total})"),
                    (px - 8, py),
                    style
                ))
            );
        }
        // Legend above the caption (which sits below the 50 px top
        // margin), one swatch per family, two rows.
        for (k, family) in ErrorFamily::ALL.iter().enumerate() {
            let x0 = 20 + (k as i32 % 5) * 165;
            let y0 = 6 + (k as i32 / 5) * 16;
            tri!(
                PLOT,
                root.draw(&Rectangle::new(
                    [(x0, y0), (x0 + 12, y0 + 10)],
                    FAMILY_COLOURS[k].filled()
                ))
            );
            tri!(
                PLOT,
                root.draw(&Text::new(
                    family.as_str().to_owned(),
                    (x0 + 16, y0),
                    (FONT, 11).into_font()
                ))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}

/// The share of satisfied numeric answer units traced to an observation
/// or a computation, per system (strong traces dark, weak ones light).
pub fn traced_share(per_system: &[(String, f64, f64)]) -> Result<String> {
    const PLOT: &str = "traced share";
    let n = per_system.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (860, band_height(n) + 30)).into_drawing_area();
        tri!(PLOT, root.fill(&WHITE));
        let mut chart = tri!(
            PLOT,
            ChartBuilder::on(&root)
                .caption(
                    "Satisfied numeric units traced to the investigation",
                    (FONT, 18)
                )
                .margin(12)
                .margin_left(200)
                .x_label_area_size(40)
                .build_cartesian_2d(0f64..100f64, 0f64..n as f64)
        );
        tri!(
            PLOT,
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc("Traced share (%): observed, computed or transformed")
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
        );
        let right = Pos::new(HPos::Right, VPos::Center);
        for (i, (system, strong, with_weak)) in per_system.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            tri!(
                PLOT,
                chart.draw_series([
                    Rectangle::new(
                        [(0.0, y - 0.35), (100.0 * with_weak, y + 0.35)],
                        RGBColor(198, 219, 239).filled()
                    ),
                    Rectangle::new([(0.0, y - 0.35), (100.0 * strong, y + 0.35)], MARK.filled()),
                ])
            );
            let (px, py) = chart.backend_coord(&(0.0, y));
            let style = TextStyle::from((FONT, 12).into_font()).pos(right);
            tri!(
                PLOT,
                root.draw(&Text::new(system.clone(), (px - 8, py), style))
            );
        }
        tri!(PLOT, root.present());
    }
    Ok(svg)
}
