//! The filter loop: lines in, events out, and when to flush.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use crate::agui::{Emitter, EVENT_TYPES};
use crate::cli::{Args, CheckArgs, Command, FilterArgs, OutputArgs, StatsFormat};
use crate::lines::Lines;
use crate::source::{self, Translate};

/// Output is handed to stdout once this much is pending, even while more
/// input is already buffered (a bulk input is written in large batches).
const BATCH: usize = 64 * 1024;

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(Command::Run(run)) => crate::spawn::main(*run),
        Some(Command::Check(c)) => check(c),
        None => translate(args.filter),
    }
}

/// Translate a whole input held in memory, reporting nothing (for tests and
/// fuzzing).
pub fn translate_bytes(from: crate::source::FromCli, input: &[u8]) -> Vec<u8> {
    let mut em = Emitter::new(crate::agui::Format::Ndjson, None, None);
    let mut tr = source::for_input(from).expect("every dialect has a translator");
    let mut out = Vec::new();
    let opts = Options {
        strict: false,
        quiet: true,
    };
    filter(
        input,
        "input",
        tr.as_mut(),
        &mut em,
        &mut out,
        opts,
        &mut Stats::default(),
    )
    .expect("writing to memory cannot fail");
    out
}

/// `agui-translate check`.
fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let files = if args.files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        args.files
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut failed = false;
    for path in &files {
        let (name, rdr): (String, Box<dyn Read>) = if path.as_os_str() == "-" {
            ("<stdin>".into(), Box::new(io::stdin().lock()))
        } else {
            let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            (path.display().to_string(), Box::new(f))
        };
        match crate::check::check(rdr).with_context(|| format!("reading {name}"))? {
            Ok(s) => writeln!(out, "{name}: OK, {} events in {} runs", s.events, s.runs)?,
            Err(violations) => {
                failed = true;
                for v in &violations {
                    let at = if v.line == 0 {
                        "end".to_owned()
                    } else {
                        v.line.to_string()
                    };
                    let _ = writeln!(io::stderr(), "agui-translate: {name}:{at}: {}", v.message);
                }
                writeln!(out, "{name}: INVALID, {} problems", violations.len())?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// An emitter set up by the output options.
pub fn emitter(o: &OutputArgs) -> Emitter {
    let mut em = Emitter::new(o.format, o.thread_id.clone(), o.run_id.clone());
    em.set_tool_names(o.tool_names);
    em
}

fn translate(args: FilterArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut em = emitter(&args.output);
    // Fail on an unsupported dialect before reading anything.
    source::for_input(args.from)?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let files = if args.files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        args.files
    };
    let opts = Options {
        strict: args.strict,
        quiet: args.quiet,
    };
    let mut stats = Stats::default();
    for path in &files {
        let mut tr = source::for_input(args.from)?;
        let (name, rdr): (String, Box<dyn Read>) = if path.as_os_str() == "-" {
            ("<stdin>".into(), Box::new(io::stdin().lock()))
        } else {
            let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            (path.display().to_string(), Box::new(f))
        };
        filter(rdr, &name, tr.as_mut(), &mut em, &mut out, opts, &mut stats)?;
    }
    if let Some(format) = args.stats {
        let report = stats.report(&em, started.elapsed().as_secs_f64(), format);
        let _ = io::stderr().write_all(report.as_bytes());
    }
    Ok(if stats.bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// How lines are judged.
#[derive(Debug, Default, Clone, Copy)]
pub struct Options {
    /// Anything the translator does not know is an error, not only RAW.
    pub strict: bool,
    /// Report nothing on stderr (bad lines are still counted).
    pub quiet: bool,
}

/// What the inputs gave, for `--stats` and the exit status.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines that could not be translated (and, with `--strict`, lines
    /// holding something unknown).
    pub bad: u64,
    /// Unknown record types and shapes seen, with how often.
    pub unknown: BTreeMap<String, u64>,
}

impl Stats {
    /// The `--stats` report for everything read so far.
    pub fn report(&self, em: &Emitter, seconds: f64, format: StatsFormat) -> String {
        let events: Vec<(&str, u64)> = EVENT_TYPES
            .iter()
            .zip(em.counts())
            .filter(|(_, &n)| n > 0)
            .map(|(&t, &n)| (t, n))
            .collect();
        let runs = em.counts()[0];
        match format {
            StatsFormat::Json => {
                let value = serde_json::json!({
                    "lines": self.lines,
                    "bytesIn": self.bytes,
                    "badLines": self.bad,
                    "unknown": self.unknown,
                    "runs": runs,
                    "events": em.events(),
                    "eventsByType": events.iter().copied().collect::<BTreeMap<_, _>>(),
                    "bytesOut": em.bytes_out(),
                    "seconds": (seconds * 1e6).round() / 1e6,
                    "maxRssKiB": max_rss_kib(),
                });
                format!("{value}\n")
            }
            StatsFormat::Text => {
                let mut s = format!(
                    "agui-translate: {} lines ({} bytes) read in {:.3} s: {} bad, {} unknown; {} runs, {} events ({} bytes) written; peak memory {} KiB\n",
                    self.lines,
                    self.bytes,
                    seconds,
                    self.bad,
                    self.unknown.values().sum::<u64>(),
                    runs,
                    em.events(),
                    em.bytes_out(),
                    max_rss_kib()
                );
                for (t, n) in &events {
                    s.push_str(&format!("  {t:<26} {n}\n"));
                }
                for (what, n) in &self.unknown {
                    s.push_str(&format!("  unknown: {what} ({n})\n"));
                }
                s
            }
        }
    }
}

/// Translate one input stream to `out`. An event is handed to `out` and
/// flushed as soon as the next read could block, so a live pipe sees each
/// event at once; otherwise output is batched.
#[allow(clippy::too_many_arguments)]
pub fn filter(
    rdr: impl Read,
    name: &str,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
    opts: Options,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    let saw_input = pump(rdr, name, tr, em, out, opts, stats)?;
    settle(name, tr, em, out, saw_input, opts, stats)
}

/// The loop of [`filter`], up to the end of the input (nothing is settled
/// yet). Returns whether the input had any non-blank line.
#[allow(clippy::too_many_arguments)]
pub fn pump(
    rdr: impl Read,
    name: &str,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
    opts: Options,
    stats: &mut Stats,
) -> anyhow::Result<bool> {
    let mut lines = Lines::new(rdr);
    let mut saw_input = false;
    let mut lineno = 0;
    loop {
        let Some((line, terminated)) = lines
            .next_with_end()
            .with_context(|| format!("reading {name}"))?
        else {
            break;
        };
        lineno += 1;
        stats.lines += 1;
        stats.bytes += line.len() as u64 + u64::from(terminated);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        saw_input = true;
        if let Err(err) = tr.line(line, em) {
            stats.bad += 1;
            let cut = if terminated {
                ""
            } else {
                " (the input ends inside this line: it was cut short)"
            };
            if !opts.quiet {
                report(name, lineno, &err.to_string(), line, cut);
            }
            source::passthrough(em, tr.source(), lineno, line);
        }
        for what in em.take_unknown() {
            if opts.strict {
                stats.bad += 1;
            }
            if opts.strict && !opts.quiet {
                report(
                    name,
                    lineno,
                    &format!("unknown {what} (--strict)"),
                    line,
                    "",
                );
            }
            *stats.unknown.entry(what).or_default() += 1;
        }
        let more = lines.has_buffered_line();
        if !more || em.output().len() >= BATCH {
            em.drain_to(out).context("writing stdout")?;
            if !more {
                out.flush().context("writing stdout")?;
            }
        }
    }
    Ok(saw_input)
}

/// The end of an input: the translator settles what the input left open,
/// then every run is ended and the output flushed.
pub fn settle(
    name: &str,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    out: &mut dyn Write,
    saw_input: bool,
    opts: Options,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    tr.finish(em);
    if saw_input && tr.source() == source::UNDETECTED {
        stats.bad += 1;
    }
    if saw_input && tr.source() == source::UNDETECTED && !opts.quiet {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: {name}: could not tell which CLI wrote this input (no record of Gemini CLI, Codex CLI or Claude Code was seen); name it with --from"
        );
    }
    em.end_of_input(saw_input);
    em.drain_to(out).context("writing stdout")?;
    out.flush().context("writing stdout")?;
    Ok(())
}

/// This process's peak resident memory, in KiB: `VmHWM` (getrusage's
/// figure can include the memory of the process that started us, from
/// before exec).
pub fn max_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(kib) = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    {
        return kib;
    }
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_maxrss.max(0) as u64
}

fn report(name: &str, lineno: u64, err: &str, line: &[u8], cut: &str) {
    let _ = writeln!(
        io::stderr(),
        "agui-translate: {name}:{lineno}: {err}{cut}: {}",
        crate::json::preview(line)
    );
}
