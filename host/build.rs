//! Builds the built-in plugins (and the test guests) as WebAssembly components, so that
//! `cargo build` of the server is all a user runs. The nested cargo uses its own target
//! directory: sharing the outer one would wait forever on cargo's build lock.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

// The server's own engine settings and limits, so the built-in plugins compiled here load
// into the server's engine as they are (see `compile_ahead`).
#[allow(dead_code)]
#[path = "src/plugins/engine_config.rs"]
mod engine_config;
#[allow(dead_code)]
#[path = "src/plugins/limits.rs"]
mod limits;

const TARGET: &str = "wasm32-wasip2";

/// A crate that builds a component: (crate name, artifact name).
type Crate = (String, String);

/// The crates of `folder` (each a subfolder with a Cargo.toml) that build a component
/// (`crate-type` has `cdylib`), by folder name. Under `plugins/` these are the built-in
/// plugins, embedded in the binary: adding a built-in is adding its folder. The others
/// there are libraries the plugins share.
fn components_in(folder: &Path) -> Vec<Crate> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("read {}: {e}", folder.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|dir| {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
            let component = manifest
                .lines()
                .any(|l| l.trim_start().starts_with("crate-type") && l.contains("\"cdylib\""));
            let name = manifest
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = \""))
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{} names no package", dir.display()))
                .to_string();
            component.then(|| {
                let artifact = name.replace('-', "_");
                (name, artifact)
            })
        })
        .collect()
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    for watched in [
        "wit",
        "sdk",
        "plugins",
        "tests/guests",
        "tests/fixtures/wit",
        "examples/plugins",
        "Cargo.lock",
        "host/src/plugins/engine_config.rs",
        "host/src/plugins/limits.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    ensure_target();

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = root.join("target").join("wasm-plugins");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--release", "--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        // Small, fast guests; only this nested build sees these settings.
        .args(["--config", "profile.release.opt-level=\"s\""])
        .args(["--config", "profile.release.lto=true"])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.panic=\"abort\""]);
    let builtins = components_in(&root.join("plugins"));
    // Test plugins (misbehaving ones for the runtime's limit tests, ones from "outside"
    // for grants and contract versions), and the Rust example plugin, so the suite loads
    // it as a user would. Not embedded.
    let mut test_guests = components_in(&root.join("tests/guests"));
    test_guests.extend(components_in(&root.join("examples/plugins")));
    for (krate, _) in builtins.iter().chain(&test_guests) {
        cmd.args(["-p", krate]);
    }
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTFLAGS",
        "TARGET",
        "HOST",
        "PROFILE",
        "OUT_DIR",
        "OPT_LEVEL",
        "DEBUG",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo for the plugins: {e}"));
    if !status.success() {
        panic!("building the plugins for {TARGET} failed (see the cargo output above)");
    }

    let artifacts = target_dir.join(TARGET).join("release");
    let components: Vec<PathBuf> = builtins
        .iter()
        .map(|(_, artifact)| copy_artifact(&artifacts, artifact, &out_dir))
        .collect();
    let compiled = compile_ahead(&components);
    let mut listing = String::from(
        "/// Built-in plugins: (file name, component bytes, the component compiled for this\n/// machine by the build, or empty when the build compiled none).\npub const BUILTIN_PLUGINS: &[(&str, &[u8], &[u8])] = &[\n",
    );
    for (i, (_, artifact)) in builtins.iter().enumerate() {
        let ahead = match compiled.get(i) {
            Some(path) => format!("include_bytes!({:?})", path.display().to_string()),
            None => "&[]".to_string(),
        };
        writeln!(
            listing,
            "    ({artifact:?}, include_bytes!({:?}), {ahead}),",
            components[i].display().to_string()
        )
        .expect("write to a String");
    }
    listing.push_str("];\n");
    std::fs::write(out_dir.join("builtin_plugins.rs"), listing).expect("write builtin_plugins.rs");

    let guests = out_dir.join("test-guests");
    std::fs::create_dir_all(&guests).expect("create the test guest folder");
    for (_, artifact) in &test_guests {
        copy_artifact(&artifacts, artifact, &guests);
    }
    println!(
        "cargo:rustc-env=TOCSIN_TEST_GUESTS_DIR={}",
        guests.display()
    );
}

/// Compile the built-in plugins with the server's own engine settings, so a fresh server
/// loads them in milliseconds instead of compiling them at its first start. Only for a
/// binary of this machine's own target: the artifacts are for this CPU and this target,
/// and wasmtime refuses them anywhere else (the server then compiles the plugin itself,
/// as without them; `tocsin plugin precompile` does it ahead of the first start).
fn compile_ahead(components: &[PathBuf]) -> Vec<PathBuf> {
    if env::var("HOST").is_err() || env::var("HOST").ok() != env::var("TARGET").ok() {
        return Vec::new();
    }
    let engine = match engine_config::engine(false) {
        Ok((engine, _)) => engine,
        Err(e) => {
            println!("cargo:warning=plugins not compiled ahead of time (no engine: {e})");
            return Vec::new();
        }
    };
    std::thread::scope(|scope| {
        let jobs: Vec<_> = components
            .iter()
            .map(|component| {
                let engine = &engine;
                scope.spawn(move || {
                    let bytes = std::fs::read(component).expect("read a built plugin");
                    let compiled = engine
                        .precompile_component(&bytes)
                        .unwrap_or_else(|e| panic!("compile {}: {e:#}", component.display()));
                    let path = component.with_extension("cwasm");
                    std::fs::write(&path, compiled)
                        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
                    path
                })
            })
            .collect();
        jobs.into_iter()
            .map(|job| job.join().expect("a compile thread panicked"))
            .collect()
    })
}

fn copy_artifact(from: &Path, artifact: &str, to: &Path) -> PathBuf {
    let source = from.join(format!("{artifact}.wasm"));
    let dest = to.join(format!("{artifact}.wasm"));
    std::fs::copy(&source, &dest)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", source.display(), dest.display()));
    dest
}

/// Installs the wasm32-wasip2 standard library through rustup when it is missing.
fn ensure_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot
        .as_ref()
        .is_some_and(|s| s.join("lib/rustlib").join(TARGET).is_dir());
    if installed {
        return;
    }
    println!(
        "cargo:warning=installing the {TARGET} target with rustup (needed to build the plugins)"
    );
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status();
    match added {
        Ok(s) if s.success() => {}
        _ => panic!(
            "the {TARGET} target is missing and could not be installed; run `rustup target add {TARGET}` and build again"
        ),
    }
}
