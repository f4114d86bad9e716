//! Schedule lag: how long after its due time each check could start. Kept as a histogram
//! of fixed buckets (atomic counters), so recording costs a few nanoseconds and no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Bucket upper bounds in microseconds: 1-2-5 steps from 100 µs to 100 s, then overflow.
const BOUNDS_US: [u64; 19] = [
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// Counters of schedule lag.
#[derive(Default)]
pub struct SchedulerStats {
    buckets: [AtomicU64; BOUNDS_US.len() + 1],
    count: AtomicU64,
    total_us: AtomicU64,
    max_us: AtomicU64,
    /// Rounds skipped because the monitor's previous check was still waiting for a slot.
    skipped: AtomicU64,
}

/// A snapshot of [`SchedulerStats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LagSnapshot {
    buckets: Vec<u64>,
    pub count: u64,
    pub total_us: u64,
    pub max_us: u64,
}

impl SchedulerStats {
    /// Record one check's lag.
    pub fn record_lag(&self, lag: Duration) {
        let us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
        let i = BOUNDS_US
            .iter()
            .position(|b| us <= *b)
            .unwrap_or(BOUNDS_US.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// Count a round skipped because its monitor's previous check was still waiting.
    pub fn record_skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }

    /// Rounds skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// The counters now.
    pub fn snapshot(&self) -> LagSnapshot {
        LagSnapshot {
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            count: self.count.load(Ordering::Relaxed),
            total_us: self.total_us.load(Ordering::Relaxed),
            max_us: self.max_us.load(Ordering::Relaxed),
        }
    }
}

impl LagSnapshot {
    /// What was recorded since `earlier` (the maximum is over the whole run).
    pub fn since(&self, earlier: &LagSnapshot) -> LagSnapshot {
        LagSnapshot {
            buckets: self
                .buckets
                .iter()
                .zip(earlier.buckets.iter().chain(std::iter::repeat(&0)))
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
            count: self.count.saturating_sub(earlier.count),
            total_us: self.total_us.saturating_sub(earlier.total_us),
            max_us: self.max_us,
        }
    }

    /// The lag at quantile `q` (0..=1), as the upper bound of its bucket: the true value is
    /// at most this (one 1-2-5 step above it at worst).
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.count == 0 {
            return None;
        }
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let us = BOUNDS_US.get(i).copied().unwrap_or(self.max_us);
                return Some(Duration::from_micros(us.min(self.max_us.max(1))));
            }
        }
        Some(Duration::from_micros(self.max_us))
    }

    /// Mean lag.
    pub fn mean(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_micros(self.total_us / self.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_bucket_bounds() {
        let stats = SchedulerStats::default();
        for _ in 0..98 {
            stats.record_lag(Duration::from_micros(150));
        }
        stats.record_lag(Duration::from_millis(30));
        stats.record_lag(Duration::from_millis(700));
        let s = stats.snapshot();
        assert_eq!(s.count, 100);
        assert_eq!(s.quantile(0.5), Some(Duration::from_micros(200)));
        assert_eq!(s.quantile(0.98), Some(Duration::from_micros(200)));
        assert_eq!(s.quantile(0.99), Some(Duration::from_millis(50)));
        assert_eq!(
            s.quantile(1.0),
            Some(Duration::from_millis(700)),
            "capped at the max"
        );
        let later = {
            stats.record_lag(Duration::from_secs(3));
            stats.snapshot()
        };
        let delta = later.since(&s);
        assert_eq!(delta.count, 1);
        assert_eq!(delta.quantile(0.5), Some(Duration::from_secs(3)));
        assert_eq!(LagSnapshot::default().quantile(0.5), None);
    }
}
