//! The io_uring engine: one ring per shard (the `io-uring` crate), a request per slot in it,
//! submitted in one `io_uring_enter` per dispatch round (or each as it is dispatched, with
//! `submit=each`, as fio does); a bounded wait for a completion uses
//! the kernel's timeout argument (IORING_FEAT_EXT_ARG).
//!
//! The ring is set up as fio's io_uring engine sets up its own (`fio_ioring_queue_init`):
//! COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN (Linux 6.1), each dropped where the kernel
//! refuses it. A completion then does not interrupt the shard (no IPI, no signal-like task
//! work): the kernel posts the completions when the shard next enters it with GETEVENTS (the
//! crate adds it to a submit when the TASKRUN flag says some are waiting), in a batch.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use io_uring::{opcode, types, IoUring};

use crate::engine::{AlignedBuf, Completion, Direction, Engine, Request, Submit};

/// Why io_uring cannot be used here, or `None` when a ring can be set up.
pub fn unavailable() -> Option<String> {
    match IoUring::new(2) {
        Ok(ring) => (!ring.params().is_feature_ext_arg()).then(|| {
            "io_uring unavailable: the kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11+)".to_string()
        }),
        Err(e) => Some(format!("io_uring unavailable: io_uring_setup failed: {e}")),
    }
}

/// One ring and `slots` buffers on `file`.
pub struct UringEngine {
    ring: IoUring,
    file: Arc<File>,
    buffers: Vec<AlignedBuf>,
    unsubmitted: usize,
    in_flight: usize,
    submit: Submit,
}

impl UringEngine {
    pub fn new(
        file: Arc<File>,
        slots: usize,
        reqsize: usize,
        submit: Submit,
    ) -> Result<Self, String> {
        let entries = (slots as u32).next_power_of_two().max(2);
        let build = |deferred: bool, coop: bool| {
            let mut b = IoUring::builder();
            b.setup_cqsize(entries * 2);
            if coop {
                b.setup_coop_taskrun().setup_taskrun_flag();
            }
            if deferred {
                b.setup_single_issuer().setup_defer_taskrun();
            }
            b.build(entries)
        };
        let ring = build(true, true)
            .or_else(|_| build(false, true))
            .or_else(|_| build(false, false))
            .map_err(|e| format!("io_uring unavailable: io_uring_setup failed: {e}"))?;
        Ok(UringEngine {
            ring,
            file,
            buffers: (0..slots).map(|_| AlignedBuf::new(reqsize)).collect(),
            unsubmitted: 0,
            in_flight: 0,
            submit,
        })
    }
}

impl Engine for UringEngine {
    fn submit(&mut self, request: Request) -> Result<(), String> {
        let fd = types::Fd(self.file.as_raw_fd());
        let buf = &mut self.buffers[request.slot];
        let len = u32::try_from(buf.len()).map_err(|_| "request too large".to_string())?;
        let entry = match request.direction {
            Direction::Read => opcode::Read::new(fd, buf.as_mut_ptr(), len)
                .offset(request.offset)
                .build(),
            Direction::Write => opcode::Write::new(fd, buf.as_ptr(), len)
                .offset(request.offset)
                .build(),
        }
        .user_data(request.slot as u64);
        loop {
            // SAFETY: the buffer lives in self.buffers, untouched until the slot's completion
            // is reaped, and Drop waits for every request in flight before freeing it.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                break;
            }
            self.flush()?;
        }
        self.unsubmitted += 1;
        self.in_flight += 1;
        if self.submit == Submit::Each {
            self.flush_with_events()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.unsubmitted > 0 {
            self.flush_with_events()?;
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>, wait_ns: u64) -> Result<(), String> {
        let before = out.len();
        self.drain(out);
        if out.len() == before && self.ring.submission().taskrun() {
            // Completions the kernel holds for us: a submit with GETEVENTS posts them.
            self.flush_with_events()?;
            self.drain(out);
        }
        if out.len() == before && wait_ns > 0 {
            let ts = types::Timespec::from(Duration::from_nanos(wait_ns));
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                Err(e) => return Err(format!("io_uring_enter failed: {e}")),
            }
            self.unsubmitted = 0;
            self.drain(out);
        }
        Ok(())
    }

    fn buffer(&mut self, slot: usize) -> &mut [u8] {
        self.buffers[slot].as_mut_slice()
    }
}

impl UringEngine {
    /// Whether the ring runs its completions deferred to the shard's own entries
    /// (SINGLE_ISSUER + DEFER_TASKRUN, set together), as fio's on this kernel.
    pub fn deferred(&self) -> bool {
        self.ring.params().is_setup_single_issuer()
    }

    /// Requests started and not yet handed to the kernel.
    pub fn unsubmitted(&self) -> usize {
        self.unsubmitted
    }

    /// Submits what is queued; the crate adds GETEVENTS when completions wait in the kernel.
    fn flush_with_events(&mut self) -> Result<(), String> {
        self.ring
            .submit()
            .map_err(|e| format!("io_uring_enter failed: {e}"))?;
        self.unsubmitted = 0;
        Ok(())
    }

    fn drain(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let res = cqe.result();
            self.in_flight -= 1;
            out.push(Completion {
                slot: cqe.user_data() as usize,
                result: if res < 0 { Err(-res) } else { Ok(res as usize) },
            });
        }
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        let mut sink = Vec::new();
        while self.in_flight > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                break;
            }
            self.drain(&mut sink);
        }
    }
}
