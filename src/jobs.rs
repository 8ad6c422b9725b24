//! `--jobs N`: several FILEs translated at once, written in argument order.
//!
//! Each FILE is a stream of its own ([`run::translate_file`]), so its output
//! does not depend on the FILEs before it, and N threads can translate N
//! FILEs at once. A thread hands its FILE's output to the writer in chunks
//! of 64 KiB; the writer takes the FILEs in order. A FILE's output ahead of
//! the writer is held in memory (a few chunks per FILE, and a few MiB among
//! all FILEs), and beyond that in an unnamed temporary file (spilled) that
//! the writer copies out when it comes to that FILE; threads take a FILE
//! only a few FILEs ahead of the writer. So memory is bounded (a few MiB, and
//! N times the longest line), not by the size of a FILE, and the bytes are
//! the same as with `-j 1`.
//!
//! The writer never waits on a FILE that no thread has taken: FILEs are
//! taken in order, so the first unwritten one is always being translated.
//! Reports on stderr come from the thread that reads the FILE, so with
//! N > 1 those of different FILEs may come in another order than with
//! `-j 1`.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};

use anyhow::Context;

use crate::cli::FilterArgs;
use crate::run::{self, FileOutcome, Total};

/// Output is handed over in chunks of this many bytes.
const CHUNK: usize = 64 * 1024;
/// Chunks of a FILE held in memory before the rest is spilled, whatever
/// the other FILEs hold ...
const MEMORY_CHUNKS: usize = 4;
/// ... and beyond that while all FILEs together hold fewer than this many
/// (3 MiB): a FILE ahead of the writer is spilled only when it is large.
const SHARED_CHUNKS: usize = 48;
/// Spilled output is written and read back this many bytes at a time.
const SPILL_READ: usize = 512 * 1024;
/// How many FILEs per thread may be taken ahead of the writer.
const AHEAD_PER_JOB: usize = 2;

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
    out: &mut dyn Write,
    total: &mut Total,
) -> anyhow::Result<()> {
    let jobs = args
        .jobs
        .map_or_else(default_jobs, |n| n.get())
        .min(files.len());
    // Standard input is read where signals are caught (a signal interrupts
    // a read only in the thread it is delivered to): a batch with `-` is
    // translated on this thread.
    if jobs <= 1 || files.iter().any(|p| p.as_os_str() == "-") {
        for path in files {
            total.add(run::translate_file(path, args, out)?);
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
    let held = AtomicUsize::new(0);
    let spare = Mutex::new(Vec::new());
    let progress = Progress::default();
    let ahead = jobs * AHEAD_PER_JOB;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(path) = files.get(i) else { break };
                if !progress.wait_until_near(i, ahead) {
                    break;
                }
                let Some((tx, pending)) = senders[i].lock().ok().and_then(|mut s| s.take()) else {
                    break;
                };
                let mut w = ChunkWriter {
                    tx: tx.clone(),
                    pending,
                    held: &held,
                    spare: &spare,
                    buf: Vec::with_capacity(CHUNK),
                    spill: None,
                    index: i,
                };
                let piece = match run::translate_file(path, args, &mut w)
                    .and_then(|o| w.finish().map(|spill| (o, spill)).map_err(Into::into))
                {
                    Ok((outcome, spill)) => Piece::Done(Box::new(outcome), spill),
                    Err(err) => Piece::Failed(err),
                };
                // A closed channel: the writer has stopped; so do we.
                if tx.send(piece).is_err() {
                    break;
                }
            });
        }
        let result = write_in_order(receivers, out, total, &progress, &held, &spare);
        // Whatever happened, no thread may wait for the writer any more.
        progress.stop();
        result
    })
}

/// How many FILEs the writer has written, for the threads that wait to be
/// near enough to it.
#[derive(Default)]
struct Progress {
    /// FILEs written; `usize::MAX` once the writer has stopped.
    written: Mutex<usize>,
    changed: Condvar,
}

impl Progress {
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

/// What a thread hands to the writer.
enum Piece {
    Bytes(Vec<u8>),
    /// The FILE is done: what it gave, and the rest of its output, if it
    /// was spilled.
    Done(Box<FileOutcome>, Option<File>),
    Failed(anyhow::Error),
}

fn write_in_order(
    receivers: Vec<(mpsc::Receiver<Piece>, Arc<AtomicUsize>)>,
    out: &mut dyn Write,
    total: &mut Total,
    progress: &Progress,
    held: &AtomicUsize,
    spare: &Mutex<Vec<Vec<u8>>>,
) -> anyhow::Result<()> {
    // Spilled output is read back in large pieces: few system calls.
    let mut spill_buf = Vec::new();
    for (rx, pending) in receivers {
        loop {
            match rx.recv() {
                Ok(Piece::Bytes(mut b)) => {
                    pending.fetch_sub(1, Ordering::SeqCst);
                    held.fetch_sub(1, Ordering::SeqCst);
                    out.write_all(&b).context("writing stdout")?;
                    // The chunk's memory goes back to the threads.
                    if let Ok(mut spare) = spare.lock() {
                        if spare.len() < SHARED_CHUNKS {
                            b.clear();
                            spare.push(b);
                        }
                    }
                }
                Ok(Piece::Done(outcome, spill)) => {
                    if let Some(mut f) = spill {
                        f.rewind().context("reading back spilled output")?;
                        copy_back(&mut f, out, &mut spill_buf)?;
                    }
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
        progress.advance();
        if total.interrupted.is_some() {
            break;
        }
    }
    Ok(())
}

/// Copy a spill file's contents (from its start) to `out`, in pieces of
/// [`SPILL_READ`] bytes.
fn copy_back(f: &mut File, out: &mut dyn Write, buf: &mut Vec<u8>) -> anyhow::Result<()> {
    use std::io::Read;
    buf.resize(SPILL_READ, 0);
    loop {
        let n = match f.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading back spilled output"),
        };
        out.write_all(&buf[..n]).context("writing stdout")?;
    }
}

/// The output of one FILE: chunks to the writer while it keeps up, the
/// rest to a spill file.
struct ChunkWriter<'h> {
    tx: mpsc::Sender<Piece>,
    /// Chunks sent and not yet taken by the writer.
    pending: Arc<AtomicUsize>,
    /// The same, for all FILEs.
    held: &'h AtomicUsize,
    /// Chunks the writer is done with, for reuse.
    spare: &'h Mutex<Vec<Vec<u8>>>,
    buf: Vec<u8>,
    spill: Option<File>,
    index: usize,
}

impl ChunkWriter<'_> {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let in_memory = self.pending.load(Ordering::SeqCst) < MEMORY_CHUNKS
            || self.held.load(Ordering::SeqCst) < SHARED_CHUNKS;
        if self.spill.is_none() && in_memory {
            let fresh = self.spare.lock().ok().and_then(|mut s| s.pop());
            let fresh = fresh.unwrap_or_else(|| Vec::with_capacity(CHUNK));
            let chunk = std::mem::replace(&mut self.buf, fresh);
            self.pending.fetch_add(1, Ordering::SeqCst);
            self.held.fetch_add(1, Ordering::SeqCst);
            return self
                .tx
                .send(Piece::Bytes(chunk))
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe));
        }
        if self.spill.is_none() {
            self.spill = Some(spill_file(self.index)?);
        }
        let f = self.spill.as_mut().expect("created above");
        f.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// The FILE's output is complete: the spill file holding its end, if any.
    fn finish(mut self) -> io::Result<Option<File>> {
        self.send()?;
        Ok(self.spill.take())
    }
}

impl Write for ChunkWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // Chunks are cut at their size, so that each stays in the memory it
        // was given; once spilling, output goes to the file in larger pieces.
        let mut rest = data;
        while !rest.is_empty() {
            let piece = if self.spill.is_some() {
                SPILL_READ
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
