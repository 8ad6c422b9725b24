//! The FILE arguments of the filter: each FILE translated as a stream of its
//! own ([`translate_file`]), and with `--jobs N` several at once, written in
//! argument order.
//!
//! Since each FILE is a stream of its own, its output
//! does not depend on the FILEs before it, and N threads can translate N
//! FILEs at once. A thread hands its FILE's output to the writer in chunks
//! of 256 KiB; the writer takes the FILEs in order. A FILE's output ahead of
//! the writer is held in memory (a few chunks per FILE, and a few MiB among
//! all FILEs), and beyond that in an unnamed temporary file (spilled). When
//! the writer comes to a FILE still being translated, what it spilled goes
//! to the writer, and the rest of its output in memory: the thread waits for
//! room rather than spill again, since the writer is taking its chunks. Spill
//! files are reused from FILE to FILE: overwriting pages a file already has
//! costs the file system much less than giving a new file blocks and freeing
//! them. Threads take a FILE only a few FILEs ahead of the writer. So memory
//! is bounded (a few MiB, and N times the longest line), not by the size of
//! a FILE, and the bytes are the same as with `-j 1`.
//!
//! The writer never waits on a FILE that no thread has taken: FILEs are
//! taken in order, so the first unwritten one is always being translated.
//! Reports on stderr come from the thread that reads the FILE, so with
//! N > 1 those of different FILEs may come in another order than with
//! `-j 1`.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};

use anyhow::Context;

use crate::agui::EVENT_TYPES;
use crate::cli::FilterArgs;
use crate::run::{open_input, pump, settle, Looks, Options, Stats};

/// Output is handed over in chunks of this many bytes (each hand-over may
/// wake the writer: larger chunks, fewer switches between threads).
const CHUNK: usize = 256 * 1024;
/// Chunks of a FILE held in memory before the rest is spilled, whatever
/// the other FILEs hold ...
const MEMORY_CHUNKS: usize = 2;
/// ... and beyond that while all FILEs together hold fewer than this many
/// (3 MiB): a FILE ahead of the writer is spilled only when it is large.
const SHARED_CHUNKS: usize = 12;
/// Spilled output is written (and, where the kernel cannot copy it, read
/// back) this many bytes at a time.
const SPILL_PIECE: usize = 512 * 1024;
/// How many FILEs per thread may be taken ahead of the writer.
const AHEAD_PER_JOB: usize = 2;
/// A spill file is kept for reuse only if it holds at most this many bytes
/// (so that a batch keeps at most a few of these on disk); a larger one is
/// closed, and so freed, once copied out.
const KEEP_SPILL: u64 = 64 << 20;

/// The default of `--jobs`: the processors this process may run on, at
/// most 8 (a batch is read from disk too: more threads rarely help).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Translate `files` to `out`, `args.jobs` at a time, adding what each gave
/// to `total`. Stops after a FILE ended by a signal.
pub fn translate_all(
    args: &FilterArgs,
    files: &[PathBuf],
    out: &mut (impl Write + AsFd),
    total: &mut Total,
) -> anyhow::Result<()> {
    let jobs = args
        .jobs
        .map_or_else(default_jobs, |n| n.get())
        .min(files.len());
    // Standard input is read where signals are caught (a signal interrupts
    // a read only in the thread it is delivered to): a batch with `-` is
    // translated on this thread.
    //
    // With `--run-id`, the runs are numbered across the FILEs (`R`, `R-2`,
    // …), so a FILE's ids depend on the runs before it: the FILEs are
    // translated one after another.
    let numbered = args.output.run_id.is_some();
    if jobs <= 1 || numbered || files.iter().any(|p| p.as_os_str() == "-") {
        for path in files {
            let runs_before = if numbered { total.runs } else { 0 };
            total.add(translate_file(path, args, runs_before, out)?);
            if total.interrupted.is_some() {
                break;
            }
        }
        return Ok(());
    }
    // Each sender is taken by the thread that translates its FILE, so that
    // a thread that ends early closes its channel.
    let mut senders = Vec::with_capacity(files.len());
    let mut receivers = Vec::with_capacity(files.len());
    for _ in files {
        let (tx, rx) = mpsc::channel::<Piece>();
        let pending = Arc::new(AtomicUsize::new(0));
        senders.push(Mutex::new(Some((tx, Arc::clone(&pending)))));
        receivers.push((rx, pending));
    }
    let next = AtomicUsize::new(0);
    let shared = Shared::default();
    let ahead = jobs * AHEAD_PER_JOB;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(path) = files.get(i) else { break };
                if !shared.wait_until_near(i, ahead) {
                    break;
                }
                let Some((tx, pending)) = senders[i].lock().ok().and_then(|mut s| s.take()) else {
                    break;
                };
                let mut w = ChunkWriter {
                    tx: tx.clone(),
                    pending,
                    shared: &shared,
                    buf: Vec::with_capacity(CHUNK),
                    spill: None,
                    index: i,
                };
                let piece = match translate_file(path, args, 0, &mut w)
                    .and_then(|o| w.finish().map(|()| o).map_err(Into::into))
                {
                    Ok(outcome) => Piece::Done(Box::new(outcome)),
                    Err(err) => Piece::Failed(err),
                };
                // A closed channel: the writer has stopped; so do we.
                if tx.send(piece).is_err() {
                    break;
                }
            });
        }
        let result = out
            .flush()
            .and_then(|()| out.as_fd().try_clone_to_owned())
            .context("writing stdout")
            .and_then(|fd| {
                // The writer hands over whole chunks: nothing is gained from
                // line buffering.
                write_in_order(receivers, &mut File::from(fd), total, &shared)
            });
        // Whatever happened, no thread may wait for the writer any more.
        shared.stop();
        result
    })
}

/// What the threads and the writer share.
#[derive(Default)]
struct Shared {
    /// FILEs written; `usize::MAX` once the writer has stopped. The FILE
    /// the writer is on is the one with this index.
    written: Mutex<usize>,
    /// Signalled when `written` changes, and when the writer takes a chunk
    /// while a thread waits for room.
    changed: Condvar,
    /// A thread waits for the writer to take its chunks.
    waiting: AtomicBool,
    /// Chunks sent and not yet taken by the writer, all FILEs together.
    held: AtomicUsize,
    /// Chunks the writer is done with, for reuse.
    spare: Mutex<Vec<Vec<u8>>>,
    /// Spill files the writer is done with, for reuse.
    spills: Mutex<Vec<File>>,
}

impl Shared {
    /// Wait until FILE `i` is less than `ahead` FILEs ahead of the writer;
    /// `false` if the writer has stopped.
    fn wait_until_near(&self, i: usize, ahead: usize) -> bool {
        let Ok(mut written) = self.written.lock() else {
            return false;
        };
        while *written != usize::MAX && i >= written.saturating_add(ahead) {
            written = match self.changed.wait(written) {
                Ok(w) => w,
                Err(_) => return false,
            };
        }
        *written != usize::MAX
    }

    /// Whether the writer is on FILE `i` (it stays there until `i` is done).
    fn writing(&self, i: usize) -> bool {
        self.written.lock().is_ok_and(|w| *w == i)
    }

    /// Whether one more chunk of a FILE with `pending` chunks may be held in
    /// memory.
    fn room(&self, pending: &AtomicUsize) -> bool {
        pending.load(Ordering::SeqCst) < MEMORY_CHUNKS
            || self.held.load(Ordering::SeqCst) < SHARED_CHUNKS
    }

    /// Wait until there is [`room`](Self::room) for a chunk of the FILE the
    /// writer is on (its chunks are being taken), or the writer has stopped.
    fn wait_for_room(&self, pending: &AtomicUsize) {
        let Ok(mut written) = self.written.lock() else {
            return;
        };
        self.waiting.store(true, Ordering::SeqCst);
        while *written != usize::MAX && !self.room(pending) {
            written = match self.changed.wait(written) {
                Ok(w) => w,
                Err(_) => break,
            };
        }
        self.waiting.store(false, Ordering::SeqCst);
    }

    /// The writer has taken a chunk of FILE whose count is `pending`.
    fn taken(&self, pending: &AtomicUsize) {
        pending.fetch_sub(1, Ordering::SeqCst);
        self.held.fetch_sub(1, Ordering::SeqCst);
        // A thread that saw no room has set `waiting` before it looked.
        if self.waiting.load(Ordering::SeqCst) {
            drop(self.written.lock());
            self.changed.notify_all();
        }
    }

    /// Give a written chunk's memory back to the threads (not that of a
    /// larger piece, cut while spilling).
    fn recycle(&self, mut chunk: Vec<u8>) {
        if let Ok(mut spare) = self.spare.lock() {
            if spare.len() < SHARED_CHUNKS && chunk.capacity() <= CHUNK {
                chunk.clear();
                spare.push(chunk);
            }
        }
    }

    fn advance(&self) {
        if let Ok(mut written) = self.written.lock() {
            *written = written.saturating_add(1).min(usize::MAX - 1);
        }
        self.changed.notify_all();
    }

    fn stop(&self) {
        if let Ok(mut written) = self.written.lock() {
            *written = usize::MAX;
        }
        self.changed.notify_all();
    }
}

/// What a thread hands to the writer, in the order of its FILE's output.
enum Piece {
    Bytes(Vec<u8>),
    /// Output that was spilled while the writer was on an earlier FILE.
    Spill(Spill),
    /// The FILE is done: what it gave.
    Done(Box<FileOutcome>),
    Failed(anyhow::Error),
}

fn write_in_order(
    receivers: Vec<(mpsc::Receiver<Piece>, Arc<AtomicUsize>)>,
    out: &mut File,
    total: &mut Total,
    shared: &Shared,
) -> anyhow::Result<()> {
    let kernel = sendfile_copies(out);
    // Spilled output that is not sent in the kernel is copied through this
    // buffer.
    let mut spill_buf = Vec::new();
    for (rx, pending) in receivers {
        loop {
            match rx.recv() {
                Ok(Piece::Bytes(b)) => {
                    shared.taken(&pending);
                    out.write_all(&b).context("writing stdout")?;
                    shared.recycle(b);
                }
                Ok(Piece::Spill(spill)) => {
                    if let Some(f) = spill.copy_to(out, kernel, &mut spill_buf)? {
                        if let Ok(mut spills) = shared.spills.lock() {
                            spills.push(f);
                        }
                    }
                }
                Ok(Piece::Done(outcome)) => {
                    out.flush().context("writing stdout")?;
                    total.add(*outcome);
                    break;
                }
                Ok(Piece::Failed(err)) => return Err(err),
                Err(mpsc::RecvError) => {
                    return Err(anyhow::anyhow!("a translating thread ended early"))
                }
            }
        }
        shared.advance();
        if total.interrupted.is_some() {
            break;
        }
    }
    Ok(())
}

/// A FILE's output in a spill file: its first `len` bytes (a reused file
/// may hold more, from an earlier FILE).
struct Spill {
    file: File,
    len: u64,
}

impl Spill {
    /// A file for the output of FILE `index`: one from `pool`, or a new one.
    fn take(pool: &Mutex<Vec<File>>, index: usize) -> io::Result<Spill> {
        let file = match pool.lock().ok().and_then(|mut p| p.pop()) {
            Some(mut f) => {
                f.rewind()?;
                f
            }
            None => spill_file(index)?,
        };
        Ok(Spill { file, len: 0 })
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.file.write_all(data)?;
        self.len += data.len() as u64;
        Ok(())
    }

    /// Copy the spilled output to `out`: with `kernel` (see
    /// [`sendfile_copies`]) by `sendfile`, without a pass through this
    /// process, where the kernel can; give back the file if it is small
    /// enough to keep for another FILE.
    fn copy_to(
        mut self,
        out: &mut File,
        kernel: bool,
        buf: &mut Vec<u8>,
    ) -> anyhow::Result<Option<File>> {
        self.file.rewind().context("reading back spilled output")?;
        let mut left = self.len;
        while kernel && left > 0 {
            let want = usize::try_from(left).unwrap_or(usize::MAX).min(1 << 30);
            // SAFETY: both descriptors are open for as long as the borrows;
            // with no offset given, the spill file's own is used and moved.
            let n = unsafe {
                libc::sendfile(
                    out.as_raw_fd(),
                    self.file.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                )
            };
            match u64::try_from(n) {
                Ok(0) => break,
                Ok(n) => left -= n,
                Err(_) => {
                    let err = io::Error::last_os_error();
                    match err.raw_os_error() {
                        Some(libc::EINTR) => {}
                        // Not between these two: copy through memory.
                        Some(libc::EINVAL | libc::ENOSYS) => break,
                        _ => return Err(err).context("writing stdout"),
                    }
                }
            }
        }
        if left > 0 {
            buf.resize(SPILL_PIECE, 0);
        }
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = match self.file.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(anyhow::anyhow!(
                        "reading back spilled output: {left} bytes missing"
                    ))
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("reading back spilled output"),
            };
            out.write_all(&buf[..n]).context("writing stdout")?;
            left -= n as u64;
        }
        Ok((self.len <= KEEP_SPILL).then_some(self.file))
    }
}

/// Whether `sendfile` into `out` copies the bytes before it returns: into a
/// file or a device it does. Into a pipe (or a socket) it hands over the spill
/// file's pages themselves, and those change when the file is reused for the
/// next FILE while a slow reader has not read them yet: there the copy goes
/// through memory.
fn sendfile_copies(out: &File) -> bool {
    use std::os::unix::fs::FileTypeExt;
    out.metadata().is_ok_and(|m| {
        let kind = m.file_type();
        kind.is_file() || kind.is_char_device() || kind.is_block_device()
    })
}

/// The output of one FILE. While the writer is on an earlier FILE, chunks
/// go to it as long as there is room in memory, and the rest to a spill
/// file. Once the writer is on this FILE, the spill so far goes to it, and
/// every chunk after in memory, waiting for room: the writer is taking them.
struct ChunkWriter<'s> {
    tx: mpsc::Sender<Piece>,
    /// Chunks sent and not yet taken by the writer.
    pending: Arc<AtomicUsize>,
    shared: &'s Shared,
    buf: Vec<u8>,
    spill: Option<Spill>,
    index: usize,
}

impl ChunkWriter<'_> {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.shared.writing(self.index) {
            if let Some(spill) = self.spill.take() {
                self.hand(Piece::Spill(spill))?;
            }
            self.shared.wait_for_room(&self.pending);
        } else if self.spill.is_some() || !self.shared.room(&self.pending) {
            let spill = match &mut self.spill {
                Some(spill) => spill,
                None => self
                    .spill
                    .insert(Spill::take(&self.shared.spills, self.index)?),
            };
            spill.write(&self.buf)?;
            self.buf.clear();
            return Ok(());
        }
        let fresh = self.shared.spare.lock().ok().and_then(|mut s| s.pop());
        let fresh = fresh.unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, fresh);
        self.pending.fetch_add(1, Ordering::SeqCst);
        self.shared.held.fetch_add(1, Ordering::SeqCst);
        self.hand(Piece::Bytes(chunk))
    }

    fn hand(&self, piece: Piece) -> io::Result<()> {
        self.tx
            .send(piece)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    /// The FILE's output is complete: hand over what is left of it.
    fn finish(mut self) -> io::Result<()> {
        self.send()?;
        match self.spill.take() {
            Some(spill) => self.hand(Piece::Spill(spill)),
            None => Ok(()),
        }
    }
}

impl Write for ChunkWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // Chunks are cut at their size, so that each stays in the memory it
        // was given; while spilling, output goes to the file in larger pieces.
        let mut rest = data;
        while !rest.is_empty() {
            let piece = if self.spill.is_some() {
                SPILL_PIECE
            } else {
                CHUNK
            };
            let n = piece.saturating_sub(self.buf.len()).min(rest.len());
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.buf.len() >= piece {
                self.send()?;
            }
        }
        Ok(data.len())
    }

    /// Output goes to the writer in whole chunks (no FILE of a batch run on
    /// several threads is a live pipe).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A new file in the temporary directory, readable only by us, removed at
/// once: it lives until its handle is closed.
fn spill_file(index: usize) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = dir.join(format!(
            "agui-translate-{}-{index}-{attempt}.spill",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for a spill file in the temporary directory",
    ))
}

/// What translating the FILE arguments gave, summed over the files.
#[derive(Debug, Default)]
pub struct Total {
    pub stats: Stats,
    /// Events written, by type.
    pub counts: [u64; EVENT_TYPES.len()],
    pub bytes_out: u64,
    /// Runs started.
    pub runs: u64,
    /// A FILE was empty.
    pub empty: bool,
    /// A FILE could not be opened or read.
    pub unreadable: bool,
    /// An input was not the named CLI's (`--from`), or was not recognized.
    pub mismatched: bool,
    /// The signal that ended the translation.
    pub interrupted: Option<i32>,
}

impl Total {
    /// Add one file's outcome.
    pub fn add(&mut self, file: FileOutcome) {
        let s = file.stats;
        self.stats.lines += s.lines;
        self.stats.bytes += s.bytes;
        self.stats.bad += s.bad;
        for (what, n) in s.unknown {
            *self.stats.unknown.entry(what).or_default() += n;
        }
        for (t, n) in self.counts.iter_mut().zip(file.counts) {
            *t += n;
        }
        self.bytes_out += file.bytes_out;
        self.runs += file.runs;
        self.empty |= file.empty;
        self.unreadable |= file.unreadable;
        self.mismatched |= file.mismatched;
        if self.interrupted.is_none() {
            self.interrupted = file.interrupted;
        }
    }
}

/// What translating one FILE gave.
#[derive(Debug, Default)]
pub struct FileOutcome {
    pub stats: Stats,
    pub counts: [u64; EVENT_TYPES.len()],
    pub bytes_out: u64,
    /// Runs started.
    pub runs: u64,
    /// Nothing was read from the FILE.
    pub empty: bool,
    pub unreadable: bool,
    pub mismatched: bool,
    pub interrupted: Option<i32>,
}

/// Translate one FILE (`-`: standard input) to `out`, as a stream of its
/// own: its own emitter, so that the output of a FILE does not depend on the
/// FILEs before it (which is what lets `--jobs` translate them at once). A
/// FILE that cannot be opened or read is reported and ends as far as it got;
/// only an output error is returned. `runs_before` runs went out before it
/// (for `--run-id`'s numbers; 0 otherwise).
pub fn translate_file(
    path: &Path,
    args: &FilterArgs,
    runs_before: u64,
    out: &mut dyn Write,
) -> anyhow::Result<FileOutcome> {
    let opts = Options {
        strict: args.strict,
        quiet: args.quiet,
    };
    let mut result = FileOutcome::default();
    let (name, rdr) = match open_input(path) {
        Ok(input) => input,
        Err(err) => {
            result.unreadable = true;
            if crate::base::interrupt::caught().is_none() {
                let _ = writeln!(
                    io::stderr(),
                    "agui-translate: {}: {err}{}",
                    path.display(),
                    command_hint(path, &err)
                );
            }
            return Ok(result);
        }
    };
    let mut em = args.output.emitter();
    em.follow_runs(runs_before);
    em.name_input(&name);
    let mut tr = crate::dialect::for_input(args.from)?;
    let mut stats = Stats {
        looks: args.from.dialect().map(Looks::new),
        ..Stats::default()
    };
    let mut input = Input::new(rdr);
    let saw_input = pump(
        &mut input,
        &name,
        tr.as_mut(),
        &mut em,
        out,
        opts,
        &mut stats,
    )?;
    if let Some(sig) = crate::base::interrupt::caught() {
        // Finish what was read; end the run as cancelled.
        em.cancel_run();
        em.drain_to(out).context("writing stdout")?;
        out.flush().context("writing stdout")?;
        result.interrupted = Some(sig);
    } else {
        if let Some(err) = input.error.take() {
            result.unreadable = true;
            let _ = writeln!(io::stderr(), "agui-translate: {name}: {err}");
            if !saw_input {
                // Nothing was read (a directory): no stream, as for a FILE
                // that cannot be opened.
                return Ok(result);
            }
        }
        if !saw_input && !result.unreadable {
            result.empty = true;
            if !opts.quiet {
                let _ = writeln!(io::stderr(), "agui-translate: {name}: the input is empty");
            }
        }
        settle(
            &name,
            tr.as_mut(),
            &mut em,
            out,
            saw_input,
            opts,
            &mut stats,
        )?;
    }
    result.mismatched = stats.mismatched;
    result.runs = em.run_number();
    result.counts = *em.counts();
    result.bytes_out = em.bytes_out();
    result.stats = stats;
    Ok(result)
}

/// A FILE that is not there but is named like a command (`agui-translate
/// --from claude check f`): a command is only one as the first argument.
fn command_hint(path: &Path, err: &io::Error) -> String {
    let Some(name) = path.to_str() else {
        return String::new();
    };
    if err.kind() != io::ErrorKind::NotFound
        || crate::cli::command().find_subcommand(name).is_none()
    {
        return String::new();
    }
    let example = if name == "check" {
        "; to check a translation: agui-translate --from CLI FILE | agui-translate check"
    } else {
        ""
    };
    format!(
        " ('{name}' is a command only as the first argument, without the translation's options: agui-translate {name} …{example})"
    )
}

/// An input as the filter reads it: it ends once a signal was caught (also
/// when the signal interrupts a read), and a read error ends it too; the
/// error is kept, to be reported once the stream is settled.
struct Input<R> {
    rdr: R,
    error: Option<io::Error>,
}

impl<R: Read> Input<R> {
    fn new(rdr: R) -> Self {
        Input { rdr, error: None }
    }
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if crate::base::interrupt::caught().is_some() || self.error.is_some() {
                return Ok(0);
            }
            match self.rdr.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.error = Some(e);
                    return Ok(0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| seed.wrapping_add((i % 251) as u8)).collect()
    }

    /// A file to write to, removed at once; `append`: opened to append,
    /// which `sendfile` refuses, so that the copy goes through memory.
    fn out_file(append: bool) -> File {
        // Tests run at once in one process: each file has its own name.
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "agui-translate-test-{}-{}.out",
            std::process::id(),
            MADE.fetch_add(1, Ordering::SeqCst)
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .append(append)
            .create_new(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        f
    }

    /// Everything written to `f` so far, and `f` emptied.
    fn drain(f: &mut File) -> Vec<u8> {
        let mut all = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut all).unwrap();
        f.set_len(0).unwrap();
        f.rewind().unwrap();
        all
    }

    /// A spill file reused for another FILE may hold more than that FILE
    /// wrote to it: only what it wrote is copied out, whether the kernel
    /// copies it or it goes through memory.
    #[test]
    fn a_reused_spill_file_gives_only_what_was_written_to_it() {
        for append in [false, true] {
            let pool = Mutex::new(Vec::new());
            let mut out = out_file(append);
            let mut buf = Vec::new();
            let long = bytes(3 * SPILL_PIECE + 17, 1);
            let mut spill = Spill::take(&pool, 0).unwrap();
            spill.write(&long).unwrap();
            let file = spill.copy_to(&mut out, true, &mut buf).unwrap().unwrap();
            assert!(drain(&mut out) == long);
            assert_eq!(buf.is_empty(), !append, "copied through memory: {append}");
            pool.lock().unwrap().push(file);

            let short = bytes(1000, 2);
            let mut spill = Spill::take(&pool, 1).unwrap();
            assert!(pool.lock().unwrap().is_empty(), "the pooled file is reused");
            spill.write(&short).unwrap();
            spill.copy_to(&mut out, true, &mut buf).unwrap();
            let got = drain(&mut out);
            assert!(got == short, "{} bytes out of {}", got.len(), short.len());
        }
    }

    /// `sendfile` is used into a file or a device, not into a pipe (which
    /// would hold on to the spill file's pages).
    #[test]
    fn spills_are_sent_in_the_kernel_into_files_and_devices_only() {
        assert!(sendfile_copies(&out_file(false)));
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null");
        assert!(sendfile_copies(&null.unwrap()));
        let mut child = std::process::Command::new("true")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pipe = std::os::fd::OwnedFd::from(child.stdout.take().unwrap());
        assert!(!sendfile_copies(&File::from(pipe)));
        child.wait().unwrap();
    }

    /// A FILE ahead of the writer, with no room left in memory, spills;
    /// when the writer comes to it, the spill goes out first, then the rest
    /// in memory, waiting for the writer to take each chunk.
    #[test]
    fn a_file_that_spilled_ahead_is_written_in_order_once_the_writer_comes() {
        let shared = Shared::default();
        // Other FILEs hold the whole shared budget (and never give it back).
        shared.held.store(SHARED_CHUNKS, Ordering::SeqCst);
        let (tx0, rx0) = mpsc::channel();
        let (tx1, rx1) = mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let first = bytes(MEMORY_CHUNKS * CHUNK + 3 * SPILL_PIECE + 5, 3);
        let second = bytes(20 * CHUNK + 9, 4);
        let mut out = out_file(false);
        let mut total = Total::default();
        std::thread::scope(|scope| {
            let (shared, first, second) = (&shared, &first, &second);
            let mut w = ChunkWriter {
                tx: tx1.clone(),
                pending: Arc::clone(&pending),
                shared,
                buf: Vec::with_capacity(CHUNK),
                spill: None,
                index: 1,
            };
            scope.spawn(move || {
                w.write_all(first).unwrap();
                assert!(w.spill.is_some(), "no room: the rest is spilled");
                // FILE 0 is done: the writer comes to this one.
                tx0.send(Piece::Done(Box::default())).unwrap();
                while !shared.writing(1) {
                    std::thread::yield_now();
                }
                w.write_all(second).unwrap();
                assert!(w.spill.is_none(), "the spill went to the writer");
                w.finish().unwrap();
                tx1.send(Piece::Done(Box::default())).unwrap();
            });
            let receivers = vec![(rx0, Arc::new(AtomicUsize::new(0))), (rx1, pending)];
            write_in_order(receivers, &mut out, &mut total, shared).unwrap();
        });
        let out = drain(&mut out);
        assert!(
            out.len() == first.len() + second.len(),
            "{} bytes",
            out.len()
        );
        assert!(out[..first.len()] == first[..], "the first part, in order");
        assert!(
            out[first.len()..] == second[..],
            "the second part, in order"
        );
        assert_eq!(
            shared.spills.lock().unwrap().len(),
            1,
            "the spill file came back"
        );
    }
}
