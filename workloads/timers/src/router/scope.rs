//! Which router task the current thread is polling, so that a router's state can check, in
//! debug builds, that only that task touches it.

use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};

/// The key of no router.
const NONE: u64 = 0;

static NEXT_KEY: AtomicU64 = AtomicU64::new(NONE + 1);

thread_local! {
    static POLLING: Cell<u64> = const { Cell::new(NONE) };
}

/// A key of its own for a new router.
pub(super) fn new_key() -> u64 {
    NEXT_KEY.fetch_add(1, Ordering::Relaxed)
}

/// Whether this thread is inside a poll of the router with `key`.
pub(super) fn is_polling(key: u64) -> bool {
    POLLING.with(Cell::get) == key
}

/// Runs `future` as the router with `key`: in debug builds every poll of it is marked as a
/// poll of that router.
pub(super) async fn run_as<F: Future>(key: u64, future: F) -> F::Output {
    let mut future = pin!(future);
    poll_fn(|cx| {
        let _mark = cfg!(debug_assertions).then(|| Mark::enter(key));
        future.as_mut().poll(cx)
    })
    .await
}

/// Marks the thread as polling a router until dropped.
struct Mark {
    previous: u64,
}

impl Mark {
    fn enter(key: u64) -> Mark {
        Mark {
            previous: POLLING.with(|polling| polling.replace(key)),
        }
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        POLLING.with(|polling| polling.set(self.previous));
    }
}
