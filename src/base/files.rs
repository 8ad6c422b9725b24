//! Files written whole: a reader sees the old version or the new, never a
//! part; and files read back with care: a regular file, not through a
//! link, and not beyond a bound.
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` (mode 0600) so that it is never seen half
/// written: to a temporary file beside it, flushed to disk, then renamed
/// over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The bytes of the regular file at `path`, at most `limit` of them. The
/// file is opened without following a link and without waiting (a FIFO
/// put in its place does not block the reader), and anything but a
/// regular file, or one longer than `limit`, is an error (`/dev/zero`
/// does not exhaust the reader).
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bounded_regular_file_is_read() {
        let dir = std::env::temp_dir().join(format!("agui-files-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        write_atomic(&file, b"abc").unwrap();
        assert_eq!(read_regular(&file, 3).unwrap(), b"abc");
        assert!(read_regular(&file, 2).is_err());
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_regular(&fifo, 10).is_err(), "a FIFO, and no wait");
        assert!(read_regular(Path::new("/dev/zero"), 10).is_err());
        std::os::unix::fs::symlink(&file, dir.join("link")).unwrap();
        assert!(read_regular(&dir.join("link"), 10).is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
