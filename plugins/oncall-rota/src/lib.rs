//! The `oncall-rota` pipeline step: routes each alert to whoever is on duty. Duty comes
//! from a weekly schedule of shifts (days and hours in a time zone, each with the
//! channels of the people on it) and from overrides (a date-time range, for a swap or a
//! holiday), which win over the shifts. When nobody is on duty, the alert goes to the
//! policy's own channels.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{Decision, FieldError, Info, Pipeline, PipelineAlert, export_pipeline};
use tocsin_schedule::{Day, Wall, Window, check_time, check_zone, minutes_of};

/// The most shifts and overrides one rota has.
const MAX_SHIFTS: usize = 50;
const MAX_OVERRIDES: usize = 100;

/// One recurring shift.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Shift {
    /// The days the shift begins on.
    pub days: Vec<Day>,
    /// When it begins, HH:MM.
    pub from: String,
    /// When it ends, HH:MM; a time not after `from` ends the next day (a night shift).
    pub to: String,
    /// The stored channels (`ch_...`) of the people on duty.
    #[schemars(length(min = 1, max = 10))]
    pub channel_ids: Vec<String>,
}

/// One override: someone else on duty from one wall-clock moment to another.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Override {
    /// `YYYY-MM-DDTHH:MM` in the rota's time zone.
    pub from: String,
    /// `YYYY-MM-DDTHH:MM`, after `from`.
    pub to: String,
    #[schemars(length(min = 1, max = 10))]
    pub channel_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "oncall-rota pipeline step")]
pub struct RotaConfig {
    /// The time zone of the shifts and overrides (IANA), e.g. "Europe/Berlin".
    #[serde(default = "utc")]
    #[schemars(length(min = 1, max = 64))]
    #[schemars(title = "Time zone")]
    pub time_zone: String,
    /// The weekly shifts; the first that holds the moment is on duty.
    #[serde(default)]
    #[schemars(title = "Shifts")]
    pub shifts: Vec<Shift>,
    /// Overrides, which win over the shifts.
    #[serde(default)]
    #[schemars(title = "Overrides")]
    pub overrides: Vec<Override>,
}

fn utc() -> String {
    "UTC".into()
}

/// Whether `text` is `YYYY-MM-DDTHH:MM` with a real month, day and time.
fn is_stamp(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 16 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return false;
    }
    if !(digits(0..4) && digits(5..7) && digits(8..10)) {
        return false;
    }
    let year: u32 = text[0..4].parse().unwrap_or(0);
    let month: u8 = text[5..7].parse().unwrap_or(0);
    let day: u8 = text[8..10].parse().unwrap_or(0);
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => 0,
    };
    (1..=days).contains(&day) && minutes_of(&text[11..]).is_some_and(|m| m < 1440)
}

fn check_ids(field: String, ids: &[String], problems: &mut Vec<FieldError>) {
    if ids.is_empty() || ids.len() > 10 {
        problems.push(field_error(&field, "must list 1 to 10 channel ids"));
    }
    if ids.iter().any(|id| !id.starts_with("ch_")) {
        problems.push(field_error(
            &field,
            "must list stored channels' ids (ch_...)",
        ));
    }
}

impl TypedConfig for RotaConfig {
    fn refine(self) -> Result<Self, Vec<FieldError>> {
        let mut problems: Vec<FieldError> = check_zone("timeZone", &self.time_zone)
            .into_iter()
            .collect();
        if self.shifts.is_empty() && self.overrides.is_empty() {
            problems.push(field_error(
                "shifts",
                "a rota needs at least one shift or override",
            ));
        }
        if self.shifts.len() > MAX_SHIFTS {
            problems.push(field_error("shifts", format!("at most {MAX_SHIFTS}")));
        }
        if self.overrides.len() > MAX_OVERRIDES {
            problems.push(field_error("overrides", format!("at most {MAX_OVERRIDES}")));
        }
        for (i, s) in self.shifts.iter().enumerate() {
            let at = |f: &str| format!("shifts[{i}].{f}");
            problems.extend(check_time(&at("from"), &s.from));
            problems.extend(check_time(&at("to"), &s.to));
            if s.days.is_empty() {
                problems.push(field_error(&at("days"), "must name at least one day"));
            }
            check_ids(at("channelIds"), &s.channel_ids, &mut problems);
        }
        for (i, o) in self.overrides.iter().enumerate() {
            let at = |f: &str| format!("overrides[{i}].{f}");
            for (field, value) in [("from", &o.from), ("to", &o.to)] {
                if !is_stamp(value) {
                    problems.push(field_error(&at(field), "must be YYYY-MM-DDTHH:MM"));
                }
            }
            if is_stamp(&o.from) && is_stamp(&o.to) && o.to <= o.from {
                problems.push(field_error(&at("to"), "must be after from"));
            }
            check_ids(at("channelIds"), &o.channel_ids, &mut problems);
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// Who is on duty at wall-clock moment `now`: an override's channels, else the first
/// shift's that holds it, else nobody (None).
pub fn on_duty<'a>(config: &'a RotaConfig, now: &Wall) -> Option<&'a [String]> {
    let stamp = now.stamp();
    if let Some(o) = config
        .overrides
        .iter()
        .find(|o| o.from.as_str() <= stamp.as_str() && stamp.as_str() < o.to.as_str())
    {
        return Some(&o.channel_ids);
    }
    config
        .shifts
        .iter()
        .find(|s| {
            let (Some(from), Some(to)) = (minutes_of(&s.from), minutes_of(&s.to)) else {
                return false;
            };
            Window {
                days: &s.days,
                from,
                to,
            }
            .covers(now)
        })
        .map(|s| s.channel_ids.as_slice())
}

struct Rota;

impl Pipeline for Rota {
    type Config = RotaConfig;

    fn info() -> Info {
        Info {
            name: "oncall-rota",
            version: env!("CARGO_PKG_VERSION"),
            description: "Routes each alert to whoever is on duty, from a weekly schedule of shifts with overrides, in a time zone.",
            capabilities: &[],
        }
    }

    fn decide(config: RotaConfig, alert: PipelineAlert) -> Decision {
        let Some(now) = Wall::now_or_log(alert.now, &config.time_zone) else {
            return Decision::Deliver;
        };
        match on_duty(&config, &now) {
            Some(ids) => Decision::Route(ids.to_vec()),
            None => Decision::Deliver,
        }
    }
}

export_pipeline!(Rota);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    fn at(day: u8, weekday: u8, hour: u8) -> Wall {
        Wall {
            year: 2026,
            month: 12,
            day,
            hour,
            minute: 0,
            weekday,
        }
    }

    const ROTA: &str = r#"{
        "timeZone": "Europe/Berlin",
        "shifts": [
            {"days": ["mon", "tue", "wed", "thu", "fri"], "from": "09:00", "to": "17:00", "channelIds": ["ch_day"]},
            {"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "from": "17:00", "to": "09:00", "channelIds": ["ch_night"]}
        ],
        "overrides": [
            {"from": "2026-12-24T00:00", "to": "2026-12-27T00:00", "channelIds": ["ch_holiday", "ch_backup"]}
        ]
    }"#;

    #[test]
    fn shifts_then_overrides_decide_who_is_on_duty() {
        let rota = RotaConfig::parse(ROTA).expect("valid");
        let ids = |w: &Wall| on_duty(&rota, w).map(<[String]>::to_vec);
        assert_eq!(ids(&at(1, 2, 10)), Some(vec!["ch_day".to_string()]));
        assert_eq!(ids(&at(1, 2, 22)), Some(vec!["ch_night".to_string()]));
        assert_eq!(
            ids(&at(2, 3, 3)),
            Some(vec!["ch_night".to_string()]),
            "Tuesday's night shift"
        );
        assert_eq!(ids(&at(5, 6, 12)), None, "nobody on Saturday afternoon");
        assert_eq!(
            ids(&at(24, 4, 10)),
            Some(vec!["ch_holiday".to_string(), "ch_backup".to_string()])
        );
        assert_eq!(
            ids(&at(27, 7, 0)),
            Some(vec!["ch_night".to_string()]),
            "the override ended"
        );
    }

    #[test]
    fn a_rota_names_channels_and_real_times() {
        for bad in [
            r#"{}"#,
            r#"{"shifts": [{"days": [], "from": "09:00", "to": "17:00", "channelIds": ["ch_a"]}]}"#,
            r#"{"shifts": [{"days": ["mon"], "from": "25:00", "to": "17:00", "channelIds": ["ch_a"]}]}"#,
            r#"{"shifts": [{"days": ["mon"], "from": "09:00", "to": "17:00", "channelIds": ["alice"]}]}"#,
            r#"{"overrides": [{"from": "2026-12-24", "to": "2026-12-27T00:00", "channelIds": ["ch_a"]}]}"#,
            r#"{"overrides": [{"from": "2026-02-29T00:00", "to": "2026-03-01T00:00", "channelIds": ["ch_a"]}]}"#,
            r#"{"overrides": [{"from": "2026-12-27T00:00", "to": "2026-12-24T00:00", "channelIds": ["ch_a"]}]}"#,
        ] {
            assert!(RotaConfig::parse(bad).is_err(), "{bad}");
        }
    }
}
