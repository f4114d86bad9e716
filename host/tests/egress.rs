//! The egress policy: every host import that connects (`http`, `net`, `tls`, `smtp`) checks
//! the address it is about to connect to, redirects included, and a denied target fails
//! with a reason naming the rule, before any packet is sent. The API refuses a monitor
//! whose target is an address the policy denies.
//!
//! Denied metadata and link-local addresses are never contacted: the refusal happens
//! before the connect, so these tests send nothing beyond loopback.

use crate::support;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::sinks::SmtpSink;
use support::target::Target;
use support::{Server, wait_for};
use tocsin::plugins::egress::{EgressPolicy, EgressPreset};
use tocsin::plugins::relay::{Error as SmtpError, Mail};
use tocsin::plugins::state::{CallContext, Grants};
use tocsin::plugins::wit::http::{Error as HttpError, Request};
use tocsin::plugins::wit::tls::{Error as TlsError, InspectRequest};
use tocsin::plugins::{Capability, HostSettings, PluginHost, SmtpConfig, SmtpTls};

fn host_with(egress: EgressPolicy, smtp_port: Option<u16>) -> PluginHost {
    tocsin::crypto::install_provider();
    let settings = HostSettings {
        egress,
        smtp: SmtpConfig {
            host: smtp_port.map(|_| "localhost".into()),
            port: smtp_port,
            tls: Some(SmtpTls::None),
            from: Some("Tocsin <alerts@example.test>".into()),
            ..SmtpConfig::default()
        },
        ..HostSettings::default()
    };
    PluginHost::new(None, &settings).expect("plugin host")
}

fn public_only(allow: &[&str]) -> EgressPolicy {
    let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    EgressPolicy::new(EgressPreset::PublicOnly, &allow, &[]).expect("policy")
}

fn call(host: &PluginHost) -> CallContext {
    let budget = Duration::from_secs(10);
    CallContext {
        plugin: Arc::from("test"),
        grants: Grants::of([Capability::Http, Capability::Tls, Capability::Smtp]),
        services: host.services(),
        budget_deadline: Instant::now() + budget,
        budget,
        region: None,
        attachments: std::sync::Arc::from([]),
    }
}

fn get(url: String) -> Request {
    Request {
        method: "GET".into(),
        url,
        headers: vec![],
        body: None,
        timeout_ms: 5_000,
        follow_redirects: true,
        max_redirects: 5,
        max_body_bytes: 4096,
        version: tocsin::plugins::wit::http::HttpVersion::Any,
    }
}

fn denied(result: Result<tocsin::plugins::wit::http::Response, HttpError>) -> String {
    match result {
        Err(HttpError::Denied(reason)) => reason,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn the_default_policy_reaches_private_services_but_no_metadata_even_by_redirect() {
    let target = Target::start();
    let host = host_with(EgressPolicy::default(), None);
    let c = call(&host);

    // Loopback is a private service a self-hoster monitors: allowed.
    let ok = tocsin::plugins::http::send(&c, get(target.url("/ok")))
        .await
        .expect("loopback");
    assert_eq!(ok.status, 200);

    // A redirect to the metadata service is refused at that hop, naming the rule.
    for to in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
    ] {
        let reason = denied(
            tocsin::plugins::http::send(&c, get(target.url(&format!("/away/302?to={to}")))).await,
        );
        assert!(
            reason.contains("the egress policy denies")
                && reason.contains("`default` egress preset"),
            "{to}: {reason}"
        );
    }
}

#[tokio::test]
async fn public_only_refuses_loopback_by_name_and_by_address_in_every_import() {
    let target = Target::start();
    let smtp = SmtpSink::start();
    let host = host_with(public_only(&[]), Some(smtp.port));
    let c = call(&host);

    // http: a name that resolves to loopback is refused after resolution, as is a literal.
    for url in [
        target.url("/status"),
        target.url("/status").replace("127.0.0.1", "localhost"),
    ] {
        let reason = denied(tocsin::plugins::http::send(&c, get(url.clone())).await);
        assert!(reason.contains("loopback"), "{url}: {reason}");
        assert!(reason.contains("`public-only` egress preset"), "{reason}");
    }
    assert_eq!(target.hits(), 0, "the target was contacted");

    // tls: the handshake never starts.
    let port = target.port();
    match tocsin::plugins::tls::inspect(
        &c,
        InspectRequest {
            host: "localhost".into(),
            port,
            server_name: None,
            timeout_ms: 5_000,
        },
    )
    .await
    {
        Err(TlsError::Denied(reason)) => assert!(reason.contains("loopback"), "{reason}"),
        other => panic!("tls under public-only: {other:?}"),
    }

    // smtp: the relay on loopback is refused too, and nothing reaches it.
    let relay = host.services();
    let relay = relay.smtp.as_ref().expect("relay configured");
    let message = Mail {
        to: vec!["ops@example.test".into()],
        subject: "down".into(),
        text_body: "it is down".into(),
        html_body: None,
        attachments: std::sync::Arc::from([]),
    };
    match relay
        .send(&message, Duration::from_secs(5), &public_only(&[]))
        .await
    {
        Err(SmtpError::Denied(reason)) => assert!(reason.contains("loopback"), "{reason}"),
        other => panic!("smtp under public-only: {other:?}"),
    }
    assert!(smtp.mails().is_empty());

    // An allow-list entry opens exactly what it names.
    let allowed = public_only(&["127.0.0.1/32"]);
    relay
        .send(&message, Duration::from_secs(5), &allowed)
        .await
        .expect("allowed relay");
    assert_eq!(smtp.mails().len(), 1);
    let host = host_with(allowed, None);
    let ok = tocsin::plugins::http::send(&call(&host), get(target.url("/ok")))
        .await
        .expect("allowed by egress_allow");
    assert_eq!(ok.status, 200);
}

#[test]
fn the_api_refuses_denied_address_targets_and_checks_by_name_fail_with_the_rule() {
    let target = Target::start();
    let server = Server::start(&[("TOCSIN_EGRESS", "public-only")]);
    let api = server.client();

    // An address target the policy denies is refused with 422, naming the field and rule.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "direct", "type": "http", "method": "GET", "url": target.url("/status"), "interval": 1}),
    );
    r.assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(r.body["error"]["details"][0]["field"], "url", "{}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("loopback")),
        "{}",
        r.body
    );
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "ping", "type": "ping", "hostname": "::1", "interval": 1}),
    );
    r.assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "hostname",
        "{}",
        r.body
    );
    assert_eq!(api.get("/v1/monitors").body["data"], json!([]));

    // A name is resolved at check time: the check fails with the rule as its reason.
    let by_name = target.url("/status").replace("127.0.0.1", "localhost");
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "by name", "type": "http", "method": "GET", "url": by_name, "interval": 1}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let reason = wait_for("a failed check", Duration::from_secs(30), || {
        let r = api.get(&format!("/v1/monitors/{id}/checks?limit=5"));
        r.body["data"].as_array()?.first()?["reason"]
            .as_str()
            .map(str::to_string)
    });
    assert!(
        reason.contains("the egress policy denies") && reason.contains("loopback"),
        "{reason}"
    );
    assert_eq!(target.hits(), 0, "the target was contacted");
}

#[test]
fn the_default_server_refuses_metadata_targets() {
    let server = Server::start(&[]);
    let api = server.client();
    for (body, field) in [
        (
            json!({"name": "imds", "type": "http", "method": "GET", "url": "http://169.254.169.254/latest/meta-data/", "interval": 1}),
            "url",
        ),
        (
            json!({"name": "imds6", "type": "ping", "hostname": "fd00:ec2::254", "interval": 1}),
            "hostname",
        ),
        (
            json!({"name": "ll", "type": "ssl", "hostname": "fe80::1", "interval": 60}),
            "hostname",
        ),
    ] {
        let r = api.post("/v1/monitors", &body);
        r.assert_error(422, "UNPROCESSABLE_ENTITY");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    // Private addresses stay allowed: the self-hoster's own services.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "nas", "type": "http", "method": "GET", "url": "http://127.0.0.1:9/", "interval": 60}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
}
