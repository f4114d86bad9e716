//! Debian's Chromium for browser tests, installed with apt when missing (as root on a
//! fresh test machine), and playwright-core from npm to drive it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium, installed from the distribution's packages when missing.
pub fn chromium() -> Option<&'static str> {
    super::debian::command_from(
        &["chromium", "chromium-browser", "google-chrome"],
        "chromium",
    )
}

/// The full path of Chromium, for drivers that want an executable path; panics when it
/// is missing and cannot be installed.
pub fn chromium_path() -> String {
    let name = chromium().expect("Chromium is needed and could not be installed");
    let which = Command::new("which").arg(name).output().expect("which");
    String::from_utf8_lossy(&which.stdout).trim().to_string()
}

/// `playwright-core` and `axe-core` installed once per target directory; returns the
/// directory whose `node_modules` holds them.
pub fn playwright() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("playwright-core");
    std::fs::create_dir_all(&dir).expect("dir");
    let lock = std::fs::File::create(dir.join(".lock")).expect("lock file");
    lock.lock().expect("lock");
    if !dir
        .join("node_modules/playwright-core/package.json")
        .is_file()
        || !dir.join("node_modules/axe-core/axe.min.js").is_file()
    {
        std::fs::create_dir_all(&dir).expect("dir");
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .args(["playwright-core@1", "axe-core@4"])
            .status()
            .expect("npm (Node.js) is needed for browser tests");
        assert!(status.success(), "npm install playwright-core failed");
    }
    dir
}
