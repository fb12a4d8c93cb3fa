package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// stackMask is the number of setting stacks minus one (8 stacks, as vitess hard-codes).
const stackMask = 7

// maxAge is how many hand-offs may skip a waiter before it is served regardless of the
// setting it wants (vitess found 8 empirically).
const maxAge = 8

var monoStart = time.Now()

func mono() int64 { return int64(time.Since(monoStart)) }

// smartPool is vitess's smartconnpool (PR #14034): one lock-free stack of clean
// connections, 8 stacks of connections with a setting (chosen by the interned setting's
// bucket), and a FIFO waitlist to which returned connections are handed directly.
type smartPool struct {
	slab     slab
	clean    stack
	settings [stackMask + 1]stack
	// fresh is the setting stack a connection was last pushed to, where a clean Get
	// looks first when the clean stack is empty.
	fresh atomic.Uint32
	wait  waitlist

	tracker     *Tracker
	idleTimeout time.Duration

	capacity atomic.Int64
	active   atomic.Int64 // open connections (idle, lent out, or being opened)
	borrowed atomic.Int64
	waits    atomic.Int64
	idle     atomic.Int64
	capMu    sync.Mutex

	closed  atomic.Bool
	done    chan struct{}
	stop    chan struct{}
	workers sync.WaitGroup
	once    sync.Once
}

func newSmart(cfg Config) *smartPool {
	p := &smartPool{
		tracker:     cfg.Tracker,
		idleTimeout: cfg.IdleTimeout,
		done:        make(chan struct{}),
		stop:        make(chan struct{}),
	}
	p.clean.slab = &p.slab
	for i := range p.settings {
		p.settings[i].slab = &p.slab
	}
	p.wait.init()
	p.capacity.Store(int64(cfg.Capacity))
	startIdleWorker(&p.workers, p.stop, cfg.IdleTimeout, p.closeIdle)
	return p
}

// pop pops from s until it gets a node the idle worker has not closed; closed ones are
// dropped (their slot freed) as they surface.
func (p *smartPool) pop(s *stack) *node {
	for n := s.pop(); n != nil; n = s.pop() {
		if n.borrow() {
			return n
		}
		p.slab.release(n)
	}
	return nil
}

// popSettings tries the 8 setting stacks starting at start.
func (p *smartPool) popSettings(start uint32) *node {
	for i := uint32(0); i <= stackMask; i++ {
		if n := p.pop(&p.settings[(start+i)&stackMask]); n != nil {
			return n
		}
	}
	return nil
}

// getNew opens a connection if the pool is under capacity; nil otherwise.
func (p *smartPool) getNew() *node {
	for {
		open := p.active.Load()
		if open >= p.capacity.Load() {
			return nil
		}
		if p.active.CompareAndSwap(open, open+1) {
			n := p.slab.alloc()
			c := p.tracker.Open()
			c.slot = n.idx
			n.used.Store(timeBusy)
			n.conn.Store(c)
			return n
		}
	}
}

// lookup is the search order of a Get before it waits, as vitess does it.
func (p *smartPool) lookup(setting *Setting) *node {
	if setting == nil {
		// Clean stack; else open a new connection (cheaper than a reset); else the setting
		// stack pushed to last, then the others (the connection will be reset).
		if n := p.pop(&p.clean); n != nil {
			return n
		}
		if n := p.getNew(); n != nil {
			return n
		}
		return p.popSettings(p.fresh.Load())
	}
	// The setting's own stack (almost surely the same setting); else a clean connection
	// (one apply); else a new one; else the other setting stacks (reset + apply).
	b := setting.Bucket()
	if n := p.pop(&p.settings[b]); n != nil {
		return n
	}
	if n := p.pop(&p.clean); n != nil {
		return n
	}
	if n := p.getNew(); n != nil {
		return n
	}
	return p.popSettings(b + 1)
}

func (p *smartPool) Get(ctx context.Context, setting *Setting) (*Conn, error) {
	if ctx.Err() != nil {
		return nil, ErrTimeout
	}
	if p.closed.Load() || p.capacity.Load() == 0 {
		return nil, ErrClosed
	}
	n := p.lookup(setting)
	if n == nil {
		var err error
		if n, err = p.waitFor(ctx, setting); err != nil {
			return nil, err
		}
	}
	c := n.conn.Load()
	applySetting(ctx, c, setting)
	p.borrowed.Add(1)
	return c, nil
}

// waitFor queues a waiter and blocks until a connection is handed to it.
func (p *smartPool) waitFor(ctx context.Context, setting *Setting) (*node, error) {
	p.waits.Add(1)
	w := p.wait.enqueue(setting)
	defer p.wait.recycle(w)
	// A connection may have been pushed after our lookup and before we were queued, by a
	// returner that saw no waiter: look once more now that we are visible (the returner
	// looks for waiters again after its push, so one of the two sees the other).
	if n := p.lookup(setting); n != nil {
		if p.wait.remove(w) {
			return n, nil
		}
		// Someone is handing us a connection already: return this one.
		p.release(n)
		return p.received(<-w.ch)
	}
	select {
	case n := <-w.ch:
		return p.received(n)
	case <-ctx.Done():
		if p.wait.remove(w) {
			return nil, ErrTimeout
		}
		return p.received(<-w.ch)
	case <-p.done:
		if p.wait.remove(w) {
			return nil, ErrClosed
		}
		return p.received(<-w.ch)
	}
}

func (p *smartPool) received(n *node) (*node, error) {
	if n == nil {
		return nil, ErrClosed // woken by Close
	}
	return n, nil
}

func (p *smartPool) Put(c *Conn) {
	n := p.slab.get(c.slot)
	p.borrowed.Add(-1)
	// Over capacity after a shrink (or after Close, capacity 0): close it instead.
	if p.overCapacity() {
		p.closeNode(n)
		return
	}
	p.release(n)
}

// overCapacity claims the close of one connection if more are open than the capacity
// (after SetCapacity shrank it).
func (p *smartPool) overCapacity() bool {
	for {
		open := p.active.Load()
		if open <= p.capacity.Load() {
			return false
		}
		if p.active.CompareAndSwap(open, open-1) {
			return true
		}
	}
}

// closeNode closes a node's connection whose active count was already given back.
func (p *smartPool) closeNode(n *node) {
	n.conn.Load().Close()
	p.slab.release(n)
}

// release returns a node that is not in any stack: straight to a waiter if there is
// one, else onto its stack.
func (p *smartPool) release(n *node) {
	if p.wait.handOff(n) {
		return
	}
	p.push(n)
	// A waiter that queued after our hand-off check and missed our push in its own
	// re-check is served here.
	for p.wait.len() > 0 {
		m := p.popAny()
		if m == nil {
			return
		}
		if !p.wait.handOff(m) {
			p.push(m)
		}
	}
}

func (p *smartPool) push(n *node) {
	n.used.Store(mono())
	s := n.conn.Load().setting
	if s == nil {
		p.clean.push(n)
		return
	}
	b := s.Bucket()
	p.settings[b].push(n)
	p.fresh.Store(b)
}

func (p *smartPool) popAny() *node {
	if n := p.pop(&p.clean); n != nil {
		return n
	}
	return p.popSettings(0)
}

func (p *smartPool) Taint(c *Conn) {
	n := p.slab.get(c.slot)
	p.borrowed.Add(-1)
	// Close before freeing the capacity slot, so that a new connection never overlaps it.
	p.closeNode(n)
	p.active.Add(-1)
	// The freed slot may serve a waiter with a new connection.
	p.serveWaitersWithNew()
}

func (p *smartPool) serveWaitersWithNew() {
	for p.wait.len() > 0 && !p.closed.Load() {
		n := p.getNew()
		if n == nil {
			return
		}
		p.release(n)
	}
}

func (p *smartPool) Capacity() int { return int(p.capacity.Load()) }

func (p *smartPool) SetCapacity(ctx context.Context, n int) error {
	p.capMu.Lock()
	defer p.capMu.Unlock()
	return p.setCapacity(ctx, n)
}

// setCapacity closes idle connections until at most n are open, waiting for lent-out
// ones (Put closes them while the pool is over capacity).
func (p *smartPool) setCapacity(ctx context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("negative capacity %d", n)
	}
	newcap := int64(n)
	if p.capacity.Swap(newcap) < newcap {
		p.serveWaitersWithNew()
	}
	for {
		if newcap == 0 {
			p.wait.expireAll()
		}
		if !p.overCapacity() {
			return nil
		}
		node := p.popSettings(p.fresh.Load())
		if node == nil {
			node = p.pop(&p.clean)
		}
		if node != nil {
			p.closeNode(node)
			continue
		}
		p.active.Add(1) // nothing idle to close: give the claim back and wait
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shrinking to %d: %w (%d connections still lent out)",
				n, err, p.borrowed.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// closeIdle closes connections idle for longer than the timeout. It walks the stacks
// without popping and marks expired nodes in place; a Get that pops one drops it.
func (p *smartPool) closeIdle() {
	now, timeout := mono(), int64(p.idleTimeout)
	limit := p.slab.size() + 1
	visit := func(n *node) {
		if c := n.expire(now, timeout); c != nil {
			c.Close()
			p.active.Add(-1)
			p.idle.Add(1)
		}
	}
	p.clean.walk(limit, visit)
	for i := range p.settings {
		p.settings[i].walk(limit, visit)
	}
}

func (p *smartPool) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.workers.Wait()
		p.capMu.Lock()
		defer p.capMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		defer cancel()
		err := p.setCapacity(ctx, 0)
		p.closed.Store(true)
		close(p.done)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			panic(err)
		}
	})
}

func (p *smartPool) Stats() Stats {
	return Stats{Active: p.active.Load(), InUse: p.borrowed.Load(), Waits: p.waits.Load(),
		IdleClosed: p.idle.Load()}
}

// waiter is a Get blocked on the waitlist.
type waiter struct {
	setting    *Setting
	ch         chan *node // buffered: a hand-off never blocks
	age        int
	prev, next *waiter
	listed     bool
}

// waitlist is a FIFO of waiters, a doubly linked list under one mutex (waiting is
// dominated by the backend's response times, so the lock is not contended).
type waitlist struct {
	mu         sync.Mutex
	head, tail *waiter
	n          atomic.Int64
	free       sync.Pool
}

func (wl *waitlist) init() {
	wl.free.New = func() any { return &waiter{ch: make(chan *node, 1)} }
}

func (wl *waitlist) len() int64 { return wl.n.Load() }

func (wl *waitlist) enqueue(setting *Setting) *waiter {
	w := wl.free.Get().(*waiter)
	w.setting, w.age = setting, 0
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

// remove takes w off the list; false if a hand-off (or Close) already took it.
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
	w.setting = nil
	wl.free.Put(w)
}

// handOff gives n to the best waiter: the front-most one that has been skipped more
// than maxAge times or wants n's setting; else the front-most one wanting a clean
// connection (a reset is cheaper than reset + apply); else the front. The waiters
// skipped over age by one.
func (wl *waitlist) handOff(n *node) bool {
	if wl.n.Load() == 0 {
		return false
	}
	setting := n.conn.Load().setting
	wl.mu.Lock()
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
	if target == nil {
		wl.mu.Unlock()
		return false
	}
	for w := wl.head; w != target; w = w.next {
		w.age++
	}
	wl.unlink(target)
	wl.mu.Unlock()
	target.ch <- n
	// Let the waiter run now, as vitess does after its hand-off.
	runtime.Gosched()
	return true
}

// expireAll wakes every waiter with nothing (the pool is closing).
func (wl *waitlist) expireAll() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for w := wl.head; w != nil; {
		next := w.next
		wl.unlink(w)
		w.ch <- nil
		w = next
	}
}
