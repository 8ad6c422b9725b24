//! The basics: bytes, JSON and small stores that know nothing of AG-UI, of
//! any CLI or of the command line. Nothing here imports another folder.
//!
//! [`lines`] splits the input, [`json`] parses it in place and repairs it,
//! [`plain`] walks a plain record faster than the parser skips it,
//! [`held`] and [`closer`] are small stores the writer uses, [`interrupt`]
//! records the signal caught, [`uuid`] makes the fresh ids of live runs and
//! [`files`] writes a file whole.

pub mod closer;
pub mod files;
pub mod held;
pub mod interrupt;
pub mod json;
pub mod lines;
pub mod plain;
pub mod uuid;
