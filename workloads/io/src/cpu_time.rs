//! CPU time of the whole process (user + system of every thread): `getrusage(RUSAGE_SELF)`,
//! read at the measured window's edges for `cpu_ns_per_op` (docs/workload-contract.md,
//! "CPU per op").

/// User + system CPU of every thread of this process so far, in ns.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: a zeroed rusage is valid; getrusage writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_work() {
        let a = process_cpu_ns();
        let mut x = 0u64;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(30);
        while std::time::Instant::now() < until {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_ns() > a);
    }
}
