//! End to end: the Debian package. `packaging/build-deb` packs the test build of `tocsin`;
//! `dpkg -i` installs it on this machine (as root, as a test machine runs); the binary is
//! started the way its systemd unit starts it (its user and group, `CAP_NET_RAW` as an
//! ambient capability, its working directory and command line, read from the unit file)
//! and answers `/readyz`, keeping its state in /var/lib/tocsin. `dpkg --purge` removes it.
//!
//! Skipped (with a message) where the machine cannot install packages: not root, or no
//! dpkg.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::free_port;

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The value of `key=` in the unit file's lines.
fn unit_value<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("the unit has no {key}="))
}

/// Removes the package however the test ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "tocsin"]).output();
    }
}

#[test]
fn the_deb_installs_and_starts_as_its_unit_would() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let dpkg = Command::new("dpkg").arg("--version").output().is_ok();
    if !root || !dpkg {
        eprintln!("SKIPPED: installing a package needs root and dpkg");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tempfile::tempdir().expect("tempdir");
    let (ok, built) = run(Command::new(repo.join("packaging/build-deb"))
        .arg(env!("CARGO_BIN_EXE_tocsin"))
        .arg(out.path()));
    assert!(ok, "build-deb: {built}");
    let deb = built.trim().lines().last().expect("deb path").to_string();

    let (ok, contents) = run(Command::new("dpkg-deb").args(["--contents", &deb]));
    assert!(ok, "{contents}");
    for file in [
        "./usr/bin/tocsin",
        "./lib/systemd/system/tocsin.service",
        "./etc/tocsin/tocsin.toml",
        "./usr/share/man/man1/tocsin.1.gz",
        "./usr/share/man/man1/tocsin-serve.1.gz",
        "./usr/share/bash-completion/completions/tocsin",
    ] {
        assert!(contents.contains(file), "{file} missing:\n{contents}");
    }

    // Other tests may be installing packages (Chromium, Prometheus) meanwhile.
    let _packages = support::debian::package_lock();
    let _ = Command::new("dpkg").args(["--purge", "tocsin"]).output();
    let (ok, installed) = run(Command::new("dpkg").args(["-i", &deb]));
    let _cleanup = Installed;
    assert!(ok, "dpkg -i: {installed}");
    let (ok, user) = run(Command::new("id").arg("tocsin"));
    assert!(ok, "the package creates its user: {user}");
    let state = std::fs::metadata("/var/lib/tocsin").expect("/var/lib/tocsin");
    assert!(state.is_dir());

    // Start it as the unit does.
    let unit = std::fs::read_to_string("/lib/systemd/system/tocsin.service").expect("unit");
    assert_eq!(unit_value(&unit, "User"), "tocsin");
    assert_eq!(unit_value(&unit, "AmbientCapabilities"), "CAP_NET_RAW");
    let exec: Vec<&str> = unit_value(&unit, "ExecStart").split_whitespace().collect();
    let port = free_port();
    let mut server = Command::new("setpriv")
        .args([
            "--reuid=tocsin",
            "--regid=tocsin",
            "--init-groups",
            "--inh-caps=+net_raw",
            "--ambient-caps=+net_raw",
            "--",
        ])
        .args(&exec)
        .current_dir(unit_value(&unit, "WorkingDirectory"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        // As /etc/default/tocsin would: another port than the default, which may be taken.
        .env("TOCSIN_LISTEN", format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the installed tocsin");
    tocsin::crypto::install_provider();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut ready = false;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = server.try_wait() {
            let mut log = String::new();
            if let Some(mut e) = server.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut log);
            }
            panic!("the installed tocsin exited ({status}):\n{log}");
        }
        if reqwest::blocking::get(format!("http://127.0.0.1:{port}/readyz"))
            .is_ok_and(|r| r.status().is_success())
        {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let _ = server.wait();
    assert!(ready, "/readyz never answered 200");
    // Its state is where the package says, owned by its user.
    let db = Path::new("/var/lib/tocsin/tocsin.db");
    assert!(db.is_file(), "the database is in /var/lib/tocsin");
    let (_, owner) = run(Command::new("stat").args(["-c", "%U", "/var/lib/tocsin/tocsin.db"]));
    assert_eq!(owner.trim(), "tocsin");

    let (ok, purged) = run(Command::new("dpkg").args(["--purge", "tocsin"]));
    assert!(ok, "dpkg --purge: {purged}");
    assert!(!Path::new("/usr/bin/tocsin").exists());
    assert!(
        !Path::new("/var/lib/tocsin").exists(),
        "purge removes the state"
    );
}
