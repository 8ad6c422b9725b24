//! The property every fuzz target asserts, in one place so that the fuzz
//! targets and the test suite's randomized run check the same thing.

use crate::agui::{Emitter, Format};
use crate::run::{filter, Options, Stats};
use crate::source::{for_input, FromCli};

/// Translate `data` read as `from` and panic unless the output is
/// well-formed AG-UI (see [`crate::check`]) with at least one run.
pub fn translate_and_check(from: FromCli, data: &[u8]) {
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let mut tr = for_input(from).expect("every dialect has a translator");
    let mut out = Vec::new();
    let opts = Options {
        strict: false,
        quiet: true,
    };
    filter(
        data,
        "fuzz",
        tr.as_mut(),
        &mut em,
        &mut out,
        opts,
        &mut Stats::default(),
    )
    .expect("writing to memory cannot fail");
    if let Err(v) = crate::check::check_bytes(&out) {
        panic!(
            "ill-formed output for {from:?} input {:?}: {v:?}\n{}",
            String::from_utf8_lossy(data),
            String::from_utf8_lossy(&out)
        );
    }
}
