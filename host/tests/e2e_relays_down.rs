//! The SMTP relay and the Telegram Bot API down for a while: e-mail and Telegram
//! deliveries fail with the reason, retry on the schedule, and arrive, once each, when the
//! services come back.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::sinks::{FakeTelegram, SmtpSink};
use support::{Server, free_port, wait_for};

#[test]
fn email_and_telegram_deliveries_wait_out_an_outage() {
    let (smtp_port, telegram_port) = (free_port(), free_port());
    let telegram_base = format!("http://127.0.0.1:{telegram_port}");
    let smtp_port_text = smtp_port.to_string();
    let server = Server::start(&[
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &smtp_port_text),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
        ("TOCSIN_TELEGRAM_API_BASE", &telegram_base),
        ("TOCSIN_TELEGRAM_BOT_TOKEN", "123456:server-token"),
        ("TOCSIN_WEBHOOK_RETRY_SCHEDULE", "1s,2s,2s,2s,2s,2s"),
    ]);
    let api = server.client();
    let channel = |body: serde_json::Value| {
        let r = api.post("/v1/channels", &body);
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["id"].as_str().expect("id").to_string()
    };
    let mail = channel(json!({"name": "mail", "type": "email", "target": "ops@tocsin.test"}));
    let chat = channel(json!({"name": "chat", "type": "telegram", "chatId": "-100200"}));

    // Both services are down: the first attempts fail, saying why, and stay pending.
    let mut deliveries = Vec::new();
    for ch in [&mail, &chat] {
        let d = api.request("POST", &format!("/v1/channels/{ch}/test"), None);
        assert_eq!(d.body["data"]["status"], "pending", "{}", d.body);
        assert_eq!(d.body["data"]["attempts"], 1, "{}", d.body);
        assert!(
            d.body["data"]["lastError"]
                .as_str()
                .is_some_and(|e| !e.is_empty()),
            "{}",
            d.body
        );
        deliveries.push(d.body["data"]["id"].as_str().expect("id").to_string());
    }
    // Let a retry or two fail as well.
    wait_for("a second failed attempt", Duration::from_secs(30), || {
        let d = api
            .get(&format!("/v1/webhook-deliveries/{}", deliveries[0]))
            .body;
        (d["data"]["attempts"].as_u64() >= Some(2)).then_some(())
    });

    // They come back: each delivery arrives, once.
    let smtp = SmtpSink::start_on(smtp_port);
    let telegram = FakeTelegram::start_on(telegram_port);
    for id in &deliveries {
        wait_for(
            "the delivery after the outage",
            Duration::from_secs(60),
            || {
                let d = api.get(&format!("/v1/webhook-deliveries/{id}")).body;
                (d["data"]["status"] == "succeeded").then_some(())
            },
        );
    }
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert_eq!(mails[0].to, ["ops@tocsin.test"]);
    let messages = telegram.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].token, "123456:server-token");
    assert_eq!(messages[0].body["chat_id"], "-100200");
}
