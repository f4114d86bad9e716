//! The `smtp` monitor: reads the server's greeting (220), says EHLO, reads its extensions,
//! checks that STARTTLS is offered when asked to, optionally upgrades and says EHLO again,
//! and says QUIT. Implicit TLS (port 465) is a `tls` connection. No mail is sent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;
use tocsin_plugin_sdk::net::TlsOptions;
use tocsin_plugin_sdk::tcp::{self, Conn};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "smtp monitor")]
pub struct SmtpConfig {
    /// Host name or IP address of the mail server.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(title = "Host")]
    pub host: String,
    /// Port: 25 (the default), 587 (submission) or 465 (with tls).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// TLS: "none" (the default), "starttls" (upgrade after EHLO; fails when not offered)
    /// or "tls" (implicit TLS, port 465).
    #[serde(default = "default_tls")]
    #[schemars(extend("enum" = ["none", "starttls", "tls"]))]
    #[schemars(title = "TLS mode")]
    pub tls: String,
    /// Fail when the server does not offer STARTTLS (without upgrading).
    #[serde(default)]
    #[schemars(title = "Require STARTTLS")]
    pub require_starttls: bool,
    /// With TLS: accept a certificate that does not validate.
    #[serde(default)]
    #[schemars(title = "Ignore TLS errors")]
    pub ignore_tls_errors: bool,
    /// The name said in EHLO.
    #[serde(default = "default_ehlo")]
    #[schemars(length(min = 1, max = 253))]
    #[schemars(title = "EHLO name")]
    pub ehlo_name: String,
}

fn default_port() -> u16 {
    25
}

fn default_tls() -> String {
    "none".into()
}

fn default_ehlo() -> String {
    "tocsin.localdomain".into()
}

impl TypedConfig for SmtpConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        let mut problems = Vec::new();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            problems.push(field_error("host", "must be a host name or IP address"));
        }
        if !["none", "starttls", "tls"].contains(&self.tls.as_str()) {
            problems.push(field_error("tls", "must be none, starttls or tls"));
        }
        if self.ehlo_name.contains(char::is_whitespace) {
            problems.push(field_error("ehloName", "must be a host name"));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// One SMTP reply: its code and its lines' text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub lines: Vec<String>,
}

/// Read a reply: lines `250-...` go on, `250 ...` ends it.
fn read_reply(conn: &mut Conn) -> Result<Reply, String> {
    let mut lines = Vec::new();
    loop {
        let line = conn
            .read_line(4096)
            .map_err(|e| tcp::describe(&e))?
            .ok_or("the server closed the connection")?;
        let code = line
            .get(..3)
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| {
                format!(
                    "the server does not speak SMTP (it sent \"{}\")",
                    line.chars().take(60).collect::<String>()
                )
            })?;
        let more = line.as_bytes().get(3) == Some(&b'-');
        lines.push(line.get(4..).unwrap_or("").to_string());
        if !more {
            return Ok(Reply { code, lines });
        }
        if lines.len() > 100 {
            return Err("the server's reply has more than 100 lines".into());
        }
    }
}

fn say(conn: &mut Conn, line: &str) -> Result<Reply, String> {
    conn.write(format!("{line}\r\n").as_bytes())
        .map_err(|e| tcp::describe(&e))?;
    read_reply(conn)
}

/// The extensions an EHLO reply lists (upper case keywords), without the greeting line.
pub fn extensions(reply: &Reply) -> Vec<String> {
    reply
        .lines
        .iter()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_ascii_uppercase)
        .collect()
}

struct Smtp;

impl Monitor for Smtp {
    type Config = SmtpConfig;

    fn info() -> Info {
        Info {
            name: "smtp",
            version: env!("CARGO_PKG_VERSION"),
            description: "Checks a mail server: its greeting, EHLO, and STARTTLS offered or completed. Sends no mail.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: SmtpConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let options = TlsOptions {
            server_name: None,
            accept_invalid_certificates: c.ignore_tls_errors,
        };
        let implicit = (c.tls == "tls").then(|| options.clone());
        let mut conn =
            match tcp::connect("the mail server", &c.host, c.port, implicit, ctx.timeout_ms) {
                Ok(conn) => conn,
                Err(reason) => return Outcome::fail(reason),
            };
        let mut details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        let result = session(&c, &mut conn, options, &mut details);
        conn.close();
        match result {
            Ok(()) => Outcome::pass(Some(elapsed(started))).with_details(details),
            Err(reason) => Outcome::fail(format!("Mail server at {target}: {reason}"))
                .with_time(elapsed(started))
                .with_details(details),
        }
    }
}

fn session(
    c: &SmtpConfig,
    conn: &mut Conn,
    options: TlsOptions,
    details: &mut serde_json::Value,
) -> Result<(), String> {
    let greeting = read_reply(conn)?;
    details["greeting"] = json!(greeting.lines.first().cloned().unwrap_or_default());
    if greeting.code != 220 {
        return Err(format!(
            "greeted with {} {}",
            greeting.code,
            greeting.lines.join(" ")
        ));
    }
    let ehlo = say(conn, &format!("EHLO {}", c.ehlo_name))?;
    if ehlo.code != 250 {
        return Err(format!(
            "EHLO answered {} {}",
            ehlo.code,
            ehlo.lines.join(" ")
        ));
    }
    let offered = extensions(&ehlo);
    let starttls = offered.iter().any(|e| e == "STARTTLS");
    details["extensions"] = json!(offered);
    details["starttls"] = json!(starttls);
    if (c.tls == "starttls" || c.require_starttls) && !starttls {
        return Err("STARTTLS is not offered".into());
    }
    if c.tls == "starttls" {
        let ready = say(conn, "STARTTLS")?;
        if ready.code != 220 {
            return Err(format!(
                "STARTTLS answered {} {}",
                ready.code,
                ready.lines.join(" ")
            ));
        }
        let session = conn
            .start_tls(options)
            .map_err(|e| format!("STARTTLS handshake failed: {}", tcp::describe(&e)))?;
        details["tls"] = json!(session.protocol);
        let again = say(conn, &format!("EHLO {}", c.ehlo_name))?;
        if again.code != 250 {
            return Err(format!(
                "EHLO after STARTTLS answered {} {}",
                again.code,
                again.lines.join(" ")
            ));
        }
    } else if let Some(session) = conn.tls_session() {
        details["tls"] = json!(session.protocol);
    }
    // A polite goodbye; a server that hangs up first is no failure.
    let _ = say(conn, "QUIT");
    Ok(())
}

fn elapsed(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

export_monitor!(Smtp);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    #[test]
    fn extensions_are_read_from_ehlo() {
        let reply = Reply {
            code: 250,
            lines: vec![
                "mail.example.com Hello".into(),
                "PIPELINING".into(),
                "starttls".into(),
                "SIZE 1000".into(),
            ],
        };
        assert_eq!(extensions(&reply), ["PIPELINING", "STARTTLS", "SIZE"]);
    }

    #[test]
    fn configuration_is_checked() {
        let c = SmtpConfig::parse(r#"{"host":"mx"}"#).expect("valid");
        assert_eq!((c.port, c.tls.as_str()), (25, "none"));
        let problems = SmtpConfig::parse(r#"{"host":"mx","tls":"ssl"}"#).expect_err("bad tls");
        assert_eq!(problems[0].field, "tls");
    }
}
