//! serde_json against simd-json on real stream lines, to choose the parser.
//!
//!     cargo bench --features simd-json --bench parse -- FILE.jsonl [FILE.jsonl ...]
//!
//! (inputs from `scripts/bench/gen.py`). For each file it parses every line
//! into the same borrowed record (the `type` tag, a timestamp and one string
//! field decoded, everything else validated and skipped) with both parsers and
//! prints MB/s. simd-json parses in place, so each line is first copied into
//! a scratch buffer, as the filter's own line buffer would be used.

use std::borrow::Cow;
use std::time::Instant;

use serde::Deserialize;

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
}

fn main() {
    let files: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if files.is_empty() {
        eprintln!("usage: cargo bench --bench parse -- FILE.jsonl...");
        return;
    }
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let lines: Vec<&[u8]> = data
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        let mut best = [f64::MAX; 2];
        let mut checksum = [0usize; 2];
        let mut scratch = Vec::new();
        let mut buffers = simd_json::Buffers::default();
        for _ in 0..3 {
            let t = Instant::now();
            let mut n = 0;
            for line in &lines {
                if let Ok(r) = serde_json::from_slice::<Record>(line) {
                    n += r.kind.map_or(0, |k| k.len())
                        + r.timestamp.map_or(0, |k| k.len())
                        + r.content.map_or(0, |c| c.len());
                }
            }
            best[0] = best[0].min(t.elapsed().as_secs_f64());
            checksum[0] = n;
            let t = Instant::now();
            let mut n = 0;
            for line in &lines {
                scratch.clear();
                scratch.extend_from_slice(line);
                if let Ok(r) =
                    simd_json::serde::from_slice_with_buffers::<Record>(&mut scratch, &mut buffers)
                {
                    n += r.kind.map_or(0, |k| k.len())
                        + r.timestamp.map_or(0, |k| k.len())
                        + r.content.map_or(0, |c| c.len());
                }
            }
            best[1] = best[1].min(t.elapsed().as_secs_f64());
            checksum[1] = n;
        }
        let mb = data.len() as f64 / 1e6;
        println!(
            "{file}: {} lines, mean {} bytes/line: serde_json {:.0} MB/s, simd-json {:.0} MB/s (same result: {})",
            lines.len(),
            data.len() / lines.len().max(1),
            mb / best[0],
            mb / best[1],
            checksum[0] == checksum[1]
        );
    }
}
