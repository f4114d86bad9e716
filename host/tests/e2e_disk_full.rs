//! SQLite on a disk that fills up: writes answer 503 `SERVICE_UNAVAILABLE` with a clear
//! message and change nothing (and a write answered 201 is really stored: an `INSERT ...
//! RETURNING` outside a transaction used to say so before its commit failed), reads and
//! `/healthz` go on, the database is not corrupted, and when space returns the server
//! writes again without a restart. The disk is a small
//! tmpfs the test mounts (as root; skipped, visibly, otherwise).

use crate::support;

use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{Server, wait_for};

/// A 4 MiB tmpfs, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(test: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tocsin-test"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("SKIPPED {test}: cannot mount a tmpfs (needs root)");
            return None;
        }
        Some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill what is left with a file; returns its path.
    fn fill(&self) -> std::path::PathBuf {
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).expect("filler");
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        // Byte by byte for the last partial block.
        while f.write_all(&[0]).is_ok() {}
        let _ = f.flush();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .output();
    }
}

#[test]
fn a_full_disk_answers_503_corrupts_nothing_and_recovers() {
    let Some(disk) = SmallDisk::mount("a_full_disk_answers_503_corrupts_nothing_and_recovers")
    else {
        return;
    };
    let db_file = disk.path().join("tocsin.db");
    let url = format!("sqlite://{}", db_file.display());
    let mut server = Server::start(&[("TOCSIN_DATABASE_URL", &url)]);
    let api = server.client();
    // Each monitor carries a 50 kB request body, so writes need fresh space quickly.
    let payload = "x".repeat(50_000);
    let monitor = |name: &str| {
        api.post(
            "/v1/monitors",
            &json!({"name": name, "type": "http", "method": "POST", "url": "http://127.0.0.1:9/",
                    "interval": 60, "body": payload}),
        )
    };
    assert_eq!(monitor("before").status, 201);

    // The disk fills up.
    let filler = disk.fill();
    let mut attempt = 0;
    let mut said_created = Vec::new();
    let refused = wait_for(
        "a write refused for lack of space",
        Duration::from_secs(60),
        || {
            attempt += 1;
            let r = monitor(&format!("during {attempt}"));
            if r.status == 201 {
                said_created.push(
                    r.body["data"]["id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
            (r.status != 201).then_some(r)
        },
    );
    let refused_name = format!("during {attempt}");
    refused.assert_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(api.without_key().get("/healthz").status, 200);
    let listed = api.get("/v1/monitors");
    assert_eq!(listed.status, 200, "{}", listed.body);
    let names: Vec<&str> = listed.body["data"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(!names.contains(&refused_name.as_str()), "{names:?}");
    assert!(
        server.log().contains("unavailable"),
        "the log does not say why writes fail"
    );

    // Every write that was answered 201 is really there (none vanished with the space).
    for id in &said_created {
        assert_eq!(
            api.get(&format!("/v1/monitors/{id}")).status,
            200,
            "{id} was lost"
        );
    }

    // Space returns: writes work again, without a restart.
    std::fs::remove_file(&filler).expect("free the space");
    wait_for("writes to work again", Duration::from_secs(30), || {
        (monitor("after").status == 201).then_some(())
    });
    server.stop();

    // The file is whole.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        use sea_orm::{ConnectionTrait, Database, Statement};
        let db = Database::connect(&url).await.expect("open");
        let row = db
            .query_one_raw(Statement::from_string(
                db.get_database_backend(),
                "PRAGMA integrity_check",
            ))
            .await
            .expect("integrity check")
            .expect("a row");
        let verdict: String = row.try_get_by_index(0).expect("text");
        assert_eq!(verdict, "ok");
        let _ = db.close().await;
    });
}
