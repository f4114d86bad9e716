//! Uptime over the last day and the last 30 days for `/metrics`, from the daily counts.

use crate::store::Store;
use std::collections::HashMap;
use std::sync::Mutex;

const DAY_MS: i64 = 86_400_000;
/// How often the uptime windows are read again.
pub const UPTIME_REFRESH: std::time::Duration = std::time::Duration::from_secs(60);
/// Monitors read per query.
const PAGE: u64 = 10_000;
/// How often in the server's first minute.
const UPTIME_EARLY_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// Uptime over the last day and the last 30 days, per monitor, from the daily counts: the
/// days before today are read once a day, today's every minute; the oldest day of a window
/// counts for the part of it inside the window (checks spread evenly over a day).
#[derive(Default)]
pub struct UptimeWindows {
    inner: Mutex<UptimeInner>,
}

#[derive(Default)]
struct UptimeInner {
    /// The UTC day `past` was read on.
    day: Option<i32>,
    past: HashMap<String, PastDays>,
    today: HashMap<String, (i64, i64)>,
}

/// Sums of (total, up) of the days before today.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PastDays {
    yesterday: (i64, i64),
    /// The days today-29 to today-1 (yesterday included).
    month: (i64, i64),
    /// Day today-30, the window's oldest.
    edge: (i64, i64),
}

/// The uptime windows of this process.
pub static UPTIME: std::sync::LazyLock<UptimeWindows> =
    std::sync::LazyLock::new(UptimeWindows::default);

impl UptimeWindows {
    /// Read what changed: the sums of the days before today when the day turned, today's
    /// counts always; both in pages of [`PAGE`] monitors, so that a million monitors never
    /// sit in memory twice.
    pub async fn refresh(
        &self,
        store: &Store,
        now_ms: i64,
    ) -> Result<(), crate::store::StoreError> {
        let today = i32::try_from(now_ms.div_euclid(DAY_MS)).unwrap_or(i32::MAX);
        let stale = self.lock().day != Some(today);
        if stale {
            let mut past = HashMap::new();
            let mut after: Option<String> = None;
            loop {
                let rows = store
                    .past_day_counts_page(today, after.as_deref(), PAGE)
                    .await?;
                let full = rows.len() as u64 == PAGE;
                after = rows.last().map(|r| r.monitor_id.clone());
                for r in rows {
                    past.insert(
                        r.monitor_id,
                        PastDays {
                            yesterday: (r.yesterday_total, r.yesterday_up),
                            month: (r.month_total, r.month_up),
                            edge: (r.edge_total, r.edge_up),
                        },
                    );
                }
                if !full {
                    break;
                }
            }
            let mut inner = self.lock();
            inner.past = past;
            inner.today.clear();
            inner.day = Some(today);
        }
        // Today's counts are updated in place, page by page: a monitor deleted today keeps
        // its entry until the day turns, and no one asks for it.
        let mut after: Option<String> = None;
        loop {
            let rows = store.day_counts_page(today, after.as_deref(), PAGE).await?;
            let full = rows.len() as u64 == PAGE;
            after = rows.last().map(|(id, _)| id.clone());
            let mut inner = self.lock();
            if inner.day != Some(today) {
                // Another refresh turned the day meanwhile; it reads today's counts itself.
                return Ok(());
            }
            inner
                .today
                .extend(rows.into_iter().map(|(id, c)| (id, (c.total, c.up))));
            drop(inner);
            if !full {
                break;
            }
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UptimeInner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// (1 day, 30 days) ratios of the given monitors, None where nothing was checked.
    pub(super) fn read<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
        now_ms: i64,
    ) -> Vec<(Option<f64>, Option<f64>)> {
        let into_today = now_ms.rem_euclid(DAY_MS) as f64 / DAY_MS as f64;
        let inner = self.lock();
        ids.into_iter()
            .map(|id| {
                let today = inner.today.get(id).copied().unwrap_or_default();
                let past = inner.past.get(id).copied().unwrap_or_default();
                windows(today, past, into_today)
            })
            .collect()
    }
}

/// The two windows' ratios; `into_today` is the part of today gone (0..1).
fn windows(today: (i64, i64), past: PastDays, into_today: f64) -> (Option<f64>, Option<f64>) {
    let ratio = |total: f64, up: f64| (total > 0.0).then(|| (up / total).clamp(0.0, 1.0));
    let rest = 1.0 - into_today;
    let day = ratio(
        today.0 as f64 + rest * past.yesterday.0 as f64,
        today.1 as f64 + rest * past.yesterday.1 as f64,
    );
    let month = ratio(
        (today.0 + past.month.0) as f64 + rest * past.edge.0 as f64,
        (today.1 + past.month.1) as f64 + rest * past.edge.1 as f64,
    );
    (day, month)
}

/// Keep the uptime windows fresh until shutdown: every few seconds in the first minute
/// (so a fresh server's first checks show up soon), then every [`UPTIME_REFRESH`].
pub async fn refresh_uptime_loop(
    store: Store,
    clock: crate::clock::SharedClock,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let started = std::time::Instant::now();
    loop {
        if let Err(e) = UPTIME.refresh(&store, clock.now_ms()).await {
            tracing::warn!(error = %e, "could not read uptime counts for /metrics");
        }
        let pause = if started.elapsed() < UPTIME_REFRESH {
            UPTIME_EARLY_REFRESH
        } else {
            UPTIME_REFRESH
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { return },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_windows_weigh_the_oldest_day_by_its_part_in_the_window() {
        // Yesterday 50 of 100 up, the day before 100 of 100, day today-30 0 of 100 (the
        // store adds the days up: tests/store.rs).
        let past = PastDays {
            yesterday: (100, 50),
            month: (200, 150),
            edge: (100, 0),
        };
        // A quarter into today, with 25 of 25 up: 1d = (25 + 0.75*50) / (25 + 0.75*100).
        let (day, month) = windows((25, 25), past, 0.25);
        assert!((day.expect("a day") - 62.5 / 100.0).abs() < 1e-9);
        assert!((month.expect("a month") - 175.0 / 300.0).abs() < 1e-9);
        assert_eq!(windows((0, 0), PastDays::default(), 0.5), (None, None));
    }
}
