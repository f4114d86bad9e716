//! End to end: `tocsin backup` copies the SQLite database while the server runs and writes
//! check results; `tocsin restore` refuses while the server runs and refuses files that are
//! not Tocsin databases of a known schema; a restored server serves the monitors the
//! backup held, with their history, and not what came after.

use crate::support;

use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::target::Target;
use support::{Server, wait_for};

/// Run `tocsin <args>` on `data_dir`; (success, stdout + stderr).
fn tocsin(data_dir: &Path, args: &[&str]) -> (bool, String) {
    let dir = data_dir.to_str().expect("path");
    support::run_tocsin(data_dir, args, &[("TOCSIN_DATA_DIR", dir)])
}

fn checks_of(api: &support::Api, id: &str) -> usize {
    let r = api.get(&format!("/v1/monitors/{id}/checks?limit=100"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().map_or(0, Vec::len)
}

#[test]
fn backup_while_checks_are_written_then_restore_serves_the_same_monitors() {
    let target = Target::start();
    let data = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_in(data.path(), &[]);
    let api = server.client();
    let mut ids = Vec::new();
    for name in ["web", "api", "docs"] {
        let r = api.post(
            "/v1/monitors",
            &json!({"name": name, "type": "http", "interval": 1,
                    "url": target.url("/ok"), "method": "GET"}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(r.body["data"]["id"].as_str().expect("id").to_string());
    }
    wait_for("checks being written", Duration::from_secs(30), || {
        (checks_of(&api, &ids[0]) >= 3).then_some(())
    });

    // Online: the server keeps writing a check a second per monitor meanwhile.
    let full = data.path().join("full.db");
    let (ok, out) = tocsin(data.path(), &["backup", full.to_str().expect("path")]);
    assert!(ok, "{out}");
    assert!(out.contains("3 monitors"), "{out}");
    let (ok, out) = tocsin(data.path(), &["backup", full.to_str().expect("path")]);
    assert!(!ok && out.contains("exists"), "never overwrites: {out}");
    let lean = data.path().join("lean.db");
    let (ok, out) = tocsin(
        data.path(),
        &["backup", "--without-history", lean.to_str().expect("path")],
    );
    assert!(ok, "{out}");
    assert!(out.contains("0 check results"), "{out}");
    let before = checks_of(&api, &ids[0]);

    // Made after the backup: not in it.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "later", "type": "http", "interval": 1,
                "url": target.url("/ok"), "method": "GET"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let later = r.body["data"]["id"].as_str().expect("id").to_string();

    // Not while the server runs.
    let (ok, out) = tocsin(data.path(), &["restore", full.to_str().expect("path")]);
    assert!(!ok && out.contains("is running"), "{out}");

    // Not a file that is not a Tocsin database, nor one from a newer version.
    let junk = data.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all, just some bytes").expect("write");
    let (ok, out) = tocsin(data.path(), &["restore", junk.to_str().expect("path")]);
    assert!(!ok && out.contains("junk.db"), "{out}");
    server.stop();
    let newer = data.path().join("newer.db");
    std::fs::copy(&full, &newer).expect("copy");
    let other = tempfile::tempdir().expect("tempdir");
    add_unknown_migration(&newer);
    let (ok, out) = tocsin(other.path(), &["restore", newer.to_str().expect("path")]);
    assert!(!ok && out.contains("newer Tocsin"), "{out}");

    let (ok, out) = tocsin(data.path(), &["restore", full.to_str().expect("path")]);
    assert!(ok, "{out}");
    assert!(out.contains("kept as"), "{out}");
    let server = Server::start_in(data.path(), &[]);
    let api = server.client();
    let listed = api.get("/v1/monitors?limit=100");
    assert_eq!(listed.status, 200, "{}", listed.body);
    let mut names: Vec<String> = listed.body["data"]
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["api", "docs", "web"]);
    api.get(&format!("/v1/monitors/{later}"))
        .assert_error(404, "MONITOR_NOT_FOUND");
    let restored = checks_of(&api, &ids[0]);
    assert!(
        restored >= 3 && restored <= before + 2,
        "history up to the backup: {restored} (had {before} just after it)"
    );
    // And it goes on checking.
    wait_for("checks after the restore", Duration::from_secs(30), || {
        (checks_of(&api, &ids[1]) > restored).then_some(())
    });
    drop(server);

    // The lean copy restores too, without history.
    let fresh = tempfile::tempdir().expect("tempdir");
    let (ok, out) = tocsin(fresh.path(), &["restore", lean.to_str().expect("path")]);
    assert!(ok, "{out}");
    let server = Server::start_in(fresh.path(), &[("TOCSIN_MIN_INTERVAL", "60")]);
    let api = server.client();
    let r = api.get(&format!("/v1/monitors/{}", ids[2]));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["name"], "docs");
}

/// Mark `file` as migrated by a migration no build of this version has.
fn add_unknown_migration(file: &Path) {
    let rt = tokio_runtime();
    rt.block_on(async {
        use sea_orm::ConnectionTrait;
        let db = sea_orm::Database::connect(format!("sqlite://{}", file.display()))
            .await
            .expect("open copy");
        db.execute_unprepared(
            "INSERT INTO seaql_migrations (version, applied_at) VALUES ('m9999_from_the_future', 0)",
        )
        .await
        .expect("insert");
        db.close().await.expect("close");
    });
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The PostgreSQL procedure of docs/operations.md: `pg_dump --format=custom` while the
/// server runs, `pg_restore --no-owner` into an empty database, start on it.
#[test]
fn postgres_dump_while_running_and_restore_into_an_empty_database() {
    support::pg::with_database("pg_dump procedure", |source| {
        support::pg::with_database("pg_restore target", |restored| {
            let target = Target::start();
            let mut server = Server::start(&[("TOCSIN_DATABASE_URL", source)]);
            let api = server.client();
            let r = api.post(
                "/v1/monitors",
                &json!({"name": "pg-web", "type": "http", "interval": 1,
                        "url": target.url("/ok"), "method": "GET"}),
            );
            assert_eq!(r.status, 201, "{}", r.body);
            let id = r.body["data"]["id"].as_str().expect("id").to_string();
            wait_for("checks being written", Duration::from_secs(30), || {
                (checks_of(&api, &id) >= 2).then_some(())
            });
            let dir = tempfile::tempdir().expect("tempdir");
            let dump = dir.path().join("tocsin.dump");
            let out = Command::new("pg_dump")
                .args(["--format=custom", "--file"])
                .arg(&dump)
                .arg(source)
                .output()
                .expect("pg_dump (the PostgreSQL client) is needed");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            server.stop();
            let out = Command::new("pg_restore")
                .args(["--no-owner", "--exit-on-error", "--dbname", restored])
                .arg(&dump)
                .output()
                .expect("pg_restore");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let server = Server::start(&[("TOCSIN_DATABASE_URL", restored)]);
            let api = server.client();
            let r = api.get(&format!("/v1/monitors/{id}"));
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.body["data"]["name"], "pg-web");
            assert!(checks_of(&api, &id) >= 2, "history came along");
        });
    });
}
