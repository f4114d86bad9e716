//! The end-to-end tests that start real servers, in one test binary: one build and one
//! link for all of them, and their tests run side by side (most of their time is spent
//! waiting on servers, timers and sinks). Each module is one area; run one area with
//! `cargo test -p tocsin --test e2e e2e_http::`. Tests that measure CPU or load the
//! machine on purpose (overload, fairness) keep binaries of their own.

mod support;

mod e2e_abilities;
mod e2e_access;
mod e2e_accounts;
mod e2e_action_links;
mod e2e_api;
mod e2e_apply;
mod e2e_backup;
mod e2e_badges;
mod e2e_bodies;
mod e2e_channel_catalogue;
mod e2e_check_export;
mod e2e_cluster;
mod e2e_dashboard;
mod e2e_dashboard_browser;
mod e2e_database_outage;
mod e2e_degraded;
mod e2e_disk_full;
mod e2e_doctor;
mod e2e_flapping;
mod e2e_grants;
mod e2e_grouping;
mod e2e_heartbeats;
mod e2e_holds;
mod e2e_http;
mod e2e_import;
mod e2e_incidents;
mod e2e_live;
mod e2e_maintenance;
mod e2e_maintenance_notices;
mod e2e_metrics;
mod e2e_monitor_catalogue;
mod e2e_package;
mod e2e_ping_ssl;
mod e2e_pipeline;
mod e2e_plugin_secrets;
mod e2e_plugin_versions;
mod e2e_polyglot;
mod e2e_probes;
mod e2e_quotas;
mod e2e_regions;
mod e2e_relays_down;
mod e2e_reminders;
mod e2e_reports;
mod e2e_retries;
mod e2e_review;
mod e2e_secrets;
mod e2e_slow_clients;
mod e2e_sso;
mod e2e_status_page;
mod e2e_status_updates;
mod e2e_subscribe_security;
mod e2e_webhook_receivers;
