#!/usr/bin/env bash
# Coverage-guided fuzzing of every translator with cargo-fuzz (libFuzzer),
# seeded with the recordings in testdata/. Each target asserts that any
# input gives well-formed AG-UI (src/fuzzing.rs).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s, all targets
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). It uses nightly-only compiler
# flags; on a stable toolchain RUSTC_BOOTSTRAP=1 allows them. Crashes are
# saved in fuzz/artifacts/TARGET/ and can be replayed with
# `cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-…`.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gemini codex claude codex_app_server auto)
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  corpus=fuzz/corpus/$t
  mkdir -p "$corpus"
  case $t in
    auto) seeds=(testdata/*/*/*.jsonl) ;;
    codex_app_server) seeds=(testdata/codex-app-server/*/*.jsonl) ;;
    *) seeds=(testdata/"$t"/*/*.jsonl) ;;
  esac
  for f in "${seeds[@]}"; do
    # Seeds up to 64 KiB (libFuzzer's default maximum input length).
    if [ "$(wc -c < "$f")" -le 65536 ]; then cp "$f" "$corpus/$(basename "$(dirname "$f")")-$(basename "$f")"; fi
  done
  echo "== $t: ${secs}s"
  cargo fuzz run "$t" "$corpus" -- -max_total_time="$secs" -max_len=65536 2>&1 | grep -E "^(#[0-9]+ +DONE|Done|==[0-9]+== ERROR|SUMMARY|stat::)" || true
done
