//! A short, deterministic mutation fuzzer that runs with `cargo test`: the
//! recordings, mutated in ways that matter for line-oriented JSON (bytes
//! flipped, lines dropped, repeated, swapped or spliced from another CLI's
//! stream, JSON tokens inserted, cuts anywhere), must all give well-formed
//! AG-UI. The coverage-guided targets in `fuzz/` check the same property at
//! length (`cargo fuzz run gemini`, see docs/testing.md).

use std::path::Path;

use agui_translate::dialect::FromCli;
use agui_translate::fuzzing::translate_and_check;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"null",
    b"\\u",
    b"\\ud83d",
    b"\\ude00",
    b"\\",
    b"\n",
    b"\"type\":",
    b"\"delta\":true",
    b"\"id\":",
    b"\"msg\":{",
    b"\"item\":{",
    b"\"index\":0",
    b"\"type\":\"result\"",
    b"\"type\":\"item.completed\"",
    b"\"type\":\"stream_event\"",
    b"\"type\":\"tool_use\"",
    b"\"type\":\"content_block_delta\"",
    b"1e999",
    b"-",
    b"\xff",
    b"\x00",
];

fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let others: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
    for _ in 0..=rng.below(4) {
        let n = lines.len();
        match rng.below(8) {
            0 if n > 1 => {
                lines.remove(rng.below(n));
            }
            1 => {
                let l = lines[rng.below(n)].clone();
                lines.insert(rng.below(n + 1), l);
            }
            2 if n > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                lines.swap(a, b);
            }
            3 => {
                let l = others[rng.below(others.len())].to_vec();
                lines.insert(rng.below(n + 1), l);
            }
            4 => {
                let l = &mut lines[rng.below(n)];
                let at = rng.below(l.len() + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                l.splice(at..at, t.iter().copied());
            }
            5 => {
                let l = &mut lines[rng.below(n)];
                if !l.is_empty() {
                    let at = rng.below(l.len());
                    l[at] ^= 1 << rng.below(8);
                }
            }
            6 => {
                let l = &mut lines[rng.below(n)];
                let at = rng.below(l.len() + 1);
                let end = (at + rng.below(16)).min(l.len());
                l.drain(at..end);
            }
            _ => {
                let keep = rng.below(n) + 1;
                lines.truncate(keep);
                let l = lines.last_mut().unwrap();
                let cut = rng.below(l.len() + 1);
                l.truncate(cut);
            }
        }
    }
    lines.join(&b'\n')
}

#[test]
fn mutated_recordings_give_well_formed_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut seeds: Vec<(FromCli, Vec<u8>)> = Vec::new();
    for dialect in agui_translate::dialect::Dialect::all() {
        let from = FromCli::Dialect(dialect);
        let mut dirs = vec![root.join(dialect.name())];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl")
                    && std::fs::metadata(&path).unwrap().len() < 64 * 1024
                {
                    seeds.push((from, std::fs::read(&path).unwrap()));
                }
            }
        }
    }
    let iterations: usize = std::env::var("AGUI_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..iterations {
        let (from, seed) = &seeds[rng.below(seeds.len())];
        let (_, other) = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, seed, other);
        translate_and_check(*from, &input);
        translate_and_check(FromCli::Auto, &input);
    }
}
