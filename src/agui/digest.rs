//! Derived ids. An id the input does not give is derived from what the input
//! holds, so that the same input always gives the same ids and two inputs
//! (two halves of one resumed thread, say) give different ones.

/// A 64-bit FNV-1a digest: only to tell inputs apart, not for security.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let mut d = Digest::default();
        d.add(bytes);
        d
    }

    /// Add `bytes`, and a separator so that `add(a); add(b)` differs from
    /// `add(ab)`.
    pub fn add(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The id of run number `n` (counted from 1 on one output) whose first
    /// record had this digest: `run-` and 16 hex digits.
    pub fn run_id(self, n: u64) -> String {
        let mut d = self;
        d.add(&n.to_le_bytes());
        format!("run-{:016x}", d.0)
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
    }
}
