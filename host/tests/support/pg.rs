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
