//! Shared by the test binaries.

use std::io::Write;
use std::path::Path;

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
