//! Derived ids. An id the input does not give is derived from what the input
//! holds, so that the same input always gives the same ids and two inputs
//! (two halves of one resumed thread, say) give different ones.

/// A 64-bit digest, eight bytes at a time (a record may be megabytes of
/// command output): only to tell inputs apart, not for security.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut d = Digest::default();
        d.add(bytes);
        d
    }

    /// Add `bytes`, and their length, so that `add(a); add(b)` differs from
    /// `add(ab)`.
    pub fn add(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.word(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        last[..words.remainder().len()].copy_from_slice(words.remainder());
        self.word(u64::from_le_bytes(last));
        self.word(bytes.len() as u64);
    }

    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(K).rotate_left(29);
    }

    /// The digest's bits mixed together.
    fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    /// The id of run number `n` (counted from 1 on one output) whose first
    /// record had this digest: `run-` and 16 hex digits.
    pub fn run_id(self, n: u64) -> RunId {
        let mut d = self;
        d.word(n);
        let mut id = *b"run-0000000000000000";
        let h = d.finish();
        for (k, b) in id[4..].iter_mut().enumerate() {
            *b = b"0123456789abcdef"[(h >> (60 - 4 * k)) as usize & 0xf];
        }
        RunId(id)
    }
}

/// A derived run id, held without an allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RunId([u8; 20]);

impl RunId {
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII digits")
    }
}

impl std::ops::Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_input_same_id_other_input_other_id() {
        let a = Digest::of(br#"{"type":"turn.started"}"#);
        assert_eq!(
            a.run_id(1),
            Digest::of(br#"{"type":"turn.started"}"#).run_id(1)
        );
        assert_ne!(a.run_id(1), a.run_id(2));
        assert_ne!(
            a.run_id(1),
            Digest::of(br#"{"type":"turn.started"} "#).run_id(1)
        );
        let (mut ab, mut a_b) = (Digest::default(), Digest::default());
        ab.add(b"ab");
        a_b.add(b"a");
        a_b.add(b"b");
        assert_ne!(ab, a_b);
        assert_eq!(a.run_id(1).len(), "run-".len() + 16);
        assert_eq!(
            a.run_id(1).as_str(),
            format!("run-{:016x}", {
                let mut d = a;
                d.word(1);
                d.finish()
            })
        );
    }
}
