//! Lists the migrations: every `src/mNNNN_*.rs`, in the order of their names, so a schema
//! change is one new file and cannot be left out of the list.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("src");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("migrations/src")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".rs")?;
            let numbered = stem.len() > 6
                && stem.starts_with('m')
                && stem[1..5].bytes().all(|b| b.is_ascii_digit())
                && stem.as_bytes()[5] == b'_';
            numbered.then(|| stem.to_string())
        })
        .collect();
    names.sort();
    let mut numbers: Vec<&str> = names.iter().map(|n| &n[1..5]).collect();
    numbers.dedup();
    assert_eq!(
        numbers.len(),
        names.len(),
        "two migrations share a number: {names:?}"
    );

    let mut code = String::new();
    for name in &names {
        let path = dir.join(format!("{name}.rs"));
        writeln!(
            code,
            "#[path = {:?}]\nmod {name};",
            path.display().to_string()
        )
        .expect("write");
    }
    code.push_str("\n/// Every migration, oldest first.\nfn listed() -> Vec<Box<dyn MigrationTrait>> {\n    vec![\n");
    for name in &names {
        writeln!(code, "        Box::new({name}::Migration),").expect("write");
    }
    code.push_str("    ]\n}\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("migrations.rs");
    std::fs::write(out, code).expect("write the list of migrations");
}
