//! How much of the measured window each shard thread spent on a CPU and waiting for one, from
//! `/proc/self/task/TID/schedstat` (on-CPU ns, run-queue wait ns) read by the coordinator at
//! the window's edges. A yielding shard is always runnable, so what it did not get of the
//! window it spent on the run queue: the machine's CPU, not the bucket, was its bound.

use std::time::Duration;

/// This thread's id, for [`Schedstat::read`].
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// A thread's scheduler totals so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    pub on_cpu_ns: u64,
    pub runq_ns: u64,
}

impl Schedstat {
    /// The totals of thread `tid` of this process (zero if it is gone or the kernel has no
    /// schedstats).
    pub fn read(tid: i32) -> Schedstat {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"));
        let mut fields = text.iter().flat_map(|t| t.split_whitespace());
        let mut next = || fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        Schedstat {
            on_cpu_ns: next(),
            runq_ns: next(),
        }
    }

    /// The shares of `elapsed` spent on a CPU and on the run queue from `start` to `self`.
    pub fn shares_since(self, start: Schedstat, elapsed: Duration) -> (f64, f64) {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let share = |a: u64, b: u64| a.saturating_sub(b) as f64 / 1e9 / secs;
        (
            share(self.on_cpu_ns, start.on_cpu_ns),
            share(self.runq_ns, start.runq_ns),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_thread_gains_on_cpu_time() {
        let tid = current_tid();
        let a = Schedstat::read(tid);
        let until = std::time::Instant::now() + Duration::from_millis(30);
        let mut x = 0u64;
        while std::time::Instant::now() < until {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = Schedstat::read(tid);
        assert!(b.on_cpu_ns > a.on_cpu_ns, "{a:?} {b:?}");
        let (cpu, _) = b.shares_since(a, Duration::from_millis(30));
        assert!(cpu > 0.0 && cpu <= 1.5, "{cpu}");
    }
}
