//! Brute-force protection for sign-in and password reset: failures are counted per
//! account (e-mail address) and per client address; after a few, each further attempt
//! must wait a delay that doubles with every failure (1 s, 2 s, 4 s, ... up to 15 min).
//! Refused attempts do not verify anything, so guessing costs the guesser time and the
//! server nothing. A success clears the account's count. Counts fade after an hour
//! without failures.

use std::collections::HashMap;
use std::sync::Mutex;

/// Failures allowed before delays start, per account and per client address.
pub const FREE_FAILURES_PER_ACCOUNT: u32 = 5;
pub const FREE_FAILURES_PER_ADDRESS: u32 = 20;
const MAX_DELAY_MS: i64 = 15 * 60_000;
const FORGET_AFTER_MS: i64 = 60 * 60_000;
/// Entries kept at most (oldest dropped first), so a flood of addresses cannot grow it.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last_ms: i64,
}

/// Failure counts of one kind (sign-in, reset).
#[derive(Default)]
pub struct Throttle {
    entries: Mutex<HashMap<String, Failures>>,
}

impl Throttle {
    /// How long the caller must still wait before trying `keys` again (ms), if at all.
    /// Each key is `(name, free failures)`.
    pub fn wait_ms(&self, keys: &[(&str, u32)], now_ms: i64) -> Option<i64> {
        let entries = self.entries.lock().ok()?;
        keys.iter()
            .filter_map(|(key, free)| {
                let f = entries.get(*key)?;
                if now_ms - f.last_ms > FORGET_AFTER_MS || f.count < *free {
                    return None;
                }
                let exponent = (f.count - free).min(20);
                let delay = (1000i64 << exponent).min(MAX_DELAY_MS);
                let until = f.last_ms + delay;
                (until > now_ms).then_some(until - now_ms)
            })
            .max()
    }

    /// Count a failure against each key.
    pub fn fail(&self, keys: &[&str], now_ms: i64) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, f| now_ms - f.last_ms <= FORGET_AFTER_MS);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        for key in keys {
            let f = entries.entry((*key).to_string()).or_insert(Failures {
                count: 0,
                last_ms: now_ms,
            });
            if now_ms - f.last_ms > FORGET_AFTER_MS {
                f.count = 0;
            }
            f.count += 1;
            f.last_ms = now_ms;
        }
    }

    /// Forget `key`'s failures (a successful sign-in).
    pub fn clear(&self, key: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_after_the_free_failures() {
        let t = Throttle::default();
        let keys = [("a", 3)];
        for i in 0..3 {
            assert_eq!(t.wait_ms(&keys, i), None);
            t.fail(&["a"], i);
        }
        // The third failure at t=2 makes the next attempt wait 1 s.
        assert_eq!(t.wait_ms(&keys, 2), Some(1000));
        t.fail(&["a"], 1002);
        assert_eq!(t.wait_ms(&keys, 1002), Some(2000));
        assert_eq!(t.wait_ms(&keys, 3002), None);
        t.clear("a");
        assert_eq!(t.wait_ms(&keys, 3002), None);
        t.fail(&["a"], 0);
        assert_eq!(t.wait_ms(&keys, FORGET_AFTER_MS + 10), None);
    }
}
