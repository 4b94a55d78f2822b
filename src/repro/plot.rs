//! Report plots (PNG) with plotters. These machines have no fontconfig, so a font is embedded
//! (DejaVu Sans, assets/fonts) and registered with plotters' ab_glyph backend.

use super::Report;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn ensure_font() {
    REGISTER.call_once(|| {
        let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One line per series (device x variant) of `ours` against x (or the configuration's position),
/// and the published figures as dashed lines with hollow markers.
pub fn draw(r: &Report, path: &Path) -> Result<()> {
    ensure_font();
    let configs: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for row in &r.rows {
            if !v.contains(&row.config) {
                v.push(row.config.clone());
            }
        }
        v
    };
    // Without numeric x the configurations are categories: one tick each, markers only.
    let categorical = r.rows.iter().all(|row| row.x.is_none());
    let xof = |row: &super::Row| row.x.unwrap_or_else(|| configs.iter().position(|c| *c == row.config).unwrap_or(0) as f64);
    let mut ours: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut published: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for row in &r.rows {
        if row.ours.is_finite() && (!r.plot.log_y || row.ours > 0.0) {
            ours.entry(row.series()).or_default().push((xof(row), row.ours));
        }
        if let Some(p) = row.published.filter(|p| p.is_finite() && (!r.plot.log_y || *p > 0.0)) {
            let e = published.entry(format!("published: {}", row.published_device)).or_default();
            if !e.iter().any(|q| q.0 == xof(row)) {
                e.push((xof(row), p));
            }
        }
    }
    let all: Vec<(f64, f64)> = ours.values().chain(published.values()).flatten().copied().collect();
    if all.is_empty() {
        return Err(anyhow!("nothing to plot"));
    }
    let (mut x0, mut x1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if x1 <= x0 || categorical {
        x0 -= 0.5;
        x1 += 0.5;
    }
    let label_x = |x: &f64| {
        if categorical {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 { configs.get(i as usize).cloned().unwrap_or_default() } else { String::new() }
        } else {
            tick(x)
        }
    };
    if r.plot.log_y {
        y0 /= 2.0;
        y1 *= 2.0;
    } else {
        let pad = (y1 - y0).abs() * 0.1 + 1e-9;
        y0 = (y0 - pad).min(0.0);
        y1 += pad;
    }
    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let mut b = ChartBuilder::on(&root);
    b.caption(&r.title, ("sans-serif", 22)).margin(15).x_label_area_size(45).y_label_area_size(80);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(&r.plot.x_label)
                .x_labels(if categorical { configs.len() * 2 + 1 } else { 10 })
                .x_label_formatter(&label_x)
                .y_label_formatter(&tick)
                .y_desc(&r.plot.y_label)
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(|e| anyhow!("{e:?}"))?;
            for (i, (name, pts)) in ours.iter_mut().enumerate() {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let c = Palette99::pick(i).to_rgba();
                let line: Vec<(f64, f64)> = if categorical { Vec::new() } else { pts.clone() };
                chart
                    .draw_series(LineSeries::new(line, c.stroke_width(2)))
                    .map_err(|e| anyhow!("{e:?}"))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, c.filled()))).map_err(|e| anyhow!("{e:?}"))?;
            }
            for (i, (name, pts)) in published.iter_mut().enumerate() {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let c = Palette99::pick(i + 40).to_rgba();
                let line: Vec<(f64, f64)> = if categorical { Vec::new() } else { pts.clone() };
                chart
                    .draw_series(DashedLineSeries::new(line, 6, 4, c.stroke_width(2)))
                    .map_err(|e| anyhow!("{e:?}"))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1)));
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 9, c.stroke_width(2)))).map_err(|e| anyhow!("{e:?}"))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 13))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(|e| anyhow!("{e:?}"))?;
        }};
    }
    match (r.plot.log_x && x0 > 0.0, r.plot.log_y) {
        (true, true) => body!(b.build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), (y0..y1).log_scale()).map_err(|e| anyhow!("{e:?}"))?),
        (true, false) => body!(b.build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), y0..y1).map_err(|e| anyhow!("{e:?}"))?),
        (false, true) => body!(b.build_cartesian_2d(x0 - 0.05 * (x1 - x0)..x1 + 0.05 * (x1 - x0), (y0..y1).log_scale()).map_err(|e| anyhow!("{e:?}"))?),
        (false, false) => body!(b.build_cartesian_2d(x0 - 0.05 * (x1 - x0)..x1 + 0.05 * (x1 - x0), y0..y1).map_err(|e| anyhow!("{e:?}"))?),
    }
    root.present().map_err(|e| anyhow!("cannot write {}: {e:?}", path.display()))?;
    Ok(())
}

/// A tick label of at most four significant digits, so float noise never shows
/// (0.15000000000000002 -> 0.15, 0.010000000001 -> 0.01); scientific outside 1e-3..1e5.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if *v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.2e}");
    }
    let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ticks_are_rounded() {
        assert_eq!(super::tick(&0.15000000000000002), "0.15");
        assert_eq!(super::tick(&0.39999999999999997), "0.4");
        assert_eq!(super::tick(&0.010000000001), "0.01");
        assert_eq!(super::tick(&768.0), "768");
        assert_eq!(super::tick(&12345.678), "12346");
        assert_eq!(super::tick(&2.5e-5), "2.50e-5");
        assert_eq!(super::tick(&0.0), "0");
    }
}
