//! Tocsin's database schema, as an ordered list of migrations that run on SQLite and
//! PostgreSQL alike. A released migration never changes; a schema change is a new file.

pub use sea_orm_migration::MigratorTrait;
use sea_orm_migration::prelude::*;

mod m0001_initial;
mod m0002_incidents;
mod m0003_certificate_notices;
mod m0004_members;
mod m0005_status_pages;
mod m0006_cluster;
mod m0007_confirmations;
mod m0008_retention;
mod m0009_accounts;
mod m0010_monitor_tags;
mod m0011_alerting;
mod m0012_maintenance;
mod m0013_grouping;
mod m0014_flapping;
mod m0015_status_updates;
mod m0016_uptime_by_day;
mod m0017_managed_objects;
mod m0018_monitor_counts;
mod m0019_cheap_claims;
mod m0020_uptime_day_pages;
mod m0021_slot_claims;
mod m0022_monitor_health;
mod m0023_key_owners;
mod m0024_subscriber_secrets;
mod m0025_invitation_inviters;

/// Every migration, oldest first.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m0001_initial::Migration),
            Box::new(m0002_incidents::Migration),
            Box::new(m0003_certificate_notices::Migration),
            Box::new(m0004_members::Migration),
            Box::new(m0005_status_pages::Migration),
            Box::new(m0006_cluster::Migration),
            Box::new(m0007_confirmations::Migration),
            Box::new(m0008_retention::Migration),
            Box::new(m0009_accounts::Migration),
            Box::new(m0010_monitor_tags::Migration),
            Box::new(m0011_alerting::Migration),
            Box::new(m0012_maintenance::Migration),
            Box::new(m0013_grouping::Migration),
            Box::new(m0014_flapping::Migration),
            Box::new(m0015_status_updates::Migration),
            Box::new(m0016_uptime_by_day::Migration),
            Box::new(m0017_managed_objects::Migration),
            Box::new(m0018_monitor_counts::Migration),
            Box::new(m0019_cheap_claims::Migration),
            Box::new(m0020_uptime_day_pages::Migration),
            Box::new(m0021_slot_claims::Migration),
            Box::new(m0022_monitor_health::Migration),
            Box::new(m0023_key_owners::Migration),
            Box::new(m0024_subscriber_secrets::Migration),
            Box::new(m0025_invitation_inviters::Migration),
        ]
    }
}
