//! `--jobs N`: several FILEs translated at once, written in argument order.
//!
//! Each FILE is a stream of its own ([`run::translate_file`]), so its output
//! does not depend on the FILEs before it, and N threads can translate N
//! FILEs at once. A thread hands its FILE's output to the writer in chunks
//! of about 64 KiB through a channel of a few chunks; the writer takes the
//! FILEs in order, so a thread ahead of it waits once its channel is full.
//! Memory is bounded by N times a few chunks (and the longest line), not by
//! the size of a FILE; the bytes are the same as with `-j 1`. The writer
//! never waits on a FILE that no thread has taken: FILEs are taken in order,
//! so the first unwritten one is always being translated.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use anyhow::Context;

use crate::cli::FilterArgs;
use crate::run::{self, FileOutcome, Total};

/// Output is handed over in chunks of about this many bytes.
const CHUNK: usize = 64 * 1024;
/// Chunks a channel holds before its thread waits.
const CHANNEL_CHUNKS: usize = 4;

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
    if jobs <= 1 {
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
    let (senders, receivers): (Vec<_>, Vec<_>) = files
        .iter()
        .map(|_| {
            let (tx, rx) = mpsc::sync_channel::<Piece>(CHANNEL_CHUNKS);
            (Mutex::new(Some(tx)), rx)
        })
        .unzip();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let senders = &senders;
        let next = &next;
        for _ in 0..jobs {
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(path) = files.get(i) else { break };
                let Some(tx) = senders[i].lock().ok().and_then(|mut s| s.take()) else {
                    break;
                };
                let mut w = ChunkWriter {
                    tx: tx.clone(),
                    buf: Vec::with_capacity(CHUNK),
                };
                let piece = match run::translate_file(path, args, &mut w)
                    .and_then(|o| w.flush().map(|()| o).map_err(Into::into))
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
        // Returning drops the receivers: threads still at work see closed
        // channels and end.
        write_in_order(receivers, out, total)
    })
}

/// The default of `--jobs`: the processors this process may run on, at
/// most 8 (a batch is read from disk too: more threads rarely help).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// What a thread hands to the writer.
enum Piece {
    Bytes(Vec<u8>),
    Done(Box<FileOutcome>),
    Failed(anyhow::Error),
}

fn write_in_order(
    receivers: Vec<mpsc::Receiver<Piece>>,
    out: &mut dyn Write,
    total: &mut Total,
) -> anyhow::Result<()> {
    for rx in receivers {
        loop {
            match rx.recv() {
                Ok(Piece::Bytes(b)) => {
                    out.write_all(&b).context("writing stdout")?;
                    out.flush().context("writing stdout")?;
                }
                Ok(Piece::Done(outcome)) => {
                    total.add(*outcome);
                    break;
                }
                Ok(Piece::Failed(err)) => return Err(err),
                Err(mpsc::RecvError) => {
                    return Err(anyhow::anyhow!("a translating thread ended early"))
                }
            }
        }
        if total.interrupted.is_some() {
            break;
        }
    }
    Ok(())
}

/// The output of one FILE, sent on in chunks.
struct ChunkWriter {
    tx: mpsc::SyncSender<Piece>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .send(Piece::Bytes(chunk))
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    /// A flush hands over what is pending at once (a live input's events).
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}
