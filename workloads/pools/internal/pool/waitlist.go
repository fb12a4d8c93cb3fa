package pool

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// maxAge is how many hand-offs may skip a waiter before it is served regardless of the
// setting it wants (vitess found 8 empirically).
const maxAge = 8

// waiter is a Get blocked on smart-lifo's waitlist.
type waiter struct {
	ctx        context.Context
	setting    *Setting
	ch         chan *node // buffered: a hand-off never blocks; nil = woken without one
	age        int
	prev, next *waiter
	listed     bool
}

// waitlist is a FIFO of waiters, a doubly linked list under one mutex (waiting is
// dominated by the backend's response times, so the lock is not contended).
type waitlist struct {
	mu          sync.Mutex
	head, tail  *waiter
	n           atomic.Int64
	free        sync.Pool
	preferClean bool
}

func (wl *waitlist) init(rule HandOff) {
	wl.free.New = func() any { return &waiter{ch: make(chan *node, 1)} }
	wl.preferClean = rule == HandOffPreferClean
}

func (wl *waitlist) len() int64 { return wl.n.Load() }

func (wl *waitlist) enqueue(ctx context.Context, setting *Setting) *waiter {
	w := wl.free.Get().(*waiter)
	w.ctx, w.setting, w.age = ctx, setting, 0
	wl.mu.Lock()
	w.prev, w.next, w.listed = wl.tail, nil, true
	if wl.tail != nil {
		wl.tail.next = w
	} else {
		wl.head = w
	}
	wl.tail = w
	wl.n.Add(1)
	wl.mu.Unlock()
	return w
}

func (wl *waitlist) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		wl.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		wl.tail = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	wl.n.Add(-1)
}

// remove takes w off the list; false if a hand-off (or an expiry) already took it.
func (wl *waitlist) remove(w *waiter) bool {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if !w.listed {
		return false
	}
	wl.unlink(w)
	return true
}

func (wl *waitlist) recycle(w *waiter) {
	w.ctx, w.setting = nil, nil
	wl.free.Put(w)
}

// handOff gives n to the waiter pick chooses; false if nobody waits.
func (wl *waitlist) handOff(n *node) bool {
	if wl.n.Load() == 0 {
		return false
	}
	setting := n.conn.Load().setting
	wl.mu.Lock()
	target := wl.pick(setting)
	if target == nil {
		wl.mu.Unlock()
		return false
	}
	wl.unlink(target)
	wl.mu.Unlock()
	target.ch <- n
	// Let the waiter run now, as vitess's semaphore release with hand-off does.
	runtime.Gosched()
	return true
}

// pick is vitess's rule: the front-most waiter that wants setting or has been skipped
// more than maxAge times, else the front. Every waiter scanned before the choice ages
// by one (with no match, all of them); the ones behind it do not.
func (wl *waitlist) pick(setting *Setting) *waiter {
	if wl.preferClean {
		return wl.pickPreferClean(setting)
	}
	for w := wl.head; w != nil; w = w.next {
		if w.age > maxAge || w.setting == setting {
			return w
		}
		w.age++
	}
	return wl.head
}

// pickPreferClean is the rule as PR #14034 describes it: with no waiter wanting setting
// or aged past maxAge, the front-most one wanting a clean connection (a reset is cheaper
// than reset + apply), else the front. The waiters before the choice age by one.
func (wl *waitlist) pickPreferClean(setting *Setting) *waiter {
	var target, firstClean *waiter
	for w := wl.head; w != nil; w = w.next {
		if w.age > maxAge || w.setting == setting {
			target = w
			break
		}
		if firstClean == nil && w.setting == nil {
			firstClean = w
		}
	}
	if target == nil {
		target = firstClean
	}
	if target == nil {
		target = wl.head
	}
	for w := wl.head; w != target; w = w.next {
		w.age++
	}
	return target
}

// expire wakes (with nil) and removes the waiters whose context has ended, or all of
// them if force. It returns how many of the others were never skipped by a hand-off:
// vitess's bound on the waiters that may be starving next to an idle connection.
func (wl *waitlist) expire(force bool) (maybeStarving int) {
	if wl.n.Load() == 0 {
		return 0
	}
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for w := wl.head; w != nil; {
		next := w.next
		if force || w.ctx.Err() != nil {
			wl.unlink(w)
			w.ch <- nil
		} else if w.age == 0 {
			maybeStarving++
		}
		w = next
	}
	return maybeStarving
}
