//! SVG plots of a run: time vs size, time vs threads (log axes), address range vs size.

use std::path::Path;

use plotters::prelude::*;

/// One line of a plot.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Draws `series` on log-log axes (log x only when `log_y` is false) into an SVG file.
pub fn draw(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    log_y: bool,
    series: &[Series],
) -> Result<(), String> {
    draw_xy(path, title, x_desc, y_desc, true, log_y, series)
}

/// Draws `series` into an SVG file, each axis logarithmic or linear (from 0). Points that a
/// log axis cannot show (not above 0) are left out.
pub fn draw_xy(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    log_x: bool,
    log_y: bool,
    series: &[Series],
) -> Result<(), String> {
    let shown =
        |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!log_x || p.0 > 0.0) && (!log_y || p.1 > 0.0);
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().copied()).filter(shown).collect();
    if all.is_empty() {
        return Ok(());
    }
    let (xmin, xmax) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (ymin, ymax) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root);
    chart.caption(title, ("sans-serif", 22)).margin(12).x_label_area_size(45).y_label_area_size(70);
    // Linear axes start at 0 and leave room above the largest value (1 when all are 0).
    let (xtop, ytop) =
        (if xmax > 0.0 { xmax * 1.05 } else { 1.0 }, if ymax > 0.0 { ymax * 1.15 } else { 1.0 });
    macro_rules! body {
        ($chart:expr) => {{
            let mut c = $chart;
            c.configure_mesh().x_desc(x_desc).y_desc(y_desc).draw().map_err(|e| e.to_string())?;
            for (i, s) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(shown).collect();
                let style = if s.dashed { color.stroke_width(1) } else { color.stroke_width(2) };
                c.draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(|e| e.to_string())?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| e.to_string())?;
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| e.to_string())?;
        }};
    }
    let (xl, yl) = ((xmin / 1.3..xmax * 1.3).log_scale(), (ymin / 1.5..ymax * 1.5).log_scale());
    match (log_x, log_y) {
        (true, true) => body!(chart.build_cartesian_2d(xl, yl).map_err(|e| e.to_string())?),
        (true, false) => body!(chart.build_cartesian_2d(xl, 0.0..ytop).map_err(|e| e.to_string())?),
        (false, true) => body!(chart.build_cartesian_2d(0.0..xtop, yl).map_err(|e| e.to_string())?),
        (false, false) => body!(chart.build_cartesian_2d(0.0..xtop, 0.0..ytop).map_err(|e| e.to_string())?),
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_an_svg() {
        let dir = std::env::temp_dir().join(format!("vb-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.svg");
        let s = Series {
            label: "a".into(),
            points: vec![(16.0, 0.2), (32.0, 0.1), (4096.0, 0.5)],
            dashed: false,
        };
        let g = Series { label: "ref".into(), points: vec![(16.0, 0.14), (4096.0, 3.7)], dashed: true };
        draw(&p, "t", "size (B)", "ms", true, &[s, g]).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"), "an SVG with lines");
        // Linear axes keep zeros (a count of nulls per round).
        let z =
            Series { label: "nulls".into(), points: vec![(0.0, 0.0), (1.0, 0.0), (2.0, 3.0)], dashed: false };
        let q = dir.join("z.svg");
        draw_xy(&q, "z", "round", "nulls", false, false, &[z]).unwrap();
        assert!(std::fs::read_to_string(&q).unwrap().contains("polyline"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
