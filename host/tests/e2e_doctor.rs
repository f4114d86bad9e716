//! End to end: `tocsin doctor` against real peers on loopback: an SMTP sink and a port
//! where nothing listens, a fake Telegram Bot API answering `getMe` for a good and a
//! revoked token, a plugin file that is not a component, and a configuration that does
//! not load. It reports each as ok, warn or FAIL with a fix, and exits 1 on a failure.

use crate::support;

use std::path::Path;
use std::process::Command;
use support::free_port;
use support::sinks::{FakeTelegram, SmtpSink};

/// Run `tocsin doctor` on `data_dir` with `env`; (whether it exited 0, output).
fn doctor(data_dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let dir = data_dir.to_str().expect("path");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
    let cache = cache.to_str().expect("path");
    let mut all = vec![("TOCSIN_DATA_DIR", dir), ("TOCSIN_PLUGIN_CACHE_DIR", cache)];
    all.extend_from_slice(env);
    support::run_tocsin(data_dir, &["doctor"], &all)
}

/// The row of `check` (its first line).
fn row<'a>(report: &'a str, check: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.split_whitespace().next() == Some(check))
        .unwrap_or_else(|| panic!("no `{check}` row in:\n{report}"))
}

#[test]
fn a_wrong_smtp_port_fails_and_a_healthy_setup_passes() {
    let data = tempfile::tempdir().expect("tempdir");
    let migrate = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .arg("migrate")
        .env_clear()
        .env("TOCSIN_DATA_DIR", data.path())
        .output()
        .expect("migrate");
    assert!(migrate.status.success());
    let sink = SmtpSink::start();
    let telegram = FakeTelegram::start();
    let closed = free_port().to_string();
    let sink_port = sink.port.to_string();

    // Nothing listens on the SMTP port: a failure, with what to check.
    let (ok, report) = doctor(
        data.path(),
        &[
            ("TOCSIN_SMTP_HOST", "127.0.0.1"),
            ("TOCSIN_SMTP_PORT", &closed),
            ("TOCSIN_SMTP_TLS", "none"),
        ],
    );
    assert!(!ok, "exit 1: {report}");
    let smtp = row(&report, "smtp");
    assert!(smtp.contains("FAIL") && smtp.contains(&closed), "{report}");
    assert!(
        report.contains("fix: check smtp.host, smtp.port"),
        "{report}"
    );
    assert!(row(&report, "schema").contains("ok"), "{report}");
    assert!(row(&report, "database").contains("ok"), "{report}");

    // The relay answers and the bot token is good: every line ok or warn, exit 0.
    let (ok, report) = doctor(
        data.path(),
        &[
            ("TOCSIN_SMTP_HOST", "127.0.0.1"),
            ("TOCSIN_SMTP_PORT", &sink_port),
            ("TOCSIN_SMTP_TLS", "none"),
            ("TOCSIN_TELEGRAM_BOT_TOKEN", "123:good"),
            ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
        ],
    );
    assert!(ok, "exit 0: {report}");
    assert!(row(&report, "smtp").contains("answered EHLO"), "{report}");
    assert!(
        row(&report, "telegram").contains("@tocsin_test_bot"),
        "{report}"
    );
    assert!(sink.mails().is_empty(), "the doctor sends no mail");

    // Buttons that call back need the bot's webhook to be this server's updates route.
    let with_updates = [
        ("TOCSIN_TELEGRAM_BOT_TOKEN", "123:good"),
        ("TOCSIN_TELEGRAM_API_BASE", telegram.base.as_str()),
        ("TOCSIN_TELEGRAM_WEBHOOK_SECRET", "s3cret"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.example.test"),
    ];
    let (ok, report) = doctor(data.path(), &with_updates);
    let tg = row(&report, "telegram");
    assert!(ok, "a warning only: {report}");
    assert!(
        tg.contains("warn") && tg.contains("not set") && report.contains("setWebhook"),
        "{report}"
    );
    tocsin::crypto::install_provider();
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/bot123:good/setWebhook", telegram.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("url=https%3A%2F%2Ftocsin.example.test%2Ftelegram%2Fupdates&secret_token=s3cret")
        .send()
        .expect("setWebhook");
    assert!(r.status().is_success());
    let (_, report) = doctor(data.path(), &with_updates);
    assert!(
        row(&report, "telegram")
            .contains("updates come to https://tocsin.example.test/telegram/updates"),
        "{report}"
    );
    assert!(
        !report.contains("FAIL"),
        "nothing failed on a healthy set-up: {report}"
    );

    // A revoked token, and a plugin file that is not a component.
    let plugins = data.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::write(plugins.join("broken.wasm"), b"\0asm not really").expect("write");
    let (ok, report) = doctor(
        data.path(),
        &[
            ("TOCSIN_TELEGRAM_BOT_TOKEN", "bad"),
            ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
        ],
    );
    assert!(!ok, "exit 1: {report}");
    let tg = row(&report, "telegram");
    assert!(tg.contains("FAIL") && tg.contains("401"), "{report}");
    let plugin = row(&report, "plugin");
    assert!(
        plugin.contains("FAIL") && plugin.contains("broken.wasm"),
        "{report}"
    );
    assert!(
        row(&report, "smtp").contains("warn"),
        "no relay is a warning: {report}"
    );
}

#[test]
fn a_configuration_that_does_not_load_is_reported_not_thrown() {
    let data = tempfile::tempdir().expect("tempdir");
    let (ok, report) = doctor(data.path(), &[("TOCSIN_EGRESS", "everywhere")]);
    assert!(!ok, "exit 1: {report}");
    let line = row(&report, "configuration");
    assert!(line.contains("FAIL") && line.contains("egress"), "{report}");
    // Nothing was created by looking.
    assert!(!data.path().join("tocsin.db").exists());
    let (ok, report) = doctor(data.path(), &[]);
    assert!(ok, "exit 0: {report}");
    assert!(
        row(&report, "database").contains("does not exist yet"),
        "{report}"
    );
    assert!(!data.path().join("tocsin.db").exists(), "{report}");
}
