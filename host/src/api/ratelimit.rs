//! Rate limiting: token buckets that refill at the configured rate per minute and hold
//! at most the burst. An authenticated request spends from its key's bucket and from its
//! workspace's (so more keys do not buy more requests); an unauthenticated one (public
//! status pages, a bad key) from its client address's. Every answer says where the
//! tighter bucket stands (`X-RateLimit-Limit`, `-Remaining`, `-Reset`); a refused one adds
//! `Retry-After`. The test button of a channel has its own, small bucket per workspace.
//!
//! Buckets live in memory: a restart forgives everyone, which is the usual trade for not
//! writing to the database on every request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The test button: sends a real notification each time, so a few a minute per workspace.
pub const CHANNEL_TESTS_PER_MINUTE: u32 = 6;
pub const CHANNEL_TESTS_BURST: u32 = 3;

/// Every bucket family the API keeps.
/// How many times an address's rate its badge requests get.
const BADGE_FACTOR: u32 = 10;

pub struct Limits {
    pub keys: RateLimiter,
    pub workspaces: RateLimiter,
    pub addresses: RateLimiter,
    /// Public badges, per client address: image proxies (GitHub's) fetch them for many
    /// readers at once, so they get ten times the address rate from a bucket of their
    /// own and never spend an address's sign-in allowance.
    pub badges: RateLimiter,
    pub channel_tests: RateLimiter,
}

impl Limits {
    /// Keys, workspaces and addresses share the configured rate and burst.
    pub fn new(per_minute: u32, burst: u32) -> Limits {
        Limits {
            keys: RateLimiter::new(per_minute, burst),
            workspaces: RateLimiter::new(per_minute, burst),
            addresses: RateLimiter::new(per_minute, burst),
            badges: RateLimiter::new(
                per_minute.saturating_mul(BADGE_FACTOR),
                burst.saturating_mul(BADGE_FACTOR),
            ),
            channel_tests: RateLimiter::new(CHANNEL_TESTS_PER_MINUTE, CHANNEL_TESTS_BURST),
        }
    }
}

impl Decision {
    /// 429 `RATE_LIMITED` in the envelope with `Retry-After`, naming who is over which
    /// limit ("This API key", "This workspace's test button", ...).
    pub fn refusal(&self, who: &str) -> super::error::ApiError {
        let wait = self
            .retry_after
            .map_or(1, |d| d.as_secs_f64().ceil() as u64)
            .max(1);
        let mut e = super::error::ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            format!(
                "{who} is over its limit of {} requests a minute; retry in {wait} s",
                self.limit
            ),
        );
        e.headers.push(("retry-after", wait.to_string()));
        e
    }

    /// Of two decisions on one request: refused if either refuses, and the headers of the
    /// bucket with less left.
    pub fn tighter(self, other: Decision) -> Decision {
        let refused = |d: &Decision| !d.allowed;
        match (refused(&self), refused(&other)) {
            (true, false) => self,
            (false, true) => other,
            _ if other.remaining < self.remaining => other,
            _ => self,
        }
    }
}

/// Buckets not touched for this long are dropped (they would be full anyway).
const IDLE_EVICTION_MS: i64 = 10 * 60 * 1000;

/// One key's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated_ms: i64,
}

/// Where a key stands after a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    /// Requests per minute.
    pub limit: u32,
    /// Whole requests left right now.
    pub remaining: u32,
    /// Unix seconds at which the bucket is full again.
    pub reset_secs: i64,
    /// When refused: how long until one request is allowed.
    pub retry_after: Option<Duration>,
}

/// Token buckets for every key.
pub struct RateLimiter {
    per_minute: u32,
    burst: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    pub fn new(per_minute: u32, burst: u32) -> RateLimiter {
        RateLimiter {
            per_minute: per_minute.max(1),
            burst: burst.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn per_ms(&self) -> f64 {
        f64::from(self.per_minute) / 60_000.0
    }

    /// Take one token for `key` at `now_ms`, if there is one.
    pub fn check(&self, key: &str, now_ms: i64) -> Decision {
        let capacity = f64::from(self.burst);
        let per_ms = self.per_ms();
        let mut buckets = match self.buckets.lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        if buckets.len() > 10_000 {
            buckets.retain(|_, b| now_ms - b.updated_ms < IDLE_EVICTION_MS);
        }
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: capacity,
            updated_ms: now_ms,
        });
        let elapsed = (now_ms - bucket.updated_ms).max(0) as f64;
        bucket.tokens = (bucket.tokens + elapsed * per_ms).min(capacity);
        bucket.updated_ms = now_ms.max(bucket.updated_ms);
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        let missing = capacity - bucket.tokens;
        let reset_ms = now_ms + (missing / per_ms).ceil() as i64;
        let retry_after = (!allowed).then(|| {
            let wait_ms = ((1.0 - bucket.tokens) / per_ms).ceil().max(1.0);
            Duration::from_millis(wait_ms as u64)
        });
        Decision {
            allowed,
            limit: self.per_minute,
            remaining: bucket.tokens.floor().max(0.0) as u32,
            reset_secs: (reset_ms + 999) / 1000,
            retry_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_steady_rate() {
        let l = RateLimiter::new(60, 3);
        let t = 1_000_000;
        let d: Vec<bool> = (0..4).map(|_| l.check("k", t).allowed).collect();
        assert_eq!(d, [true, true, true, false]);
        let refused = l.check("k", t);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after, Some(Duration::from_secs(1)));
        // One token a second at 60 a minute.
        assert!(l.check("k", t + 1000).allowed);
        assert!(!l.check("k", t + 1000).allowed);
        // Other keys have their own bucket.
        assert!(l.check("other", t).allowed);
    }

    #[test]
    fn headers_describe_the_bucket() {
        let l = RateLimiter::new(600, 100);
        let d = l.check("k", 10_000);
        assert_eq!((d.limit, d.remaining), (600, 99));
        // One token missing refills in 100 ms.
        assert_eq!(d.reset_secs, 11);
        assert_eq!(d.retry_after, None);
    }
}
