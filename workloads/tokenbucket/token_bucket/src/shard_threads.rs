//! The shard threads of a run, as both suites' coordinators start and stop them: a thread a
//! shard (`shard-N`, pinned one per CPU when there are CPUs enough, as seastar pins its
//! reactors), all released together once the measured window is set, stopped by one flag and
//! joined for what each returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cpu_pinning;
use crate::measure_window::MeasureWindow;
use crate::reactor::{monotonic_ns, set_timer_slack_ns};

/// The shards' fairness: the smallest of their totals over the largest (0 when all are 0).
pub fn fairness(totals: &[u64]) -> f64 {
    let min = totals.iter().copied().min().unwrap_or(0);
    let max = totals.iter().copied().max().unwrap_or(0);
    if max == 0 {
        0.0
    } else {
        min as f64 / max as f64
    }
}

/// What a shard thread gets from the coordinator.
pub struct Shard {
    pub index: usize,
    /// The CPU to pin to, when the run pins.
    pub cpu: Option<usize>,
    pub stop: Arc<AtomicBool>,
    pub window: Arc<MeasureWindow>,
    start: Arc<Barrier>,
}

impl Shard {
    /// Pins the thread (when planned) and sets its timer slack to 1 ns; the pinning's outcome
    /// for [`Shard::note_pinning`].
    pub fn settle(&self) -> Option<Result<(), String>> {
        let pinned = self.cpu.map(cpu_pinning::pin_current_thread);
        set_timer_slack_ns(1);
        pinned
    }

    /// Waits for the coordinator to start the window.
    pub fn wait_start(&self) {
        self.start.wait();
    }

    /// The shard's own seed from the run's.
    pub fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.index as u64
    }

    /// Says on stderr that the shard could not be pinned.
    pub fn note_pinning(&self, pinned: Option<Result<(), String>>) {
        if let Some(Err(e)) = pinned {
            eprintln!("note: shard {} not pinned: {e}", self.index);
        }
    }
}

/// The started shard threads, each returning a `T`.
pub struct ShardThreads<T> {
    handles: Vec<JoinHandle<T>>,
    stop: Arc<AtomicBool>,
    start: Arc<Barrier>,
    window: Arc<MeasureWindow>,
    pinned: bool,
}

impl<T: Send + 'static> ShardThreads<T> {
    /// Starts `shards` threads, pinned when `pin` and there are as many CPUs; `body` makes each
    /// thread's work from its [`Shard`]. On an error the threads started so far wait for the
    /// start that never comes: the process's exit ends them.
    pub fn spawn<F>(
        shards: usize,
        pin: bool,
        mut body: impl FnMut(Shard) -> F,
    ) -> Result<Self, String>
    where
        F: FnOnce() -> T + Send + 'static,
    {
        let cpus = cpu_pinning::allowed_cpus();
        let pinned = pin && cpus.len() >= shards;
        let stop = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(shards + 1));
        let window = Arc::new(MeasureWindow::default());
        let mut handles = Vec::with_capacity(shards);
        for index in 0..shards {
            let work = body(Shard {
                index,
                cpu: if pinned {
                    cpus.get(index).copied()
                } else {
                    None
                },
                stop: stop.clone(),
                window: window.clone(),
                start: start.clone(),
            });
            let handle = std::thread::Builder::new()
                .name(format!("shard-{index}"))
                .spawn(work)
                .map_err(|e| format!("cannot start shard {index}: {e}"))?;
            handles.push(handle);
        }
        Ok(ShardThreads {
            handles,
            stop,
            start,
            window,
            pinned,
        })
    }

    /// Whether the shards are pinned one per CPU.
    pub fn pinned(&self) -> bool {
        self.pinned
    }

    /// Sets the window `warmup` from now and `duration` long, and releases the shards; returns
    /// the window's start and end (`monotonic_ns`).
    pub fn start(&self, warmup: Duration, duration: Duration) -> (u64, u64) {
        set_timer_slack_ns(1);
        let start_ns = monotonic_ns() + warmup.as_nanos() as u64;
        let end_ns = start_ns + duration.as_nanos() as u64;
        self.window.set(start_ns, end_ns);
        self.start.wait();
        (start_ns, end_ns)
    }

    /// Stops the shards and joins them, in shard order.
    pub fn stop(self) -> Result<Vec<T>, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a shard panicked".to_string()))
            .collect()
    }

    /// Stops shards that were never started (an error before the window).
    pub fn abandon(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.start.wait();
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_is_the_smallest_total_over_the_largest() {
        assert_eq!(fairness(&[5, 10, 8]), 0.5);
        assert_eq!(fairness(&[0, 0]), 0.0);
        assert_eq!(fairness(&[]), 0.0);
    }

    /// Every shard runs after the start, sees the window set, and is joined in shard order.
    #[test]
    fn shards_start_together_inside_the_set_window_and_join_in_order() {
        let threads = ShardThreads::spawn(3, false, |shard| {
            move || {
                shard.wait_start();
                let set = shard.window.share_of(0, u64::MAX) > 0.0;
                while !shard.stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                (shard.index, set, shard.seed(7))
            }
        })
        .unwrap();
        assert!(!threads.pinned());
        let (start, end) = threads.start(Duration::ZERO, Duration::from_millis(1));
        assert_eq!(end - start, 1_000_000);
        let got = threads.stop().unwrap();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(
            got.iter().all(|g| g.1),
            "the window is set before the shards start"
        );
        assert_ne!(got[0].2, got[1].2, "shards get their own seeds");
    }
}
