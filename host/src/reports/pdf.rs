//! An uptime report as a PDF, written in-process (`pdf-writer`): A4 pages in the PDF's
//! built-in Helvetica, a bar chart of each monitor's uptime against its target, the
//! figures, the incidents and the rules. Text outside Latin-1 is written as `?` (the
//! built-in fonts' encoding has no other letters); the JSON, CSV and HTML keep it.

use super::{MonitorReport, UptimeReport};
use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str, TextStr};

const WIDTH: f32 = 595.0;
const HEIGHT: f32 = 842.0;
const MARGIN: f32 = 48.0;
const REGULAR: Name<'static> = Name(b"F1");
/// Incidents listed per monitor: a flapping monitor's hundreds would fill pages.
const MAX_INCIDENTS: usize = 25;
const BOLD: Name<'static> = Name(b"F2");

/// Text as the built-in fonts' WinAnsi encoding holds it (Latin-1 here; others as `?`).
fn latin1(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match u32::from(c) {
            0x20..=0x7e | 0xa0..=0xff => c as u8,
            _ => b'?',
        })
        .collect()
}

/// About how wide `text` is in Helvetica at `size` (an average glyph width: enough to
/// wrap and to fit columns, not to justify).
fn width(text: &str, size: f32) -> f32 {
    text.chars().count() as f32 * size * 0.52
}

/// `text` cut to fit `room` points at `size`, with `…` spelt `...` when cut.
fn fit(text: &str, size: f32, room: f32) -> String {
    if width(text, size) <= room {
        return text.to_string();
    }
    let keep = ((room / (size * 0.52)) as usize).saturating_sub(3);
    format!("{}...", text.chars().take(keep).collect::<String>())
}

/// Lines of at most `room` points.
fn wrap(text: &str, size: f32, room: f32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if width(&candidate, size) > room && !line.is_empty() {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The pages being drawn, top to bottom.
struct Pages {
    done: Vec<Content>,
    page: Content,
    /// The baseline of the next line.
    y: f32,
}

impl Pages {
    fn new() -> Pages {
        Pages {
            done: Vec::new(),
            page: Content::new(),
            y: HEIGHT - MARGIN,
        }
    }

    /// Room for `points` more, else a new page.
    fn room(&mut self, points: f32) {
        if self.y - points < MARGIN {
            let full = std::mem::replace(&mut self.page, Content::new());
            self.done.push(full);
            self.y = HEIGHT - MARGIN;
        }
    }

    fn text(&mut self, x: f32, font: Name<'_>, size: f32, text: &str) {
        self.page.set_fill_gray(0.1);
        self.page.begin_text();
        self.page.set_font(font, size);
        self.page.next_line(x, self.y);
        self.page.show(Str(&latin1(text)));
        self.page.end_text();
    }

    /// A line of text, then down by `size` and a little.
    fn line(&mut self, font: Name<'_>, size: f32, text: &str) {
        self.room(size * 1.5);
        self.text(MARGIN, font, size, text);
        self.y -= size * 1.5;
    }

    fn paragraph(&mut self, size: f32, text: &str) {
        for line in wrap(text, size, WIDTH - 2.0 * MARGIN) {
            self.line(REGULAR, size, &line);
        }
    }

    fn gap(&mut self, points: f32) {
        self.y -= points;
    }

    fn finish(mut self) -> Vec<Content> {
        self.done.push(self.page);
        self.done
    }
}

/// The chart's bar for one monitor: its uptime on a scale from `floor` to 100 %, the
/// target as a tick, green when met, red when missed, grey without a target.
fn bar(p: &mut Pages, m: &MonitorReport, floor: f64) {
    const LABEL: f32 = 150.0;
    let size = 9.0;
    p.room(16.0);
    p.text(MARGIN, REGULAR, size, &fit(&m.name, size, LABEL - 6.0));
    let left = MARGIN + LABEL;
    let full = WIDTH - MARGIN - left - 60.0;
    let scale = |v: f64| (((v - floor) / (100.0 - floor)).clamp(0.0, 1.0) as f32) * full;
    p.page.set_fill_gray(0.92);
    p.page.rect(left, p.y - 2.0, full, 10.0);
    p.page.fill_nonzero();
    if let Some(u) = m.uptime_percent {
        match m.target_met {
            Some(true) => p.page.set_fill_rgb(0.16, 0.55, 0.27),
            Some(false) => p.page.set_fill_rgb(0.75, 0.16, 0.16),
            None => p.page.set_fill_gray(0.45),
        };
        p.page.rect(left, p.y - 2.0, scale(u).max(1.0), 10.0);
        p.page.fill_nonzero();
    }
    if let Some(t) = m.target_percent {
        let x = left + scale(t);
        p.page.set_stroke_gray(0.1);
        p.page.set_line_width(1.2);
        p.page.move_to(x, p.y - 4.0);
        p.page.line_to(x, p.y + 10.0);
        p.page.stroke();
    }
    let value = m
        .uptime_percent
        .map_or_else(|| "no data".to_string(), |u| format!("{u:.3} %"));
    p.text(left + full + 6.0, REGULAR, size, &value);
    p.gap(16.0);
}

/// The figures of one monitor, two lines under its name.
fn figures(p: &mut Pages, m: &MonitorReport) {
    p.room(48.0);
    p.line(
        BOLD,
        10.0,
        &format!("{} ({}, {})", m.name, m.kind, m.monitor_id),
    );
    let uptime = m
        .uptime_percent
        .map_or_else(|| "no data".to_string(), |u| format!("{u:.3} %"));
    let target = match (m.target_percent, m.target_met) {
        (Some(t), Some(true)) => format!("target {t} %: met"),
        (Some(t), Some(false)) => format!("target {t} %: missed"),
        (Some(t), None) => format!("target {t} %: no data"),
        (None, _) => "no target".to_string(),
    };
    p.line(
        REGULAR,
        9.0,
        &format!(
            "Uptime {uptime}; {target}. Down {}, maintenance {}, unmonitored {}.",
            super::duration_text(m.down_seconds),
            super::duration_text(m.maintenance_seconds),
            super::duration_text(m.unmonitored_seconds)
        ),
    );
    let ms = |v: Option<i32>| v.map_or_else(|| "-".to_string(), |v| format!("{v} ms"));
    p.line(
        REGULAR,
        9.0,
        &format!(
            "Checks {} ({} failed); response time median {}, p95 {}; incidents {}.",
            m.checks,
            m.failed_checks,
            ms(m.median_response_time_ms),
            ms(m.p95_response_time_ms),
            m.incidents.len()
        ),
    );
    for i in m.incidents.iter().take(MAX_INCIDENTS) {
        p.line(
            REGULAR,
            8.5,
            &format!(
                "    Incident {} from {} to {}: {} in the period",
                i.id,
                i.started_at,
                i.resolved_at.as_deref().unwrap_or("(open)"),
                super::duration_text(i.seconds_in_period)
            ),
        );
    }
    if m.incidents.len() > MAX_INCIDENTS {
        p.line(
            REGULAR,
            8.5,
            &format!(
                "    and {} more incidents (the report's JSON and CSV list every one)",
                m.incidents.len() - MAX_INCIDENTS
            ),
        );
    }
    p.gap(6.0);
}

/// The report as a PDF document.
pub fn render(report: &UptimeReport) -> Vec<u8> {
    let mut p = Pages::new();
    p.line(BOLD, 18.0, "Uptime report");
    let mut period = format!("From {} to {}", report.from, report.to);
    if let Some(t) = report.target_percent {
        period.push_str(&format!("; target {t} %"));
    }
    p.line(REGULAR, 10.0, &period);
    p.gap(8.0);
    if report.monitors.is_empty() {
        p.line(REGULAR, 10.0, "No monitor matches.");
    } else {
        // The chart's scale starts a little under the lowest uptime or target, so the
        // bars of a good month do not all look full.
        let lowest = report
            .monitors
            .iter()
            .flat_map(|m| [m.uptime_percent, m.target_percent])
            .flatten()
            .fold(100.0_f64, f64::min);
        let floor = (lowest - (100.0 - lowest).max(0.1))
            .clamp(0.0, 99.9)
            .floor();
        p.line(
            BOLD,
            11.0,
            &format!("Uptime by monitor (the scale starts at {floor} %; a tick marks the target)"),
        );
        for m in &report.monitors {
            bar(&mut p, m, floor);
        }
        p.gap(8.0);
        p.line(BOLD, 11.0, "Figures");
        for m in &report.monitors {
            figures(&mut p, m);
        }
    }
    p.gap(4.0);
    p.line(BOLD, 11.0, "How it is counted");
    for rule in &report.rules {
        p.paragraph(8.5, rule);
    }
    document(p.finish())
}

fn document(pages: Vec<Content>) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let regular = Ref::new(3);
    let bold = Ref::new(4);
    let info = Ref::new(5);
    let first = 6;
    let page_ids: Vec<Ref> = (0..pages.len())
        .map(|i| Ref::new(first + 2 * i as i32))
        .collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree)
        .kids(page_ids.iter().copied())
        .count(pages.len() as i32);
    pdf.type1_font(regular)
        .base_font(Name(b"Helvetica"))
        .encoding_predefined(Name(b"WinAnsiEncoding"));
    pdf.type1_font(bold)
        .base_font(Name(b"Helvetica-Bold"))
        .encoding_predefined(Name(b"WinAnsiEncoding"));
    pdf.document_info(info)
        .title(TextStr("Uptime report"))
        .creator(TextStr("Tocsin"));
    for (i, content) in pages.into_iter().enumerate() {
        let id = page_ids[i];
        let content_id = Ref::new(id.get() + 1);
        let mut page = pdf.page(id);
        page.media_box(Rect::new(0.0, 0.0, WIDTH, HEIGHT));
        page.parent(tree);
        page.contents(content_id);
        page.resources()
            .fonts()
            .pair(REGULAR, regular)
            .pair(BOLD, bold);
        page.finish();
        pdf.stream(content_id, &content.finish());
    }
    pdf.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fits_the_fonts_and_the_page() {
        assert_eq!(latin1("Café → ok"), b"Caf\xe9 ? ok");
        assert_eq!(
            fit("a very long monitor name indeed", 10.0, 60.0),
            "a very l..."
        );
        assert_eq!(fit("short", 10.0, 60.0), "short");
        let lines = wrap("one two three four five six", 10.0, 60.0);
        assert!(lines.len() > 1 && lines.iter().all(|l| width(l, 10.0) <= 60.0));
    }

    #[test]
    fn a_long_report_runs_over_pages() {
        let monitor = |i: usize| MonitorReport {
            monitor_id: format!("mon_{i}"),
            name: format!("Monitor {i}"),
            kind: "http".into(),
            uptime_percent: Some(99.0 + (i % 10) as f64 / 10.0),
            up_seconds: 1,
            down_seconds: 1,
            maintenance_seconds: 0,
            unmonitored_seconds: 0,
            checks: 2,
            failed_checks: 1,
            median_response_time_ms: Some(20),
            p95_response_time_ms: Some(40),
            target_percent: Some(99.5),
            target_met: Some(i % 10 >= 5),
            incidents: Vec::new(),
        };
        let report = UptimeReport {
            from: "2026-10-01T00:00:00.000Z".into(),
            to: "2026-11-01T00:00:00.000Z".into(),
            target_percent: None,
            rules: super::super::RULES.iter().map(|r| r.to_string()).collect(),
            monitors: (0..120).map(monitor).collect(),
        };
        let bytes = render(&report);
        let text = String::from_utf8_lossy(&bytes);
        let pages = text.matches("/Type /Page\n").count() + text.matches("/Type /Page ").count();
        assert!(bytes.starts_with(b"%PDF-"));
        assert!(
            pages >= 4,
            "120 monitors' bars and figures take pages: {pages}"
        );
        assert!(
            text.contains("(Monitor 119) Tj"),
            "the last monitor is drawn"
        );
    }
}
