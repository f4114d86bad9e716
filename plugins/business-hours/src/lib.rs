//! The `business-hours` pipeline step: inside the hours, every alert goes on; outside
//! them, only monitors tagged critical page, and every other notification waits until the
//! hours begin again, when what waited for one channel goes out as one summary (to a
//! channel that groups messages; any other gets each as it was).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_plugin_sdk::typed::TypedConfig;
use tocsin_plugin_sdk::{
    Decision, Delay, FieldError, Info, Pipeline, PipelineAlert, export_pipeline,
};
use tocsin_schedule::{
    Day, Wall, Window, check_time, check_zone, minutes_of, moment, next_opening,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "business-hours pipeline step")]
pub struct HoursConfig {
    /// The time zone the hours are kept in (IANA), e.g. "Europe/Berlin".
    #[serde(default = "utc")]
    #[schemars(length(min = 1, max = 64))]
    #[schemars(title = "Time zone")]
    pub time_zone: String,
    /// The working days.
    #[serde(default = "Day::weekdays")]
    #[schemars(title = "Days")]
    pub days: Vec<Day>,
    /// When the working day begins, HH:MM.
    #[serde(default = "nine")]
    #[schemars(title = "From")]
    pub from: String,
    /// When it ends, HH:MM (after `from`).
    #[serde(default = "five")]
    #[schemars(title = "To")]
    pub to: String,
    /// Alerts about monitors with this tag page at any hour.
    #[serde(default = "critical")]
    #[schemars(length(min = 1, max = 64))]
    #[schemars(title = "Tag that pages at any hour")]
    pub critical_tag: String,
    /// Send what waited as one summary per channel (true), or each as it was (false).
    #[serde(default = "yes")]
    #[schemars(title = "One summary in the morning")]
    pub summary: bool,
}

fn utc() -> String {
    "UTC".into()
}
fn nine() -> String {
    "09:00".into()
}
fn five() -> String {
    "17:00".into()
}
fn critical() -> String {
    "critical".into()
}
fn yes() -> bool {
    true
}

impl TypedConfig for HoursConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        let mut problems: Vec<FieldError> = [
            check_time("from", &self.from),
            check_time("to", &self.to),
            check_zone("timeZone", &self.time_zone),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let (Some(from), Some(to)) = (minutes_of(&self.from), minutes_of(&self.to))
            && from >= to
        {
            problems.push(tocsin_plugin_sdk::typed::field_error(
                "to",
                "must be after from",
            ));
        }
        if self.days.is_empty() {
            problems.push(tocsin_plugin_sdk::typed::field_error(
                "days",
                "must name at least one day",
            ));
        }
        self.days.sort_by_key(|d| d.iso());
        self.days.dedup();
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// What happens to an alert at wall-clock moment `now`: None goes on at once, Some holds
/// it until that moment.
pub fn hold_until(
    config: &HoursConfig,
    tags: &[String],
    now: &Wall,
    moment: impl Fn(&Wall, u16) -> Option<i64>,
) -> Option<i64> {
    if tags.iter().any(|t| t == &config.critical_tag) {
        return None;
    }
    let window = Window {
        days: &config.days,
        from: minutes_of(&config.from)?,
        to: minutes_of(&config.to)?,
    };
    if window.covers(now) {
        return None;
    }
    next_opening(&[window], now, moment)
}

struct BusinessHours;

impl Pipeline for BusinessHours {
    type Config = HoursConfig;

    fn info() -> Info {
        Info {
            name: "business-hours",
            version: env!("CARGO_PKG_VERSION"),
            description: "Outside business hours, only monitors tagged critical page; the rest wait until the hours begin, gathered into one summary for channels that group messages.",
            capabilities: &[],
        }
    }

    fn decide(config: HoursConfig, alert: PipelineAlert) -> Decision {
        let Some(now) = Wall::now_or_log(alert.now, &config.time_zone) else {
            return Decision::Deliver;
        };
        let zone = config.time_zone.clone();
        match hold_until(&config, &alert.tags, &now, |date, minutes| {
            moment(&zone, date, minutes)
        }) {
            Some(until) => Decision::Delay(Delay {
                until,
                summary: config.summary,
            }),
            None => Decision::Deliver,
        }
    }
}

export_pipeline!(BusinessHours);

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

    /// Hours from the epoch of a date in December 2026 and minutes, as a stand-in clock.
    fn clock(date: &Wall, minutes: u16) -> Option<i64> {
        Some(i64::from(date.day) * 1440 + i64::from(minutes))
    }

    #[test]
    fn defaults_are_weekdays_nine_to_five_in_utc_with_a_summary() {
        let c = HoursConfig::parse("{}").expect("defaults");
        assert_eq!(
            (c.time_zone.as_str(), c.from.as_str(), c.to.as_str()),
            ("UTC", "09:00", "17:00")
        );
        assert_eq!(c.days, Day::weekdays());
        assert!(c.summary);
        let problems = HoursConfig::parse(r#"{"from": "18:00", "to": "08:00", "days": []}"#)
            .expect_err("refused");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert!(
            fields.contains(&"to") && fields.contains(&"days"),
            "{fields:?}"
        );
        assert!(HoursConfig::parse(r#"{"from": "9am"}"#).is_err());
    }

    #[test]
    fn outside_hours_only_critical_monitors_page() {
        let c = HoursConfig::parse("{}").expect("defaults");
        // Tuesday 10:00: at once.
        assert_eq!(hold_until(&c, &[], &at(1, 2, 10), clock), None);
        // Tuesday 20:00: Wednesday 09:00.
        assert_eq!(
            hold_until(&c, &[], &at(1, 2, 20), clock),
            clock(&at(2, 3, 0), 540)
        );
        // Saturday: Monday 09:00.
        assert_eq!(
            hold_until(&c, &[], &at(5, 6, 12), clock),
            clock(&at(7, 1, 0), 540)
        );
        // Critical pages at any hour.
        assert_eq!(
            hold_until(&c, &["critical".into()], &at(5, 6, 3), clock),
            None
        );
    }
}
