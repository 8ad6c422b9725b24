//! The filter loop: lines in, events out, and when to flush.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;

use anyhow::Context;

use crate::agui::{Emitter, EVENT_TYPES};
use crate::base::lines::Lines;
use crate::dialect::{self, Dialect};
use crate::source::{self, Translate};

/// Output is handed to stdout once this much is pending, even while more
/// input is already buffered (a bulk input is written in large batches).
const BATCH: usize = 64 * 1024;

/// Translate a whole input held in memory, reporting nothing (for tests and
/// fuzzing).
pub fn translate_bytes(from: crate::dialect::FromCli, input: &[u8]) -> Vec<u8> {
    let mut em = Emitter::new(crate::agui::Format::Ndjson, None, None);
    let mut tr = dialect::for_input(from).expect("every dialect has a translator");
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

/// What [`translate_bytes`] gives for `input` read as each of `froms`
/// and cut at each of `cuts` (in increasing order), handed to `each` with
/// the cut and the reading, in one pass: the whole lines before a cut are
/// translated once, and the rest of the cut (the part of a line it ends
/// in, and the end of the input) from a copy of the translator and the
/// emitter taken there. For the reliability sweep, which cuts every
/// recording at thousands of places.
///
/// `each` also gets how much of the output the whole lines wrote: that
/// beginning of one reading's output only grows from one cut to the next
/// (each cut's output begins with the one before it), but where a cut
/// goes its own way and it is 0.
pub fn translate_cuts(
    froms: &[crate::dialect::FromCli],
    input: &[u8],
    cuts: &[usize],
    mut each: impl FnMut(usize, crate::dialect::FromCli, &[u8], usize),
) {
    let opts = Options {
        strict: false,
        quiet: true,
    };
    /// One reading of the input, up to the last whole line before a cut.
    struct Reading<'a> {
        from: crate::dialect::FromCli,
        tr: Box<dyn Translate>,
        em: Emitter,
        stats: Stats,
        at: Position,
        lines: Lines<&'a [u8]>,
        out: Vec<u8>,
    }
    let mut readings: Vec<Reading> = froms
        .iter()
        .map(|&from| Reading {
            from,
            tr: dialect::for_input(from).expect("every dialect has a translator"),
            em: Emitter::new(crate::agui::Format::Ndjson, None, None),
            stats: Stats::default(),
            at: Position::default(),
            lines: Lines::new(input),
            out: Vec::new(),
        })
        .collect();
    // The input before `done` is whole lines, translated.
    let mut done = 0;
    let mut last = 0;
    for &cut in cuts {
        assert!(last <= cut && cut <= input.len(), "cuts in order");
        last = cut;
        while let Some(nl) = memchr::memchr(b'\n', &input[done..cut]) {
            for r in &mut readings {
                let (line, _) = r
                    .lines
                    .next_with_end()
                    .expect("reading memory cannot fail")
                    .expect("a line ends here");
                take_line(
                    line,
                    true,
                    &mut r.at,
                    "input",
                    r.tr.as_mut(),
                    &mut r.em,
                    opts,
                    &mut r.stats,
                );
                r.em.drain_to(&mut r.out)
                    .expect("writing to memory cannot fail");
            }
            done += nl + 1;
        }
        let rest = &input[done..cut];
        for r in &readings {
            if done > 0 && rest.starts_with(b"\xEF\xBB\xBF") {
                // A fresh reader would take these bytes for a byte order mark.
                each(cut, r.from, &translate_bytes(r.from, &input[..cut]), 0);
                continue;
            }
            let (mut tr, mut em, mut stats, mut at) =
                (r.tr.fork(), r.em.clone(), r.stats.clone(), r.at);
            let mut out = r.out.clone();
            let mut lines = Lines::new(rest);
            while let Some((line, terminated)) =
                lines.next_with_end().expect("reading memory cannot fail")
            {
                take_line(
                    line,
                    terminated,
                    &mut at,
                    "input",
                    tr.as_mut(),
                    &mut em,
                    opts,
                    &mut stats,
                );
            }
            settle(
                "input",
                tr.as_mut(),
                &mut em,
                &mut out,
                at.saw_input,
                opts,
                &mut stats,
            )
            .expect("writing to memory cannot fail");
            each(cut, r.from, &out, r.out.len());
        }
    }
}

/// With `--from CLI`: whether the input is that CLI's, told by the records
/// that only one CLI writes ([`crate::dialect::classify`]) until the first
/// one of the named CLI.
#[derive(Debug, Clone, Copy)]
pub struct Looks {
    named: Dialect,
    /// A record only the named CLI writes was seen.
    own: bool,
    /// The first record only another CLI writes.
    other: Option<Dialect>,
}

impl Looks {
    pub fn new(named: Dialect) -> Self {
        Looks {
            named,
            own: false,
            other: None,
        }
    }

    fn line(&mut self, line: &[u8]) {
        if self.own {
            return;
        }
        match crate::dialect::classify(line) {
            Some(d) if d == self.named => self.own = true,
            Some(d) => {
                self.other.get_or_insert(d);
            }
            None => {}
        }
    }

    /// What is wrong with the input, if it is not the named CLI's.
    fn complaint(&self) -> Option<String> {
        if self.own {
            return None;
        }
        let named = self.named;
        Some(match self.other {
            Some(other) => format!(
                "this input looks like {}'s, not {}'s (--from {}): name it with --from {}, or use --from auto",
                other.title,
                named.title,
                named.name(),
                other.name()
            ),
            None => format!(
                "no record of {} was seen (--from {}); use --from auto to tell the CLI from the input",
                named.title,
                named.name()
            ),
        })
    }
}

/// How lines are judged.
#[derive(Debug, Default, Clone, Copy)]
pub struct Options {
    /// Anything the translator does not know is an error, not only RAW.
    pub strict: bool,
    /// Report nothing on stderr (bad lines are still counted).
    pub quiet: bool,
}

/// An input by its name on the command line (`-`: standard input), with
/// the name reports give it; a pipe (stdin, `<(cmd)`, a named pipe) is
/// widened.
pub fn open_input(path: &Path) -> io::Result<(String, Box<dyn Read>)> {
    if path.as_os_str() == "-" {
        let stdin = io::stdin().lock();
        widen_pipe(stdin.as_fd());
        return Ok(("<stdin>".into(), Box::new(stdin)));
    }
    let f = File::open(path)?;
    widen_pipe(f.as_fd());
    Ok((path.display().to_string(), Box::new(f)))
}

/// What a pipe is widened to: the most an unprivileged process may ask for
/// unless the system says otherwise (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: i32 = 1 << 20;

/// Give a pipe the filter reads or writes [`PIPE_SIZE`] bytes. A pipe holds
/// 64 KiB by default, so the program at its other end (`cat log |`,
/// `| jq`) is stopped and woken again every 64 KiB, which costs more than
/// translating those bytes. Latency does not change: a read still returns
/// whatever is there, and a write goes through at once. A wider pipe counts
/// against the user's pipe allowance while it is open (64 MiB by default);
/// anything but a pipe, a pipe as wide already, and a refusal are left as
/// they are.
pub fn widen_pipe(fd: BorrowedFd<'_>) {
    // SAFETY: `fcntl` on a descriptor that is open while borrowed; both
    // commands only fail (on anything but a pipe, or a refused size).
    unsafe {
        let now = libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ);
        if now > 0 && now < PIPE_SIZE {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE);
        }
    }
}

/// How `--stats` prints its summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Lines for people.
    Text,
    /// One JSON object.
    Json,
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
    /// With `--from CLI`: whether the input looks like that CLI's (`None`:
    /// not checked).
    pub looks: Option<Looks>,
    /// The input was not the named CLI's, or no CLI was recognized in it.
    pub mismatched: bool,
    /// The line where the input showed that it is not text: its first line
    /// is not JSON and holds a NUL byte or bytes that are not UTF-8 (an
    /// image, a compressed log). Its bad lines are then not reported one by
    /// one.
    pub binary: Option<u64>,
}

impl Stats {
    /// The `--stats` report for everything read so far.
    pub fn report(&self, em: &Emitter, seconds: f64, format: StatsFormat) -> String {
        self.report_counts(em.counts(), em.bytes_out(), seconds, format)
    }

    /// The `--stats` report, given the events written by type and the bytes
    /// written.
    pub fn report_counts(
        &self,
        counts: &[u64; EVENT_TYPES.len()],
        bytes_out: u64,
        seconds: f64,
        format: StatsFormat,
    ) -> String {
        let events: Vec<(&str, u64)> = EVENT_TYPES
            .iter()
            .zip(counts)
            .filter(|(_, &n)| n > 0)
            .map(|(&t, &n)| (t, n))
            .collect();
        let runs = counts[0];
        let total: u64 = counts.iter().sum();
        match format {
            StatsFormat::Json => {
                let value = serde_json::json!({
                    "lines": self.lines,
                    "bytesIn": self.bytes,
                    "badLines": self.bad,
                    "unknown": self.unknown,
                    "runs": runs,
                    "events": total,
                    "eventsByType": events.iter().copied().collect::<BTreeMap<_, _>>(),
                    "bytesOut": bytes_out,
                    "seconds": (seconds * 1e6).round() / 1e6,
                    "maxRssKiB": max_rss_kib(),
                });
                format!("{value}\n")
            }
            StatsFormat::Text => {
                let mut s = format!(
                    "agui-translate: {} ({}) read in {:.3} s: {} bad, {} unknown; {}, {} ({}) written; peak memory {} KiB\n",
                    counted(self.lines, "line"),
                    counted(self.bytes, "byte"),
                    seconds,
                    self.bad,
                    self.unknown.values().sum::<u64>(),
                    counted(runs, "run"),
                    counted(total, "event"),
                    counted(bytes_out, "byte"),
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

/// `1 run`, `2 runs`, `0 runs`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
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
    let mut at = Position::default();
    loop {
        let Some((line, terminated)) = lines
            .next_with_end()
            .with_context(|| format!("reading {name}"))?
        else {
            break;
        };
        take_line(line, terminated, &mut at, name, tr, em, opts, stats);
        let more = lines.has_buffered_line();
        if !more || em.output().len() >= BATCH {
            em.drain_to(out).context("writing stdout")?;
            if !more {
                out.flush().context("writing stdout")?;
            }
        }
        if crate::base::interrupt::caught().is_some() {
            break; // the line in hand is done
        }
    }
    Ok(at.saw_input)
}

/// Where [`pump`] is in its input.
#[derive(Debug, Default, Clone, Copy)]
struct Position {
    /// Lines read so far.
    lineno: u64,
    /// Whether a non-blank line was read.
    saw_input: bool,
}

/// One line of [`pump`]'s input, translated into `em`.
#[allow(clippy::too_many_arguments)]
fn take_line(
    line: &mut [u8],
    terminated: bool,
    at: &mut Position,
    name: &str,
    tr: &mut dyn Translate,
    em: &mut Emitter,
    opts: Options,
    stats: &mut Stats,
) {
    at.lineno += 1;
    let lineno = at.lineno;
    stats.lines += 1;
    stats.bytes += line.len() as u64 + u64::from(terminated);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let first = !at.saw_input;
    at.saw_input = true;
    if let Some(looks) = stats.looks.as_mut() {
        looks.line(line);
    }
    em.note_line(line);
    em.begin_line();
    if let Err(err) = tr.line(line, em) {
        stats.bad += 1;
        let cut = if terminated {
            ""
        } else {
            " (the input ends inside this line: it was cut short)"
        };
        if first && is_binary(line) {
            stats.binary = Some(lineno);
            if !opts.quiet {
                let _ = writeln!(
                    io::stderr(),
                    "agui-translate: {name}:{lineno}: this input is not text (binary data), so not a CLI's JSON stream; its lines go out as RAW, and are not reported one by one"
                );
            }
        } else if !opts.quiet && stats.binary.is_none() {
            report(name, lineno, &err.to_string(), line, cut);
        }
        source::passthrough(em, tr.source(), lineno, line);
    }
    em.end_line();
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
        stats.mismatched = true;
    }
    if let Some(complaint) = stats
        .looks
        .filter(|_| saw_input)
        .and_then(|l| l.complaint())
    {
        stats.mismatched = true;
        if !opts.quiet {
            let _ = writeln!(io::stderr(), "agui-translate: {name}: {complaint}");
        }
    }
    // A binary input was said to be one: advice to name its CLI would
    // mislead.
    if saw_input && tr.source() == source::UNDETECTED && !opts.quiet && stats.binary.is_none() {
        let _ = writeln!(
            io::stderr(),
            "agui-translate: {name}: could not tell which CLI wrote this input (no record of {} was seen); name it with --from",
            crate::dialect::titles("or")
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

/// Whether a line that could not be translated is binary data: a NUL
/// byte, or bytes that are not UTF-8.
fn is_binary(line: &[u8]) -> bool {
    memchr::memchr(0, line).is_some() || std::str::from_utf8(line).is_err()
}

fn report(name: &str, lineno: u64, err: &str, line: &[u8], cut: &str) {
    let _ = writeln!(
        io::stderr(),
        "agui-translate: {name}:{lineno}: {err}{cut}: {}",
        crate::base::json::preview(line)
    );
}
