//! The `clock` host interface (contract 0.3.0): wall-clock time in the IANA time zones the
//! server carries, so pipeline plugins keep office hours and rotas without zone data of
//! their own.

use super::state::CallState;
use super::wit::clock::{Host, LocalTime};
use chrono::{Datelike, NaiveDate, Offset, TimeZone, Timelike};

/// The longest daylight-saving gap searched past for a skipped wall-clock time (no zone
/// has skipped more than a day).
const LONGEST_GAP_MINUTES: i64 = 24 * 60;

fn zone(name: &str) -> Result<chrono_tz::Tz, String> {
    name.parse::<chrono_tz::Tz>().map_err(|_| {
        format!(
            "unknown time zone `{}` (an IANA name such as Europe/Berlin, or UTC)",
            crate::text::bounded(name, 64)
        )
    })
}

/// `at` (milliseconds since the Unix epoch) on a wall clock in `zone`.
pub fn local(at: i64, zone_name: &str) -> Result<LocalTime, String> {
    let tz = zone(zone_name)?;
    let utc = chrono::Utc
        .timestamp_millis_opt(at)
        .single()
        .ok_or_else(|| format!("{at} is not a moment the server can show"))?;
    let t = utc.with_timezone(&tz);
    let small = |n: u32| u8::try_from(n).unwrap_or(u8::MAX);
    Ok(LocalTime {
        year: t.year(),
        month: small(t.month()),
        day: small(t.day()),
        hour: small(t.hour()),
        minute: small(t.minute()),
        second: small(t.second()),
        weekday: small(t.weekday().number_from_monday()),
        offset_seconds: t.offset().fix().local_minus_utc(),
    })
}

/// The first moment a wall clock in `zone` shows the date and time: past a
/// daylight-saving gap, the first moment after it; in a repeated hour, the earlier.
pub fn instant(
    zone_name: &str,
    year: i32,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
) -> Result<i64, String> {
    let tz = zone(zone_name)?;
    let wall = NaiveDate::from_ymd_opt(year, month.into(), day.into())
        .and_then(|d| d.and_hms_opt(hour.into(), minute.into(), 0))
        .ok_or_else(|| {
            format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} is not a date and time")
        })?;
    (0..=LONGEST_GAP_MINUTES)
        .find_map(|skip| {
            let later = wall.checked_add_signed(chrono::Duration::minutes(skip))?;
            tz.from_local_datetime(&later).earliest()
        })
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| "no such moment in that time zone".to_string())
}

impl Host for CallState {
    async fn local(&mut self, at: i64, zone: String) -> Result<LocalTime, String> {
        local(at, &zone)
    }

    async fn instant(
        &mut self,
        zone: String,
        year: i32,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
    ) -> Result<i64, String> {
        instant(&zone, year, month, day, hour, minute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clocks_follow_their_zone_across_daylight_saving() {
        // 2026-03-29 00:30 UTC is 01:30 in Berlin (winter time), a Sunday.
        let t = local(1_774_744_200_000, "Europe/Berlin").expect("zone");
        assert_eq!(
            (
                t.year,
                t.month,
                t.day,
                t.hour,
                t.minute,
                t.weekday,
                t.offset_seconds
            ),
            (2026, 3, 29, 1, 30, 7, 3600)
        );
        // 02:30 does not exist that night in Berlin: the first moment after the gap is 03:00
        // summer time, 01:00 UTC.
        assert_eq!(
            instant("Europe/Berlin", 2026, 3, 29, 2, 30),
            Ok(1_774_746_000_000)
        );
        // 02:30 on 2026-10-25 happens twice: the earlier is summer time, 00:30 UTC.
        assert_eq!(
            instant("Europe/Berlin", 2026, 10, 25, 2, 30),
            Ok(1_792_888_200_000)
        );
        assert!(instant("Mars/Olympus", 2026, 1, 1, 0, 0).is_err());
        assert!(instant("UTC", 2026, 2, 30, 0, 0).is_err());
        assert_eq!(instant("UTC", 1970, 1, 1, 0, 1), Ok(60_000));
    }
}
