//! The filter loop: lines in, events out, and when to flush.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::agui::Emitter;
use crate::cli::Args;
use crate::lines::Lines;
use crate::source::{self, LineError, Translate};

/// Output is handed to stdout once this much is pending, even while more
/// input is already buffered (a bulk input is written in large batches).
const BATCH: usize = 64 * 1024;

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let mut em = Emitter::new(args.format, args.thread_id, args.run_id);
    // Fail on an unsupported dialect before reading anything.
    source::for_dialect(args.from)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let files = if args.files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        args.files
    };
    let mut bad = 0;
    for path in &files {
        let mut tr = source::for_dialect(args.from)?;
        let (name, rdr): (String, Box<dyn Read>) = if path.as_os_str() == "-" {
            ("<stdin>".into(), Box::new(io::stdin().lock()))
        } else {
            let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            (path.display().to_string(), Box::new(f))
        };
        let stats = filter(rdr, &name, args.from.name(), tr.as_mut(), &mut em, &mut out)?;
        bad += stats.bad;
    }
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What one input gave.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub lines: u64,
    pub bad: u64,
}

/// Translate one input stream to `out`. An event is handed to `out` and
/// flushed as soon as the next read could block, so a live pipe sees each
/// event at once; otherwise output is batched.
pub fn filter(
    rdr: impl Read,
    name: &str,
    source: &str,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
) -> anyhow::Result<Stats> {
    let mut lines = Lines::new(rdr);
    let mut stats = Stats::default();
    let mut saw_input = false;
    loop {
        let Some((line, terminated)) = lines
            .next_with_end()
            .with_context(|| format!("reading {name}"))?
        else {
            break;
        };
        stats.lines += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        saw_input = true;
        if let Err(err) = tr.line(line, em) {
            stats.bad += 1;
            let cut = if !terminated {
                " (the input ends inside this line: it was cut short)"
            } else {
                ""
            };
            report(name, stats.lines, &err, line, cut);
            source::passthrough(em, source, stats.lines, line);
        }
        let more = lines.has_buffered_line();
        if !more || em.output().len() >= BATCH {
            em.drain_to(out).context("writing stdout")?;
            if !more {
                out.flush().context("writing stdout")?;
            }
        }
    }
    tr.finish(em);
    em.end_of_input(saw_input);
    em.drain_to(out).context("writing stdout")?;
    out.flush().context("writing stdout")?;
    Ok(stats)
}

fn report(name: &str, lineno: u64, err: &LineError, line: &[u8], cut: &str) {
    let _ = writeln!(
        io::stderr(),
        "agui-translate: {name}:{lineno}: {err}{cut}: {}",
        crate::json::preview(line)
    );
}
