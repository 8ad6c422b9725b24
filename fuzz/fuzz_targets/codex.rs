//! Any input, read as a codex stream, gives well-formed AG-UI.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    agui_translate::fuzzing::translate_and_check(
        agui_translate::dialect::FromCli::named("codex").unwrap(),
        data,
    );
});
