//! The property every fuzz target asserts, in one place so that the fuzz
//! targets and the test suite's randomized run check the same thing.

use crate::dialect::FromCli;
use crate::run::translate_bytes;

/// Translate `data` read as `from` and panic unless the output is
/// well-formed AG-UI (see [`crate::check`]) with at least one run.
pub fn translate_and_check(from: FromCli, data: &[u8]) {
    let out = translate_bytes(from, data);
    if let Err(v) = crate::check::check_bytes(&out) {
        panic!(
            "ill-formed output for {from:?} input {:?}: {v:?}\n{}",
            String::from_utf8_lossy(data),
            String::from_utf8_lossy(&out)
        );
    }
}
