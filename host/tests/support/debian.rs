//! Debian packages a test needs (Chromium, Prometheus), installed with apt when missing and
//! the tests run as root on a machine with apt (as on a fresh test machine), so the suite
//! needs no set-up step of its own.

use std::path::Path;
use std::process::Command;

/// Whether `binary --version` runs.
pub fn runs(binary: &str) -> bool {
    Command::new(binary)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Held while a test installs or removes a package: tests run in parallel, and apt and
/// dpkg allow one at a time.
pub fn package_lock() -> std::fs::File {
    let lock = std::fs::File::create(Path::new(env!("CARGO_TARGET_TMPDIR")).join("apt.lock"))
        .expect("lock file");
    lock.lock().expect("lock");
    lock
}

/// The first of `binaries` that runs, installing `package` once when none does.
pub fn command_from(binaries: &[&'static str], package: &str) -> Option<&'static str> {
    let find = || binaries.iter().copied().find(|b| runs(b));
    if let Some(b) = find() {
        return Some(b);
    }
    let _lock = package_lock();
    if let Some(b) = find() {
        return Some(b);
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = Command::new("apt-get").arg("--version").output().is_ok();
    if root && apt {
        eprintln!("installing {package} with apt-get for this test");
        let quiet = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !quiet(&["install", "-y", "-qq", package]) {
            quiet(&["update", "-qq"]);
            quiet(&["install", "-y", "-qq", package]);
        }
    }
    find()
}
