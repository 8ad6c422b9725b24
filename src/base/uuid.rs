//! Fresh ids for live runs: UUID version 7 (RFC 9562), a 48-bit Unix time
//! in milliseconds followed by 74 random bits, so ids sort by the time they
//! were made and never repeat. The filter's own ids are derived from its
//! input instead (the same input gives the same bytes); a live run has no
//! input to derive them from that another run could not share.

use std::time::{SystemTime, UNIX_EPOCH};

/// A new UUID v7 in its text form (`0190163d-8694-739b-aea5-966c26f8ad91`).
pub fn v7() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    format_v7(ms, random())
}

/// The UUID of time `ms` with the random bits from `rand` (those the
/// version and variant take are overwritten).
fn format_v7(ms: u64, rand: [u8; 10]) -> String {
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6..].copy_from_slice(&rand);
    b[6] = 0x70 | (b[6] & 0x0f); // version 7
    b[8] = 0x80 | (b[8] & 0x3f); // variant 10
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(byte & 0x0f)]));
    }
    s
}

/// Ten bytes from the kernel's random source (`getrandom`). Should it fail
/// (a kernel without it), the time in nanoseconds and the process id still
/// keep two runs' ids apart.
fn random() -> [u8; 10] {
    let mut buf = [0u8; 10];
    if fill_random(&mut buf).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        buf[..4].copy_from_slice(&nanos.to_le_bytes());
        buf[4..8].copy_from_slice(&std::process::id().to_le_bytes());
    }
    buf
}

/// Fills `buf` from the kernel's random source (`getrandom`), or fails:
/// for secrets, which have no fallback.
pub fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: writes at most `buf.len() - got` bytes into `buf[got..]`.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr().cast(), buf.len() - got, 0) };
        if n > 0 {
            got += n as usize;
        } else {
            let e = std::io::Error::last_os_error();
            if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_rfc_9562_s() {
        let id = format_v7(0x0190_163d_8694, [0xff; 10]);
        assert_eq!(id, "0190163d-8694-7fff-bfff-ffffffffffff");
        let id = format_v7(0x0190_163d_8694, [0; 10]);
        assert_eq!(id, "0190163d-8694-7000-8000-000000000000");
    }

    #[test]
    fn ids_are_fresh_and_sort_by_time() {
        let (a, b) = (v7(), v7());
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert_eq!(id.len(), 36);
            assert_eq!(&id[14..15], "7", "{id}");
            assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        }
        // The first 48 bits are now, in milliseconds.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let ms = u64::from_str_radix(&a[..8], 16).unwrap() << 16
            | u64::from_str_radix(&a[9..13], 16).unwrap();
        assert!(now - ms < 60_000, "{a} {now}");
    }
}
