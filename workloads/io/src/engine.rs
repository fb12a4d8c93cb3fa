//! What a shard's dispatcher needs of an I/O engine: start a request on a slot's buffer,
//! push started requests to the kernel, reap completions (waiting a bounded time for one).
//! A slot is one fiber's buffer; a slot has at most one request in flight.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// When started requests reach the kernel (io_uring; psync enters each request anyway).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// Every request a poll dispatched, in one entry at the poll's end (seastar's
    /// `kernel_submit_work`, once a reactor poll).
    Poll,
    /// Each request as it is dispatched (fio's default, `iodepth_batch_submit=1`).
    Each,
}

/// A request on slot `slot`'s buffer, at `offset` of the file, of the buffer's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub slot: usize,
    pub direction: Direction,
    pub offset: u64,
}

/// A finished request: bytes transferred or the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub slot: usize,
    pub result: Result<usize, i32>,
}

/// An I/O engine of one shard.
pub trait Engine {
    /// Starts `request`; its slot has no request in flight.
    fn submit(&mut self, request: Request) -> Result<(), String>;
    /// Hands the requests started since the last flush to the kernel (one syscall for all).
    fn flush(&mut self) -> Result<(), String>;
    /// Appends finished requests to `out`; when none is there, waits up to `wait_ns` for one.
    fn reap(&mut self, out: &mut Vec<Completion>, wait_ns: u64) -> Result<(), String>;
    /// The buffer of `slot`, which has no request in flight.
    fn buffer(&mut self, slot: usize) -> &mut [u8];
}

/// Buffers are aligned for O_DIRECT (4096 covers every logical block size in use).
pub const BUFFER_ALIGN: usize = 4096;

/// A zeroed heap buffer aligned to [`BUFFER_ALIGN`], at a stable address.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain owned memory; it moves between threads with its owner.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory for a {len}-byte buffer");
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), BUFFER_ALIGN).expect("valid layout")
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to len initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, Self::layout(self.len)) }
    }
}

/// The pattern written into a slot's buffer for writes: every byte a function of the slot
/// and the position, so that a read-back shows where it came from.
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_writable() {
        let mut b = AlignedBuf::new(10_000);
        assert_eq!(b.as_ptr() as usize % BUFFER_ALIGN, 0);
        assert!(b.as_mut_slice().iter().all(|x| *x == 0));
        fill_pattern(b.as_mut_slice(), 3);
        let first = b.as_mut_slice().to_vec();
        fill_pattern(b.as_mut_slice(), 3);
        assert_eq!(first, b.as_mut_slice());
        fill_pattern(b.as_mut_slice(), 4);
        assert_ne!(first, b.as_mut_slice());
    }
}
