//! Weekly windows of wall-clock time (`mon`-`fri`, `09:00`-`17:00`) in a time zone, for
//! the pipeline steps that keep office hours and rotas. The wall clock and the moments it
//! maps to come from the host's `clock` interface ([`Wall::now`], [`moment`]); the
//! arithmetic here is pure, so it is tested natively.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::clock;
use tocsin_plugin_sdk::typed::field_error;

/// A day of the week.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Day {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

impl Day {
    /// ISO 8601's number: 1 (Monday) to 7 (Sunday).
    pub fn iso(self) -> u8 {
        self as u8 + 1
    }

    /// Monday to Friday.
    pub fn weekdays() -> Vec<Day> {
        vec![Day::Mon, Day::Tue, Day::Wed, Day::Thu, Day::Fri]
    }
}

/// A wall-clock time of day, `HH:MM` (`24:00` is the end of the day).
pub fn minutes_of(hhmm: &str) -> Option<u16> {
    let (h, m) = hhmm.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) => Some(24 * 60),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

/// The problem with a time of day at `field`, if any.
pub fn check_time(field: &str, hhmm: &str) -> Option<FieldError> {
    minutes_of(hhmm)
        .is_none()
        .then(|| field_error(field, "must be a time of day, HH:MM (00:00 to 24:00)"))
}

/// The problem with a time zone name at `field`, if any: the server's clock is asked (a
/// native build, in unit tests, takes it on trust).
pub fn check_zone(field: &str, zone: &str) -> Option<FieldError> {
    if !cfg!(target_arch = "wasm32") {
        return None;
    }
    clock::local(0, zone).err().map(|_| {
        field_error(
            field,
            "must be a time zone of the IANA database, e.g. Europe/Berlin or UTC",
        )
    })
}

/// A moment on a wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wall {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    /// 1 (Monday) to 7 (Sunday).
    pub weekday: u8,
}

impl Wall {
    /// `at` (ms since the epoch) in `zone`, from the server's clock.
    pub fn now(at: i64, zone: &str) -> Result<Wall, String> {
        clock::local(at, zone).map(|t| Wall {
            year: t.year,
            month: t.month,
            day: t.day,
            hour: t.hour,
            minute: t.minute,
            weekday: t.weekday,
        })
    }

    /// `at` in `zone`, or None (and the reason in the server's log): a step that cannot
    /// tell the time lets the alert go on.
    pub fn now_or_log(at: i64, zone: &str) -> Option<Wall> {
        Wall::now(at, zone)
            .map_err(|e| tocsin_plugin_sdk::log::log(tocsin_plugin_sdk::log::Level::Error, &e))
            .ok()
    }

    /// Minutes since midnight.
    pub fn minutes(&self) -> u16 {
        u16::from(self.hour) * 60 + u16::from(self.minute)
    }

    /// `YYYY-MM-DDTHH:MM`, which sorts as time does.
    pub fn stamp(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute
        )
    }

    /// The date `days` later (its weekday too), at midnight.
    pub fn plus_days(&self, days: i64) -> Wall {
        let n = days_from_civil(self.year, self.month, self.day) + days;
        let (year, month, day) = civil_from_days(n);
        Wall {
            year,
            month,
            day,
            hour: 0,
            minute: 0,
            weekday: u8::try_from((i64::from(self.weekday) - 1 + days).rem_euclid(7) + 1)
                .unwrap_or(1),
        }
    }
}

/// The moment a wall clock in `zone` shows `date` at `minutes` past midnight (`24:00` is
/// the next day's midnight), from the server's clock.
pub fn moment(zone: &str, date: &Wall, minutes: u16) -> Option<i64> {
    let date = if minutes >= 24 * 60 {
        date.plus_days(1)
    } else {
        *date
    };
    let minutes = minutes % (24 * 60);
    clock::instant(
        zone,
        date.year,
        date.month,
        date.day,
        u8::try_from(minutes / 60).ok()?,
        u8::try_from(minutes % 60).ok()?,
    )
    .ok()
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i32, m: u8, d: u8) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `z` days after 1970-01-01.
fn civil_from_days(z: i64) -> (i32, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        i32::try_from(y).unwrap_or(i32::MAX),
        u8::try_from(m).unwrap_or(1),
        u8::try_from(d).unwrap_or(1),
    )
}

/// Days of the week from `from` to `to` (`HH:MM`, already checked). A window whose `to`
/// is not after its `from` runs over midnight into the next day (`22:00`-`06:00`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window<'a> {
    pub days: &'a [Day],
    pub from: u16,
    pub to: u16,
}

impl Window<'_> {
    fn on(&self, weekday: u8) -> bool {
        self.days.iter().any(|d| d.iso() == weekday)
    }

    /// Whether the window holds the wall-clock moment `now`.
    pub fn covers(&self, now: &Wall) -> bool {
        let m = now.minutes();
        if self.from < self.to {
            self.on(now.weekday) && (self.from..self.to).contains(&m)
        } else {
            let yesterday = (now.weekday + 5) % 7 + 1;
            (self.on(now.weekday) && m >= self.from) || (self.on(yesterday) && m < self.to)
        }
    }
}

/// The first moment after `now` at which one of `windows` opens, within the next 8 days;
/// `moment` maps a date and a time of day to a moment (the server's clock in the plugin,
/// a fixed offset in tests).
pub fn next_opening(
    windows: &[Window<'_>],
    now: &Wall,
    moment: impl Fn(&Wall, u16) -> Option<i64>,
) -> Option<i64> {
    (0..=7).find_map(|ahead| {
        let date = now.plus_days(ahead);
        windows
            .iter()
            .filter(|w| w.on(date.weekday) && (ahead > 0 || w.from > now.minutes()))
            .filter_map(|w| moment(&date, w.from))
            .min()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(year: i32, month: u8, day: u8, hour: u8, minute: u8, weekday: u8) -> Wall {
        Wall {
            year,
            month,
            day,
            hour,
            minute,
            weekday,
        }
    }

    /// UTC: a date and minutes to milliseconds.
    fn utc(date: &Wall, minutes: u16) -> Option<i64> {
        Some(
            (days_from_civil(date.year, date.month, date.day) * 1440 + i64::from(minutes)) * 60_000,
        )
    }

    #[test]
    fn times_of_day_and_dates() {
        assert_eq!(minutes_of("09:30"), Some(570));
        assert_eq!(minutes_of("24:00"), Some(1440));
        for bad in ["9:30", "24:01", "12:60", "ab:cd", "", "0930"] {
            assert_eq!(minutes_of(bad), None, "{bad}");
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(days_from_civil(2028, 2, 29)), (2028, 2, 29));
        // Thursday 2026-12-31 + 1 day is Friday 2027-01-01.
        let next = wall(2026, 12, 31, 18, 0, 4).plus_days(1);
        assert_eq!(
            (next.year, next.month, next.day, next.weekday),
            (2027, 1, 1, 5)
        );
        assert_eq!(wall(2026, 12, 1, 0, 0, 2).plus_days(-2).weekday, 7);
    }

    #[test]
    fn windows_cover_their_days_and_nights() {
        let weekdays = Day::weekdays();
        let office = Window {
            days: &weekdays,
            from: 540,
            to: 1020,
        };
        // Tuesday 2026-12-01.
        assert!(office.covers(&wall(2026, 12, 1, 9, 0, 2)));
        assert!(!office.covers(&wall(2026, 12, 1, 17, 0, 2)));
        assert!(!office.covers(&wall(2026, 12, 5, 10, 0, 6)));
        let nights = [Day::Fri];
        let night = Window {
            days: &nights,
            from: 1320,
            to: 360,
        };
        assert!(night.covers(&wall(2026, 12, 4, 23, 0, 5)));
        assert!(
            night.covers(&wall(2026, 12, 5, 5, 59, 6)),
            "Saturday morning is Friday's night"
        );
        assert!(!night.covers(&wall(2026, 12, 5, 6, 0, 6)));
        assert!(
            !night.covers(&wall(2026, 12, 4, 5, 0, 5)),
            "Friday morning is Thursday's night"
        );
    }

    #[test]
    fn the_next_opening_skips_the_weekend() {
        let weekdays = Day::weekdays();
        let office = [Window {
            days: &weekdays,
            from: 540,
            to: 1020,
        }];
        // Friday 2026-12-04 18:00 -> Monday 2026-12-07 09:00.
        let friday = wall(2026, 12, 4, 18, 0, 5);
        let monday = wall(2026, 12, 7, 0, 0, 1);
        assert_eq!(next_opening(&office, &friday, utc), utc(&monday, 540));
        // Early on Tuesday: the same morning.
        let early = wall(2026, 12, 1, 6, 0, 2);
        assert_eq!(next_opening(&office, &early, utc), utc(&early, 540));
        assert_eq!(
            next_opening(
                &[Window {
                    days: &[],
                    from: 0,
                    to: 60
                }],
                &early,
                utc
            ),
            None
        );
    }
}
