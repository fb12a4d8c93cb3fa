//! Spawning and joining the engines' named threads.

use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// The expiry callback, shared by all threads of an engine.
pub(crate) type Callback<T> = Arc<dyn Fn(T) + Send + Sync>;

/// Spawns a named thread; names show up in profiles and in `top -H`.
pub(crate) fn spawn_named(name: String, body: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    thread::Builder::new()
        .name(name)
        .spawn(body)
        .expect("failed to spawn a timer thread")
}

/// Joins `handle`, re-raising a panic of that thread (a panicking callback, or the wheel's
/// misplaced-timeout check) unless the current thread is already unwinding.
pub(crate) fn join(handle: JoinHandle<()>) {
    if let Err(panic) = handle.join() {
        if !thread::panicking() {
            std::panic::resume_unwind(panic);
        }
    }
}
