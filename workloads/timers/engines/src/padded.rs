//! Keeping data that different threads write off each other's cache lines.

use std::ops::Deref;

/// A value on cache lines of its own: 128 bytes, since x86 prefetches lines in pairs. The
/// Java objects the engines model (a lock, an `AtomicLong`) are separate heap objects; fields
/// of one Rust struct would otherwise share lines and contend where Java's do not.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
