//! Cron schedules, as heartbeat monitors and maintenance windows write them.

use std::str::FromStr;

/// Parse a cron schedule of five fields (minute hour day month weekday), or six with
/// seconds first, or a nickname such as `@daily`.
pub fn parse_cron(text: &str) -> Result<croner::Cron, String> {
    let fields = text.split_whitespace().count();
    let nickname = text.trim_start().starts_with('@');
    let fits = (5..=6).contains(&fields) || (nickname && fields == 1);
    if !fits {
        return Err(
            "must have five fields (minute hour day month weekday), or six with seconds first"
                .into(),
        );
    }
    croner::Cron::from_str(text).map_err(|e| format!("is not a valid cron schedule: {e}"))
}
