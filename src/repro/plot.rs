//! Report plots (PNG) with plotters. These machines have no fontconfig, so a font is embedded
//! (DejaVu Sans, assets/fonts) and registered with plotters' ab_glyph backend.

use super::Report;
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::collections::BTreeMap;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn ensure_font() {
    REGISTER.call_once(|| {
        let _ = register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One drawn line: a series of `ours` (or the published figures), its points sorted by x.
struct Line {
    name: String,
    pts: Vec<(f64, f64)>,
    color: RGBAColor,
    published: bool,
}

/// What a configuration's label says besides its numbers ("768 B/sample, Euler" ->
/// "B/sample, Euler"): the key that tells apart rows of one series sharing an x. A label that
/// names its family before a colon ("dataset 2: step 0.1 vox, threshold 0.9") keeps just that
/// name, numbers included: stripping them made every dataset of probtrack-t2 one zig-zag line.
fn family(config: &str) -> String {
    if let Some((head, _)) = config.split_once(':') {
        return head.trim().to_string();
    }
    let s: String = config.chars().filter(|c| !c.is_ascii_digit() && *c != '.').collect();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits one series' points into lines: one line when every x occurs once, else one line per
/// configuration family, so no line joins two unrelated measurements at the same x (RK2 and
/// Euler rows of a CPU series on geodesic-t1).
fn split_series(name: &str, rows: &[(String, f64, f64)]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut xs: Vec<f64> = rows.iter().map(|r| r.1).collect();
    xs.sort_by(f64::total_cmp);
    let repeats = xs.windows(2).any(|w| w[0] == w[1]);
    if !repeats {
        return vec![(name.to_string(), rows.iter().map(|r| (r.1, r.2)).collect())];
    }
    // Parts every family shares (the unit in "B/sample" and "B/sample, Euler") tell no line
    // apart: the legend read "CPU (B/sample)" beside "CPU (B/sample, Euler)".
    let parts = |f: &str| f.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect::<Vec<_>>();
    let families: Vec<Vec<String>> = rows.iter().map(|r| parts(&family(&r.0))).collect();
    let shared: Vec<String> = families[0].iter().filter(|p| families.iter().all(|f| f.contains(p))).cloned().collect();
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (f, (_, x, y)) in families.iter().zip(rows) {
        let own: Vec<&str> = f.iter().filter(|p| !shared.contains(p)).map(|p| p.as_str()).collect();
        by.entry(own.join(", ")).or_default().push((*x, *y));
    }
    by.into_iter().map(|(f, pts)| (if f.is_empty() { name.to_string() } else { format!("{name} ({f})") }, pts)).collect()
}

/// Line colours: matplotlib's tab10, with its orange, pink, olive and cyan darkened and grey
/// left to the published figures, then six darker ones. Palette99 went on to beige, mint,
/// lavender and pink, near-invisible on white, which hid whole series of compare's plots.
const PALETTE: [u32; 16] = [
    0x1f77b4, 0xd62728, 0x2ca02c, 0xd95f02, 0x9467bd, 0x8c564b, 0xc51b7d, 0x0e8a96, 0x808000, 0x000075, 0x800000, 0xa6761d, 0x000000, 0x7570b3,
    0xe7298a, 0x1b9e77,
];

/// The `i`th series' colour (cycling after 16).
fn colour(i: usize) -> RGBColor {
    let c = PALETTE[i % PALETTE.len()];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Ticks of a log axis over [lo, hi]: 1, 2, 5 per decade, every integer multiple when that gives
/// fewer than four, only the powers of ten when the range spans many decades.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let at = |mult: &[f64]| -> Vec<f64> {
        let mut v = Vec::new();
        for d in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
            for m in mult {
                let t = m * 10f64.powi(d);
                if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                    v.push(t);
                }
            }
        }
        v
    };
    let mid = at(&[1.0, 2.0, 5.0]);
    if mid.len() < 4 {
        at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    } else if mid.len() > 16 {
        at(&[1.0])
    } else {
        mid
    }
}

/// The span of a log axis around data over [lo, hi]: a fifth more each way, then out to the
/// next tick, so both ends are labelled. Halving and doubling left a third of geodesic-f7's and
/// probtrack-t4's time axes above their last label (0.01 of 0.016, 0.1 of 0.16).
fn log_span(lo: f64, hi: f64) -> (f64, f64) {
    let out = |mult: &[f64]| {
        let at = |v: f64| (v.log10().floor() as i32 - 1..=v.log10().floor() as i32 + 1).flat_map(|d| mult.iter().map(move |m| m * 10f64.powi(d)));
        let a = at(lo / 1.25).filter(|t| *t <= lo / 1.25 * (1.0 + 1e-9)).fold(f64::MIN, f64::max);
        let b = at(hi * 1.25).filter(|t| *t >= hi * 1.25 * (1.0 - 1e-9)).fold(f64::MAX, f64::min);
        (a, b)
    };
    let (a, b) = out(&[1.0, 2.0, 5.0]);
    // Spans that log_ticks labels at powers of ten alone end at powers of ten.
    let (a, b) = if log_ticks(a, b).iter().all(|t| (t.log10() - t.log10().round()).abs() < 1e-9) { out(&[1.0]) } else { (a, b) };
    // A hair beyond the ticks, so rounding never drops the end labels off the axis.
    (a * (1.0 - 1e-6), b * (1.0 + 1e-6))
}

/// Ticks of a log x axis; where every x is a whole number (threads, steps per segment) the
/// fractional ones go: geodesic-f7's thread axis read 0.8 and 0.9 in the padding before 1.
fn log_x_ticks(lo: f64, hi: f64, whole: bool) -> Vec<f64> {
    log_ticks(lo, hi).into_iter().filter(|t| !whole || t.fract() == 0.0).collect()
}

/// What one report's plot shows, worked out before drawing: its lines, axes and image size.
struct Plot<'a> {
    r: &'a Report,
    lines: Vec<Line>,
    /// The configurations in row order: the categories where no row has a numeric x.
    configs: Vec<String>,
    categorical: bool,
    /// Data ranges with their padding (x of categories: -0.5 .. n - 0.5).
    x: (f64, f64),
    y: (f64, f64),
    /// Integer x values over a short span (example numbers, counts): integer ticks only.
    integral_x: bool,
    /// Legend columns.
    cols: usize,
    size: (u32, u32),
}

/// One line per series (device x variant) of `ours` against x (or the configuration's position),
/// and the published figures as dashed lines with hollow markers. The legend goes below the
/// plot area, so it never covers data.
/// Returns the PNG file's bytes (the caller writes it through its output set).
pub fn draw(r: &Report) -> Result<Vec<u8>> {
    let p = layout(r)?;
    let (w, h) = p.size;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    // The drawing area borrows `rgb` until the end of this block.
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        render(&p, &root)?;
        root.present().map_err(|e| anyhow!("{e:?}"))?;
    }
    Ok(png(w, h, &rgb))
}

fn layout(r: &Report) -> Result<Plot<'_>> {
    ensure_font();
    let rows: Vec<&super::Row> = r.rows.iter().filter(|row| r.plot.metric.as_ref().is_none_or(|m| row.metric == *m)).collect();
    let configs: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for row in &rows {
            if !v.contains(&row.config) {
                v.push(row.config.clone());
            }
        }
        v
    };
    // Without numeric x the configurations are categories: one tick each, markers only, each
    // series shifted a little so markers at one category do not hide each other (over 0.6 of a
    // category: over 0.3, fim-t1's nine series stood 10 px apart, markers 10 px wide, touching).
    let categorical = rows.iter().all(|row| row.x.is_none());
    let xof = |row: &super::Row| row.x.unwrap_or_else(|| configs.iter().position(|c| *c == row.config).unwrap_or(0) as f64);
    let mut series: BTreeMap<String, Vec<(String, f64, f64)>> = BTreeMap::new();
    let mut published: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for &row in &rows {
        if row.ours.is_finite() && (!r.plot.log_y || row.ours > 0.0) {
            series.entry(row.series()).or_default().push((row.config.clone(), xof(row), row.ours));
        }
        if let Some(p) = row.published.filter(|p| p.is_finite() && (!r.plot.log_y || *p > 0.0)) {
            let e = published.entry(format!("published: {}", row.published_device)).or_default();
            if !e.iter().any(|q| q.0 == xof(row)) {
                e.push((xof(row), p));
            }
        }
    }
    let mut lines: Vec<Line> = Vec::new();
    for (name, rows) in &series {
        for (n, pts) in split_series(name, rows) {
            lines.push(Line { name: n, pts, color: colour(lines.len()).to_rgba(), published: false });
        }
    }
    if categorical && lines.len() > 1 {
        let k = lines.len() as f64;
        for (i, l) in lines.iter_mut().enumerate() {
            let dx = (i as f64 - (k - 1.0) / 2.0) * (0.6 / k);
            l.pts.iter_mut().for_each(|p| p.0 += dx);
        }
    }
    for (i, (name, pts)) in published.into_iter().enumerate() {
        lines.push(Line { name, pts, color: Palette99::pick(i + 40).to_rgba(), published: true });
    }
    lines.iter_mut().for_each(|l| l.pts.sort_by(|a, b| a.0.total_cmp(&b.0)));
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|l| l.pts.iter().copied()).collect();
    if all.is_empty() {
        return Err(anyhow!("nothing to plot"));
    }
    let (mut x0, mut x1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if categorical {
        x0 = -0.5;
        x1 = configs.len() as f64 - 0.5;
    } else if x1 <= x0 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    if r.plot.log_y {
        (y0, y1) = log_span(y0, y1);
    } else {
        let pad = (y1 - y0).abs() * 0.1 + 1e-9;
        y0 = (y0 - pad).min(0.0);
        y1 += pad;
    }
    let integral_x = !r.plot.log_x && (x1 - x0) <= 12.0 && lines.iter().all(|l| l.pts.iter().all(|p| p.0.fract() == 0.0));
    // Legend below the chart: two columns of entries, one where a name would run into the
    // second column (~6.5 px a character at 13 px, 468 px of text per column).
    let cols = if lines.iter().all(|l| l.name.chars().count() <= 70) { 2 } else { 1 };
    let legend_rows = lines.len().div_ceil(cols) as u32;
    let legend_h = 20 * legend_rows + 20;
    Ok(Plot { r, lines, configs, categorical, x: (x0, x1), y: (y0, y1), integral_x, cols, size: (1100, 700 + legend_h) })
}

impl Plot<'_> {
    /// An x tick's label: the configuration at a category's position, else the number.
    fn label_x(&self, x: &f64) -> String {
        if self.categorical {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 { self.configs.get(i as usize).cloned().unwrap_or_default() } else { String::new() }
        } else {
            tick(x)
        }
    }
}

/// Draws `p` on `root` (a bitmap for the report, SVG in tests).
fn render<DB: DrawingBackend>(p: &Plot, root: &DrawingArea<DB, Shift>) -> Result<()> {
    let (r, lines, configs, categorical, integral_x, cols, w) = (p.r, &p.lines, &p.configs, p.categorical, p.integral_x, p.cols, p.size.0);
    let ((x0, x1), (y0, y1)) = (p.x, p.y);
    let label_x = |x: &f64| p.label_x(x);
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let (plot_area, legend_area) = root.split_vertically(700);
    let mut b = ChartBuilder::on(&plot_area);
    let title = caption(&r.title);
    b.caption(&title, ("sans-serif", caption_px(&title, w - 30))).margin(15).x_label_area_size(45).y_label_area_size(80);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(&r.plot.x_label)
                .x_labels(if categorical { configs.len() * 2 + 1 } else if integral_x { (x1 - x0) as usize + 1 } else { 10 })
                .x_max_light_lines(x_light_lines(categorical))
                .x_label_formatter(&label_x)
                .y_label_formatter(&tick)
                .y_desc(&r.plot.y_label)
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(|e| anyhow!("{e:?}"))?;
            for l in lines {
                let line: Vec<(f64, f64)> = if categorical { Vec::new() } else { l.pts.clone() };
                let c = l.color;
                if l.published {
                    chart.draw_series(DashedLineSeries::new(line, 6, 4, c.stroke_width(2))).map_err(|e| anyhow!("{e:?}"))?;
                    chart.draw_series(l.pts.iter().map(|p| Circle::new(*p, 9, c.stroke_width(2)))).map_err(|e| anyhow!("{e:?}"))?;
                } else {
                    chart.draw_series(LineSeries::new(line, c.stroke_width(2))).map_err(|e| anyhow!("{e:?}"))?;
                    chart.draw_series(l.pts.iter().map(|p| Circle::new(*p, 5, c.filled()))).map_err(|e| anyhow!("{e:?}"))?;
                }
            }
        }};
    }
    let xr = x0 - 0.05 * (x1 - x0)..x1 + 0.05 * (x1 - x0);
    let (lx0, lx1) = (x0 * 0.8, x1 * 1.25);
    let ylog = || (y0..y1).log_scale().with_key_points(log_ticks(y0, y1));
    let whole = lines.iter().all(|l| l.pts.iter().all(|p| p.0.fract() == 0.0));
    let xlog = || (lx0..lx1).log_scale().with_key_points(log_x_ticks(lx0, lx1, whole));
    match (r.plot.log_x && x0 > 0.0 && !categorical, r.plot.log_y) {
        (true, true) => body!(b.build_cartesian_2d(xlog(), ylog()).map_err(|e| anyhow!("{e:?}"))?),
        (true, false) => body!(b.build_cartesian_2d(xlog(), y0..y1).map_err(|e| anyhow!("{e:?}"))?),
        (false, true) => body!(b.build_cartesian_2d(xr, ylog()).map_err(|e| anyhow!("{e:?}"))?),
        (false, false) => body!(b.build_cartesian_2d(xr, y0..y1).map_err(|e| anyhow!("{e:?}"))?),
    }
    let font = ("sans-serif", 13).into_font();
    for (i, l) in lines.iter().enumerate() {
        let (x, y) = (95 + 500 * (i % cols) as i32, 10 + 20 * (i / cols) as i32);
        let style = l.color.stroke_width(2);
        // Categories are drawn as markers alone; so is their legend, published figures' too
        // (geodesic-prep's legend showed a line beside the published figure the plot has not).
        if !categorical {
            let end = if l.published { x + 10 } else { x + 25 };
            legend_area.draw(&PathElement::new(vec![(x, y + 7), (end, y + 7)], style)).map_err(|e| anyhow!("{e:?}"))?;
        }
        if l.published {
            legend_area.draw(&Circle::new((x + 15, y + 7), 5, style)).map_err(|e| anyhow!("{e:?}"))?;
        } else {
            legend_area.draw(&Circle::new((x + 12, y + 7), 4, l.color.filled())).map_err(|e| anyhow!("{e:?}"))?;
        }
        legend_area.draw(&Text::new(l.name.clone(), (x + 32, y), font.clone())).map_err(|e| anyhow!("{e:?}"))?;
    }
    Ok(())
}

/// Light grid lines between two x ticks: plotters' 10 on a numeric axis, none between
/// categories, where a fraction of the way from one configuration to the next means nothing
/// (airwc's and fim-t1's plots had ten faint lines between every two configurations).
fn x_light_lines(categorical: bool) -> usize {
    if categorical { 0 } else { 10 }
}

/// The plot's title: the table's, less its "and speed-up" (geodesic-t3, probtrack-t2), which
/// promised a reader something only the table has: plots draw the measured figures alone.
fn caption(title: &str) -> String {
    title.replacen(" and speed-up", "", 1)
}

/// The title's font size: 22 px, smaller where the title would not fit `width` (compare adds
/// ", N runs merged" to the table's title, and the pipeline's then ran to the image's edges).
fn caption_px(title: &str, width: u32) -> u32 {
    ensure_font();
    (12..=22).rev().find(|&px| ("sans-serif", px).into_font().box_size(title).is_ok_and(|(w, _)| w <= width)).unwrap_or(12)
}

/// An 8-bit RGB PNG of `rgb` (rows top to bottom, no filter, zlib-compressed).
fn png(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut raw = Vec::with_capacity(rgb.len() + h as usize);
    for row in rgb.chunks(w as usize * 3) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).expect("writing to memory");
    let idat = z.finish().expect("writing to memory");
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &idat);
    chunk(b"IEND", &[]);
    out
}

/// A tick label of at most four significant digits, so float noise never shows
/// (0.15000000000000002 -> 0.15, 0.010000000001 -> 0.01); scientific outside 1e-4..1e5.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if *v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // Decimals down to 1e-4: an axis read "5e-4" under "0.001" and "0.002" (pipeline's stages).
    if !(1e-4..1e5).contains(&a) {
        // The mantissa's trailing zeros go, as below ("5e-5", not "5.00e-5").
        let s = format!("{v:.2e}");
        return match s.split_once('e') {
            Some((m, e)) if m.contains('.') => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            _ => s,
        };
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
    use crate::repro::{PlotSpec, Report, Row};

    /// A report of `rows` (config, x, series variant, time) on one CPU, log time axis.
    pub(super) fn report(rows: &[(&str, Option<f64>, &str, f64)]) -> Report {
        let rows = rows.iter().map(|&(c, x, v, t)| Row { config: c.into(), x, device: "cpu".into(), device_name: "test".into(), variant: v.into(), metric: "time".into(), ours: t, ..Row::default() }).collect();
        let plot = PlotSpec { x_label: "configuration".into(), y_label: "time (s)".into(), log_x: false, log_y: true, metric: None };
        Report { id: "t".into(), title: "A test table".into(), rows, notes: Vec::new(), plot }
    }

    /// The plot of `r` as SVG, whose elements tests can read where the PNG has only pixels.
    pub(super) fn svg(r: &Report) -> String {
        use plotters::prelude::*;
        let p = super::layout(r).unwrap();
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, p.size).into_drawing_area();
            super::render(&p, &root).unwrap();
            root.present().unwrap();
        }
        s
    }

    /// Vertical grid lines drawn in plotters' light mesh colour (black at 10%).
    fn light_vertical_lines(svg: &str) -> usize {
        svg.lines().filter(|l| l.contains("<line") && l.contains(r#"opacity="0.1""#)).filter(|l| {
            let attr = |k: &str| l.split(&format!(" {k}=\"")).nth(1).and_then(|v| v.split('"').next()).map(str::to_string);
            attr("x1").is_some() && attr("x1") == attr("x2")
        }).count()
    }

    /// Straight segments (`<polyline>`) drawn below `y` px: the legend's line glyphs.
    fn polylines_below(svg: &str, y: i32) -> usize {
        svg.lines().filter(|l| l.contains("<polyline")).filter(|l| {
            let pts = l.split(r#"points=""#).nth(1).and_then(|v| v.split('"').next()).unwrap_or("");
            let ys: Vec<i32> = pts.split_whitespace().filter_map(|p| p.split(',').nth(1)?.parse().ok()).collect();
            !ys.is_empty() && ys.iter().all(|py| *py > y)
        }).count()
    }

    #[test]
    fn plot_titles_name_only_what_is_drawn() {
        for t in crate::repro::registry() {
            let c = super::caption(t.title());
            assert!(!c.contains("speed-up"), "{}: {c}", t.id());
        }
        assert_eq!(super::caption("Tracing time and speed-up against the seed count (001 Table 3), 2 runs merged"), "Tracing time against the seed count (001 Table 3), 2 runs merged");
    }

    #[test]
    fn a_categorical_legend_has_no_lines() {
        let mut r = report(&[("preparation", None, "1 thread", 270.0), ("tensor fit", None, "1 thread", 1300.0)]);
        r.rows[0].published = Some(50.0);
        r.rows[0].published_device = "GeForce GTX 260".into();
        assert_eq!(polylines_below(&svg(&r), 700), 0);
        // On a numeric axis both entries show their line (so the count above could be non-zero).
        r.rows.iter_mut().zip([1.0, 2.0]).for_each(|(row, x)| row.x = Some(x));
        assert_eq!(polylines_below(&svg(&r), 700), 2);
    }

    #[test]
    fn markers_of_one_category_stand_apart() {
        // fim-t1: nine series at each of three examples; equal times are the worst case.
        let rows: Vec<(String, String)> = (0..3).flat_map(|c| (0..9).map(move |v| (format!("example {c}"), format!("variant {v}")))).collect();
        let r = report(&rows.iter().map(|(c, v)| (c.as_str(), None, v.as_str(), 1.0)).collect::<Vec<_>>());
        let svg = svg(&r);
        let num = |l: &str, k: &str| l.split(&format!(" {k}=\"")).nth(1).and_then(|v| v.split('"').next()).and_then(|v| v.parse::<f64>().ok());
        let centres: Vec<(f64, f64)> = svg.lines().filter(|l| l.contains("<circle") && num(l, "r") == Some(5.0)).filter_map(|l| Some((num(l, "cx")?, num(l, "cy")?))).collect();
        assert_eq!(centres.len(), 27);
        let closest = centres.iter().enumerate().flat_map(|(i, a)| centres[..i].iter().map(move |b| (a.0 - b.0).hypot(a.1 - b.1))).fold(f64::MAX, f64::min);
        // Markers 10 px wide, and 2 px of white between two.
        assert!(closest >= 12.0, "{closest} px");
    }

    #[test]
    fn categories_have_no_light_grid_lines_between_them() {
        let cat = report(&[("same subject", None, "1 thread", 0.5), ("two subjects", None, "1 thread", 0.6), ("same subject", None, "all cores", 0.4), ("two subjects", None, "all cores", 0.45)]);
        assert_eq!(light_vertical_lines(&svg(&cat)), 0);
        // A numeric axis keeps them (and the count above could have been non-zero).
        let num = report(&[("64 seeds", Some(64.0), "", 0.002), ("128 seeds", Some(128.0), "", 0.004), ("256 seeds", Some(256.0), "", 0.008)]);
        assert!(light_vertical_lines(&svg(&num)) > 10);
    }

    #[test]
    fn ticks_are_rounded() {
        assert_eq!(super::tick(&0.15000000000000002), "0.15");
        assert_eq!(super::tick(&0.39999999999999997), "0.4");
        assert_eq!(super::tick(&0.010000000001), "0.01");
        assert_eq!(super::tick(&768.0), "768");
        assert_eq!(super::tick(&12345.678), "12346");
        assert_eq!(super::tick(&2.5e-5), "2.5e-5");
        // Down to 1e-4 in decimals, so an axis reads 0.0005 beside 0.001, not 5e-4 (pipeline).
        assert_eq!(super::tick(&5e-4), "0.0005");
        assert_eq!(super::tick(&2e-4), "0.0002");
        assert_eq!(super::tick(&1.234e7), "1.23e7");
        assert_eq!(super::tick(&0.0), "0");
    }

    #[test]
    fn log_axes_have_readable_ticks() {
        // geodesic-t1's time axis (about 3..60 ms) showed one label: now 5, 10, 20, 50 at least.
        let t = super::log_ticks(3.0, 60.0);
        for v in [5.0, 10.0, 20.0, 50.0] {
            assert!(t.iter().any(|x| (x - v).abs() < 1e-9), "{t:?}");
        }
        // geodesic-f7's thread axis 0.8..5: every integer.
        let t = super::log_ticks(0.8, 5.0);
        assert!([1.0, 2.0, 3.0, 4.0, 5.0].iter().all(|v| t.contains(v)), "{t:?}");
        assert!(super::log_ticks(1e-3, 1e9).len() <= 13);
    }

    #[test]
    fn series_sharing_an_x_are_split_by_configuration() {
        let rows = vec![("640 B/sample".to_string(), 640.0, 20.0), ("768 B/sample".to_string(), 768.0, 24.0), ("768 B/sample, Euler".to_string(), 768.0, 30.0)];
        let lines = super::split_series("CPU", &rows);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().all(|(_, pts)| { let mut x: Vec<f64> = pts.iter().map(|p| p.0).collect(); x.dedup(); x.len() == pts.len() }));
        // thread counts ("1 thread", "2 threads") differ in text but never share an x: one line
        let rows = vec![("1 thread".to_string(), 1.0, 9.0), ("2 threads".to_string(), 2.0, 5.0)];
        assert_eq!(super::split_series("CPU", &rows).len(), 1);
        // probtrack-t2: one line per dataset, whatever the numbers after the colon.
        let rows: Vec<(String, f64, f64)> = [(1, 0.1, 0.9), (1, 0.2, 0.8), (2, 0.1, 0.9), (2, 0.2, 0.85)].iter().map(|&(d, x, t)| (format!("dataset {d}: step {x} vox, threshold {t}"), x, 1.0)).collect();
        let lines = super::split_series("CPU", &rows);
        assert_eq!(lines.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(), ["CPU (dataset 1)", "CPU (dataset 2)"]);
    }

    #[test]
    fn line_names_keep_only_what_tells_them_apart() {
        // geodesic-t1's CPU legend read "CPU (B/sample)" and "CPU (B/sample, Euler)": the unit
        // every label shares named neither line.
        let rows = vec![("640 B/sample".to_string(), 640.0, 20.0), ("768 B/sample".to_string(), 768.0, 24.0), ("768 B/sample, Euler".to_string(), 768.0, 30.0)];
        let lines = super::split_series("CPU", &rows);
        assert_eq!(lines.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(), ["CPU", "CPU (Euler)"]);
    }

    #[test]
    fn log_time_axes_end_at_labelled_ticks() {
        // geodesic-f7 (0.0079..0.0082 s), probtrack-t4, geodesic-prep, pipeline, fim-t1.
        for (lo, hi) in [(0.0079, 0.0082), (0.038, 0.082), (39.0, 3800.0), (0.00065, 1.1), (0.012, 2.8), (3.0, 3.0), (1e-3, 1e9)] {
            let (a, b) = super::log_span(lo, hi);
            assert!(a < lo && b > hi, "{lo}..{hi}: {a}..{b}");
            let t = super::log_ticks(a, b);
            let near = |v: f64| t.iter().any(|x| (x / v - 1.0).abs() < 1e-5);
            assert!(near(a) && near(b), "{lo}..{hi}: span {a}..{b}, ticks {t:?}");
            // Padding past the data's 1.25 each way: one step of 1, 2, 5 (x 2.5), or of 10 where
            // only powers of ten are labelled.
            let step = if t.iter().all(|x| (x.log10() - x.log10().round()).abs() < 1e-9) { 10.0 } else { 2.5 };
            assert!(lo / a <= 1.25 * step * (1.0 + 1e-5) && b / hi <= 1.25 * step * (1.0 + 1e-5), "{lo}..{hi}: {a}..{b}");
        }
    }

    #[test]
    fn whole_number_axes_have_no_fractional_ticks() {
        // geodesic-f7: threads 1, 2, 4 on 0.8..5.
        assert_eq!(super::log_x_ticks(0.8, 5.0, true), [1.0, 2.0, 3.0, 4.0, 5.0]);
        // Step sizes keep theirs.
        assert!(super::log_x_ticks(0.04, 0.6, false).contains(&0.1));
    }

    #[test]
    fn long_titles_are_set_smaller_to_fit() {
        use plotters::style::IntoFont;
        let short = "Tracing time against bytes read per field sample (001 Table 1)";
        assert_eq!(super::caption_px(short, 1070), 22);
        let long = "The whole user pipeline: read, tensor fit, bedpost, geodesic tracking, write (wall time per stage), 12 runs merged, quick and paper scales";
        let px = super::caption_px(long, 1070);
        assert!(px < 22, "{px}");
        let (w, _) = ("sans-serif", px).into_font().box_size(long).unwrap();
        assert!(w <= 1070 && w > 900, "{w} px at {px}");
        // At 22 px it would have run past the image (1100 px less 2 x 15 px margins).
        assert!(("sans-serif", 22).into_font().box_size(long).unwrap().0 > 1070);
    }

    #[test]
    fn line_colours_stand_out_on_white() {
        // Palette99's beige, mint, lavender and pink (contrast 1.1-1.6 against the white
        // background) hid whole lines of compare's 16-series plots; 3:1 is WCAG's bound for
        // graphics. Every series up to 16 gets its own colour.
        fn lin(c: u8) -> f64 {
            let c = c as f64 / 255.0;
            if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        }
        let cols: Vec<_> = (0..16).map(super::colour).collect();
        for c in &cols {
            let l = 0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2);
            assert!(1.05 / (l + 0.05) >= 3.0, "{c:?}: contrast {}", 1.05 / (l + 0.05));
        }
        for (i, a) in cols.iter().enumerate() {
            assert!(cols[..i].iter().all(|b| (a.0, a.1, a.2) != (b.0, b.1, b.2)), "{a:?} twice");
        }
    }
}
