//! Both engines write a pattern through the file and read it back byte-exact, through the
//! page cache and with O_DIRECT where the filesystem allows it; io_uring where the kernel
//! allows it. Where the machine lacks one, the test says so and skips it; under CI (or
//! REQUIRE_BPF=1) it fails instead, as tests/requirements.py's `need()` does.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::time::Duration;

use common::{need, ScratchFile};
use io_bench::engine::{fill_pattern, Completion, Direction, Engine, Request, Submit};
use io_bench::params::IoEngine;
use io_bench::shard::make_engine;
use io_bench::uring_engine;

const REQSIZE: usize = 8192;
const SLOTS: usize = 4;

fn wait_all(engine: &mut dyn Engine, n: usize) -> Vec<Completion> {
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while out.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "requests did not complete"
        );
        engine.reap(&mut out, 10_000_000).unwrap();
    }
    assert_eq!(out.len(), n, "each request completes once");
    out
}

/// The scratch file for reads and writes (O_DIRECT with `direct`); `None` where the
/// filesystem refuses O_DIRECT (said, or a failure under CI).
fn open(scratch: &ScratchFile, direct: bool) -> Option<Arc<File>> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    match options.open(&scratch.path) {
        Ok(f) => Some(Arc::new(f)),
        Err(e) if direct => {
            need(Some(format!("O_DIRECT refused on {:?}: {e}", scratch.path)));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn roundtrip(kind: IoEngine, submit: Submit, direct: bool) {
    let scratch = ScratchFile::new("roundtrip", 1 << 20);
    let Some(file) = open(&scratch, direct) else {
        return;
    };
    let mut engine = make_engine(kind, file, SLOTS, REQSIZE, submit, "test").unwrap();
    let offsets = [
        0u64,
        3 * REQSIZE as u64,
        17 * REQSIZE as u64,
        100 * REQSIZE as u64,
    ];
    let mut written = Vec::new();
    for (slot, &offset) in offsets.iter().enumerate() {
        fill_pattern(engine.buffer(slot), 1000 + slot as u64);
        written.push(engine.buffer(slot).to_vec());
        engine
            .submit(Request {
                slot,
                direction: Direction::Write,
                offset,
            })
            .unwrap();
    }
    engine.flush().unwrap();
    for c in wait_all(engine.as_mut(), SLOTS) {
        assert_eq!(c.result, Ok(REQSIZE), "write of slot {}", c.slot);
    }
    // Read back into other slots than the ones written from.
    for slot in 0..SLOTS {
        engine.buffer(slot).fill(0);
        engine
            .submit(Request {
                slot,
                direction: Direction::Read,
                offset: offsets[(slot + 1) % SLOTS],
            })
            .unwrap();
    }
    engine.flush().unwrap();
    for c in wait_all(engine.as_mut(), SLOTS) {
        assert_eq!(c.result, Ok(REQSIZE), "read of slot {}", c.slot);
    }
    for slot in 0..SLOTS {
        assert!(
            engine.buffer(slot) == written[(slot + 1) % SLOTS].as_slice(),
            "{kind:?} direct={direct}: slot {slot} read back other bytes than were written"
        );
    }
    drop(engine);
    // And the file itself holds them (through a plain read).
    let data = std::fs::read(&scratch.path).unwrap();
    for (slot, &offset) in offsets.iter().enumerate() {
        let at = offset as usize;
        assert_eq!(&data[at..at + REQSIZE], written[slot].as_slice());
    }
    // Bytes nobody wrote kept the file's pattern.
    assert_eq!(data[REQSIZE], (REQSIZE % 251) as u8);
}

/// Whether io_uring runs here (said, or a failure under CI, where it does not).
fn uring_here() -> bool {
    need(uring_engine::unavailable().map(|reason| format!("io_uring: {reason}")))
}

#[test]
fn psync_reads_back_what_it_wrote() {
    roundtrip(IoEngine::Psync, Submit::Poll, false);
    roundtrip(IoEngine::Psync, Submit::Poll, true);
}

#[test]
fn io_uring_reads_back_what_it_wrote() {
    if !uring_here() {
        return;
    }
    for submit in [Submit::Poll, Submit::Each] {
        roundtrip(IoEngine::IoUring, submit, false);
        roundtrip(IoEngine::IoUring, submit, true);
    }
}

/// `submit=each` hands every request to the kernel as it is started (fio's default), where
/// `poll` keeps them in the ring until the dispatcher's flush at the end of its poll.
#[test]
fn io_uring_submit_each_enters_every_request_at_once() {
    if !uring_here() {
        return;
    }
    let scratch = ScratchFile::new("submit-each", 1 << 20);
    for (submit, held) in [(Submit::Poll, SLOTS), (Submit::Each, 0)] {
        let Some(file) = open(&scratch, false) else {
            return;
        };
        let mut engine = uring_engine::UringEngine::new(file, SLOTS, REQSIZE, submit).unwrap();
        for slot in 0..SLOTS {
            let offset = (slot * REQSIZE) as u64;
            let direction = Direction::Read;
            engine
                .submit(Request {
                    slot,
                    direction,
                    offset,
                })
                .unwrap();
        }
        assert_eq!(engine.unsubmitted(), held, "{submit:?}");
        engine.flush().unwrap();
        assert_eq!(engine.unsubmitted(), 0);
        let done = wait_all(&mut engine, SLOTS);
        assert!(done.iter().all(|c| c.result == Ok(REQSIZE)), "{done:?}");
    }
}

/// The ring is set up as fio's (completions deferred to the shard's own entries) wherever the
/// kernel takes it, and a shard that only polls (reaps without waiting) still gets every
/// completion: a poll enters the kernel when the ring says completions wait there.
#[test]
fn io_uring_is_set_up_as_fios_and_a_polling_shard_gets_its_completions() {
    if !uring_here() {
        return;
    }
    let takes_it = io_uring::IoUring::<io_uring::squeue::Entry, io_uring::cqueue::Entry>::builder()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(2)
        .is_ok();
    // O_DIRECT: the reads complete after the submit returns (from the page cache they would
    // complete inside it), so their completions wait in the kernel for the shard's next entry.
    let scratch = ScratchFile::new("polling", 1 << 20);
    let Some(file) = open(&scratch, true) else {
        return;
    };
    let mut engine = uring_engine::UringEngine::new(file, SLOTS, REQSIZE, Submit::Poll).unwrap();
    assert_eq!(engine.deferred(), takes_it);
    for slot in 0..SLOTS {
        let offset = (slot * REQSIZE) as u64;
        let request = Request {
            slot,
            direction: Direction::Read,
            offset,
        };
        engine.submit(request).unwrap();
    }
    engine.flush().unwrap();
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while out.len() < SLOTS {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {SLOTS} completed",
            out.len()
        );
        engine.reap(&mut out, 0).unwrap();
    }
    assert!(out.iter().all(|c| c.result == Ok(REQSIZE)), "{out:?}");
}
