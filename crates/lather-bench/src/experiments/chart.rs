//! SVG charts for the experiments (plotters, SVG backend only: no fonts or system libraries).

use crate::BenchError;
use plotters::prelude::*;
use std::path::Path;

fn fail(path: &Path, e: impl std::fmt::Display) -> BenchError {
    BenchError::Experiment(format!("chart {}: {e}", path.display()))
}

/// One group of bars: a label and, per series, a mean with its standard deviation.
#[derive(Debug, Clone)]
pub(crate) struct BarGroup {
    /// Label under the group.
    pub(crate) label: String,
    /// `(mean, stdev)` per series, in the order of the series names.
    pub(crate) values: Vec<(f64, f64)>,
}

const PALETTE: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// A grouped bar chart with ±1 standard deviation whiskers.
pub(crate) fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[&str],
    groups: &[BarGroup],
) -> Result<(), BenchError> {
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(path, e))?;
    let top = groups
        .iter()
        .flat_map(|g| g.values.iter().map(|(m, s)| m + s))
        .fold(0.0_f64, f64::max)
        * 1.15;
    let n = groups.len();
    let k = series.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..top.max(1e-9))
        .map_err(|e| fail(path, e))?;
    let labels: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&|x| {
            let i = (*x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .draw()
        .map_err(|e| fail(path, e))?;
    let width = 0.8 / k as f64;
    for (s, name) in series.iter().enumerate() {
        let color = PALETTE[s % PALETTE.len()];
        let rects = groups.iter().enumerate().map(|(g, group)| {
            let x0 = g as f64 + 0.1 + s as f64 * width;
            let mean = group.values.get(s).map_or(0.0, |v| v.0);
            Rectangle::new([(x0, 0.0), (x0 + width * 0.9, mean)], color.filled())
        });
        chart
            .draw_series(rects)
            .map_err(|e| fail(path, e))?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        let whiskers = groups.iter().enumerate().map(|(g, group)| {
            let x = g as f64 + 0.1 + s as f64 * width + width * 0.45;
            let (mean, sd) = group.values.get(s).copied().unwrap_or_default();
            PathElement::new(vec![(x, (mean - sd).max(0.0)), (x, mean + sd)], BLACK)
        });
        chart.draw_series(whiskers).map_err(|e| fail(path, e))?;
    }
    if k > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(path, e))?;
    }
    root.present().map_err(|e| fail(path, e))
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// Legend text.
    pub(crate) name: String,
    /// Points, x ascending.
    pub(crate) points: Vec<(f64, f64)>,
}

/// A line chart; `log_y` draws the y axis logarithmically (for latencies that explode).
pub(crate) fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    log_y: bool,
) -> Result<(), BenchError> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(path, e))?;
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let x_max = all().map(|p| p.0).fold(0.0_f64, f64::max).max(1.0);
    let y_max = all().map(|p| p.1).fold(0.0_f64, f64::max).max(1e-3) * 1.2;
    let y_min = all()
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min)
        .min(y_max / 10.0)
        * 0.8;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .draw()
                .map_err(|e| fail(path, e))?;
            for (i, line) in lines.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(
                        line.points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| fail(path, e))?
                    .label(line.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(
                        line.points
                            .iter()
                            .map(|&p| Circle::new(p, 3, color.filled())),
                    )
                    .map_err(|e| fail(path, e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| fail(path, e))?;
        }};
    }
    if log_y {
        draw!(
            builder
                .build_cartesian_2d(0.0..x_max * 1.05, (y_min..y_max).log_scale())
                .map_err(|e| fail(path, e))?
        );
    } else {
        draw!(
            builder
                .build_cartesian_2d(0.0..x_max * 1.05, 0.0..y_max)
                .map_err(|e| fail(path, e))?
        );
    }
    root.present().map_err(|e| fail(path, e))
}
