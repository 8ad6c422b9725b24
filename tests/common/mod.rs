//! Shared by the test binaries (each uses a part of it).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The `testdata/` folder.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
}

/// Every `*.jsonl` file below `dir`, sorted.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// One JSON value per line.
pub fn values(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The JSON-RPC messages a client sent are the recorded client's;
/// `initialize` and the thread request carry the client's own name and
/// options, so only their method and id are compared.
pub fn assert_same_messages(
    name: &str,
    sent: &[serde_json::Value],
    recorded: &[serde_json::Value],
) {
    assert_eq!(sent.len(), recorded.len(), "{name}: {sent:#?}");
    for (s, r) in sent.iter().zip(recorded) {
        match r["method"].as_str() {
            Some("initialize" | "thread/start") => {
                assert_eq!((&s["id"], &s["method"]), (&r["id"], &r["method"]), "{name}")
            }
            _ => assert_eq!(s, r, "{name}"),
        }
    }
}

/// Append a verdict on `path` (shown relative to the crate) to the file
/// named by `$AGUI_RESULTS`, when it is set: `KIND<TAB>PATH<TAB>ok|fail`,
/// one line each. `scripts/matrix.py` turns these into the
/// compatibility matrix in docs/compatibility.md.
pub fn report_verdicts<'a>(kind: &str, verdicts: impl IntoIterator<Item = (&'a Path, bool)>) {
    let Some(file) = std::env::var_os("AGUI_RESULTS") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    for (path, ok) in verdicts {
        let rel = path.strip_prefix(root).unwrap_or(path).display();
        text += &format!("{kind}\t{rel}\t{}\n", if ok { "ok" } else { "fail" });
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("AGUI_RESULTS is writable");
}
