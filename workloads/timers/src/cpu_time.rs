//! CPU time of whole processes, read at the measured window's edges for
//! `client_cpu_ns_per_op` and `server_cpu_ns_per_op` (no probe needed).
//!
//! A process CPU clock (`CLOCK_PROCESS_CPUTIME_ID`, or `clock_getcpuclockid` for another
//! process) counts user and system time of every thread of the process, exited ones
//! included, in nanoseconds. The client process holds the load tasks, the client runtime's
//! workers and the strategies' timer and executor threads; the server process holds the
//! server. Reading another process's clock needs no privilege.

use std::time::Duration;

/// The CPU clock of one process.
#[derive(Clone, Copy, Debug)]
pub struct ProcessCpuClock {
    clock: libc::clockid_t,
}

impl ProcessCpuClock {
    /// The calling process's clock.
    pub fn own() -> ProcessCpuClock {
        ProcessCpuClock {
            clock: libc::CLOCK_PROCESS_CPUTIME_ID,
        }
    }

    /// The clock of process `pid`, or None when the kernel gives none (it has exited).
    pub fn of(pid: u32) -> Option<ProcessCpuClock> {
        let mut clock: libc::clockid_t = 0;
        let pid = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: `clock` is a valid out-pointer for the call.
        let rc = unsafe { libc::clock_getcpuclockid(pid, &mut clock) };
        (rc == 0).then_some(ProcessCpuClock { clock })
    }

    /// The CPU time used so far, or None when it cannot be read (the process is gone).
    pub fn now(&self) -> Option<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer for the call.
        let rc = unsafe { libc::clock_gettime(self.clock, &mut ts) };
        if rc != 0 {
            return None;
        }
        let secs = u64::try_from(ts.tv_sec).ok()?;
        let nanos = u32::try_from(ts.tv_nsec).ok()?;
        Some(Duration::new(secs, nanos))
    }
}

/// CPU time between two readings, when both exist.
pub fn spent(start: Option<Duration>, end: Option<Duration>) -> Option<Duration> {
    Some(end?.saturating_sub(start?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(d: Duration) {
        let clock = ProcessCpuClock::own();
        let start = clock.now().unwrap();
        while clock.now().unwrap() - start < d {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn own_and_by_pid_clocks_advance_with_work() {
        let own = ProcessCpuClock::own();
        let by_pid = ProcessCpuClock::of(std::process::id()).expect("own pid has a clock");
        let (a, b) = (own.now(), by_pid.now());
        busy(Duration::from_millis(5));
        let (a2, b2) = (own.now(), by_pid.now());
        assert!(spent(a, a2).unwrap() >= Duration::from_millis(5));
        assert!(spent(b, b2).unwrap() >= Duration::from_millis(5));
        assert_eq!(spent(None, a2), None);
    }
}
