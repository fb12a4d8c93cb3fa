"""The frames that make a stack lock-related, for `mutex_share` (docs/profiles.md)."""

from __future__ import annotations

from harness.errors import BadInput

# Case-insensitive substrings of a frame name. Kernel spinlocks (`_raw_spin_lock`,
# `queued_spin_lock_slowpath`, taken in every socket call) are left out on purpose: they are
# not the program's locks; hence no bare `lock_slow` (parking_lot's is matched by its crate).
DEFAULT_MUTEX_PATTERNS = (
    "futex",  # the syscall and the kernel's futex_wait/futex_wake frames
    "mutex",  # pthread_mutex_*, std/tokio/parking_lot Mutex, Go sync.(*Mutex)
    "parking_lot",
    "lock_contended",  # std's futex mutex
    "lockslow",  # Go sync.(*Mutex).lockSlow, (*RWMutex).rLockSlow
    "rwlock",
    "condvar",
    "semacquire",  # Go runtime semaphores behind sync
    "runtime.lock",  # Go runtime.lock2 and friends
    "reentrantlock",  # Java
    "abstractqueuedsynchronizer",
    "locksupport.park",
)


def parse_patterns(text: str) -> tuple[str, ...]:
    """`--mutex-patterns a,b,+c`: a list replaces the defaults; with a leading `+` the words
    are added to them."""
    extend = text.startswith("+")
    words = [w.strip().lower() for w in text.lstrip("+").split(",") if w.strip()]
    if not words:
        raise BadInput("--mutex-patterns: expected comma-separated frame substrings")
    chosen = [*DEFAULT_MUTEX_PATTERNS, *words] if extend else words
    return tuple(dict.fromkeys(chosen))
