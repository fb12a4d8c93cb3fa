//! `CLOCK_MONOTONIC` in nanoseconds, and absolute sleeps on it.

/// Now on `CLOCK_MONOTONIC`, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `target_ns` (absolute, so no drift from
/// computing a relative delay); returns the time it woke.
pub fn sleep_until_ns(target_ns: u64) -> u64 {
    let ts = libc::timespec {
        tv_sec: (target_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (target_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with
        // TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            break;
        }
    }
    monotonic_ns()
}

/// Sets this thread's timer slack (the kernel may delay a timed wake-up by that much to
/// batch wake-ups; 50 µs by default). Returns false if the kernel refused.
pub fn set_timer_slack_ns(slack_ns: u64) -> bool {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns as libc::c_ulong, 0, 0, 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_until_the_target() {
        set_timer_slack_ns(1);
        let target = monotonic_ns() + 300_000;
        let woke = sleep_until_ns(target);
        assert!(woke >= target);
    }
}
