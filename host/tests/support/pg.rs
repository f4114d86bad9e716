//! A fresh PostgreSQL database per test on the server `TOCSIN_TEST_DATABASE_URL` names,
//! dropped again at the end.

use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

/// The server to create test databases on, if the run has one.
pub fn base_url(test: &str) -> Option<String> {
    let base = std::env::var("TOCSIN_TEST_DATABASE_URL").ok();
    if base.is_none() {
        eprintln!(
            "SKIPPED {test}: set TOCSIN_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to test PostgreSQL"
        );
    }
    base
}

/// Run `test` against a fresh PostgreSQL database of its own (its URL), dropped after;
/// does nothing (and says SKIPPED) when the run has no PostgreSQL server.
pub fn with_database(name: &str, test: impl FnOnce(&str)) {
    let Some(base) = base_url(name) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = rt.block_on(TestDb::create(&base));
    test(&db.url);
    rt.block_on(db.drop());
}

/// A database of its own.
pub struct TestDb {
    pub admin: DatabaseConnection,
    pub name: String,
    pub url: String,
}

impl TestDb {
    pub async fn create(base: &str) -> TestDb {
        let name = format!(
            "tocsin_test_{}",
            ulid::Ulid::new().to_string().to_lowercase()
        );
        let admin = Database::connect(base)
            .await
            .expect("connect to TOCSIN_TEST_DATABASE_URL");
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create test database");
        let url = match base.rfind('/') {
            Some(i) if i > base.find("://").unwrap_or(0) + 2 => format!("{}/{name}", &base[..i]),
            _ => format!("{base}/{name}"),
        };
        TestDb { admin, name, url }
    }

    pub async fn drop(self) {
        let _ = self
            .admin
            .execute_unprepared(&format!("DROP DATABASE \"{}\" WITH (FORCE)", self.name))
            .await;
    }
}

/// A PostgreSQL server of the test's own (`initdb` and `pg_ctl` on the machine), on a
/// loopback port, that the test can stop and start. As root, the server runs as the
/// `postgres` user, as PostgreSQL requires.
pub struct PrivatePg {
    pub port: u16,
    dir: tempfile::TempDir,
}

impl PrivatePg {
    /// Create and start one; `None` (with a note) where the tools are missing.
    pub fn start(test: &str) -> Option<PrivatePg> {
        PrivatePg::start_with(test, None)
    }

    /// One whose TCP connections must sign in as `postgres` with `password`
    /// (SCRAM-SHA-256).
    pub fn start_with_password(test: &str, password: &str) -> Option<PrivatePg> {
        PrivatePg::start_with(test, Some(password))
    }

    fn start_with(test: &str, password: Option<&str>) -> Option<PrivatePg> {
        if std::process::Command::new("initdb")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("SKIPPED {test}: initdb is not on PATH");
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let pg = PrivatePg {
            port: super::free_port(),
            dir,
        };
        if is_root() {
            let status = std::process::Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(pg.dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the data directory");
        }
        let data = pg.data_dir();
        match password {
            None => pg.run(&[
                "initdb",
                "-D",
                &data,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ]),
            Some(password) => {
                let file = pg.dir.path().join("pwfile");
                std::fs::write(&file, format!("{password}\n")).expect("password file");
                if is_root() {
                    let _ = std::process::Command::new("chown")
                        .args(["postgres:postgres"])
                        .arg(&file)
                        .status();
                }
                let pwfile = format!("--pwfile={}", file.display());
                pg.run(&[
                    "initdb",
                    "-D",
                    &data,
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    &pwfile,
                    "-U",
                    "postgres",
                    "--no-sync",
                ]);
            }
        }
        pg.start_again();
        Some(pg)
    }

    fn data_dir(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, args: &[&str]) {
        let out = tool(args).output().expect("run a PostgreSQL tool");
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Start (again) and wait until it accepts connections.
    pub fn start_again(&self) {
        let data = self.data_dir();
        let log = self.dir.path().join("pg.log").display().to_string();
        let socket_dir = self.dir.path().display().to_string();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {socket_dir} -c fsync=off",
            self.port
        );
        self.run(&[
            "pg_ctl", "-D", &data, "-l", &log, "-o", &options, "-w", "start",
        ]);
    }

    /// Stop at once (open connections are cut, as in a crash or failover).
    pub fn stop(&self) {
        let data = self.data_dir();
        self.run(&["pg_ctl", "-D", &data, "-m", "fast", "-w", "stop"]);
    }

    /// The URL of a database on it (created here).
    pub async fn database(&self, name: &str) -> String {
        let admin = format!("postgres://postgres@127.0.0.1:{}/postgres", self.port);
        let conn = Database::connect(&admin).await.expect("connect");
        conn.execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        let _ = conn.close().await;
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = tool(&["pg_ctl", "-D", &data, "-m", "immediate", "stop"]).output();
    }
}

/// A PostgreSQL tool as the user it must run as (`postgres` when we are root).
fn tool(args: &[&str]) -> std::process::Command {
    if is_root() {
        let mut c = std::process::Command::new("runuser");
        c.args(["-u", "postgres", "--"]).args(args);
        c
    } else {
        let mut c = std::process::Command::new(args[0]);
        c.args(&args[1..]);
        c
    }
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
