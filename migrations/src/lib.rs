//! Tocsin's database schema, as an ordered list of migrations that run on SQLite and
//! PostgreSQL alike. A released migration never changes; a schema change is a new file
//! `src/mNNNN_name.rs`, which the build adds to the list.

pub use sea_orm_migration::MigratorTrait;
use sea_orm_migration::prelude::*;

// `mod mNNNN_name;` for every `src/mNNNN_name.rs` and `listed()`, oldest first (see
// `build.rs`): a new migration is a new file, nothing else.
include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// Every migration, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        listed()
    }
}
