//! The built-in plugins some of the server's own features are made of: a status page's
//! subscribers (whose subscriptions are of kind `email` or `webhook`) are reached through
//! the `email` and `webhook` channels, the server's Telegram bot (its buttons, its
//! settings) speaks through the `telegram` channel, and the dashboard's forms start on
//! `http` and `webhook`. How a channel behaves on the alert path (acknowledgements, pauses,
//! grouping, signing, https) is never decided by its name: it is what the plugin declares
//! ([`super::abilities`]); the test below holds the engine, the outbox and the channel
//! input to that.

/// The e-mail channel: a status page's e-mail subscribers are reached through it.
pub const EMAIL: &str = "email";
/// The webhook channel: a status page's webhook subscribers are reached through it.
pub const WEBHOOK: &str = "webhook";
/// The Telegram channel: the server's own bot sends through it and hears its buttons.
pub const TELEGRAM: &str = "telegram";
/// The HTTP monitor: the dashboard's form for a new monitor starts on it.
pub const HTTP: &str = "http";

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read the source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The built-in channel plugins' names, from the plugins' folders (each one that builds
    /// a component and says `impl Channel`).
    fn channel_names(root: &Path) -> Vec<String> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(root.join("plugins")).expect("plugins/") {
            let dir = entry.expect("entry").path();
            let Ok(lib) = std::fs::read_to_string(dir.join("src/lib.rs")) else {
                continue;
            };
            if !lib.contains("impl Channel for") {
                continue;
            }
            let name = lib
                .split("name: \"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .expect("a channel plugin names itself in info()");
            names.push(name.to_string());
        }
        names
    }

    #[test]
    fn the_alert_path_names_no_channel_plugin() {
        let host = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = host.parent().expect("the workspace");
        let names = channel_names(root);
        assert!(names.len() >= 15, "{names:?}");
        let src = host.join("src");
        let mut files = Vec::new();
        for dir in ["engine", "outbox"] {
            sources(&src.join(dir), &mut files);
        }
        files.push(src.join("api/channel_input.rs"));
        // The one place of the alert path that names a built-in by its constant: a status
        // page's webhook subscriber is reached through the webhook channel.
        let subscribers = src.join("outbox/subscribers.rs");
        let mut found = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read a source file");
            // The code before its tests: a test may well build a `webhook` target.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                let named = names
                    .iter()
                    .any(|name| line.contains(&format!("\"{name}\"")))
                    || (line.contains("builtin::") && *file != subscribers);
                if named {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "the alert path decides by what a plugin declares, not by its name:\n{}",
            found.join("\n")
        );
    }
}
