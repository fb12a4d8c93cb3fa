package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// stackMask is the number of setting stacks minus one (8 stacks, as vitess hard-codes).
const stackMask = 7

// rescueInterval is the period of vitess's waitlist worker.
const rescueInterval = 100 * time.Millisecond

var monoStart = time.Now()

func mono() int64 { return int64(time.Since(monoStart)) }

// smartPool is vitess's smartconnpool (PR #14034, as in v0.22.1): one lock-free stack of
// clean connections, 8 stacks of connections with a setting (chosen by the interned
// setting's bucket), a FIFO waitlist to which returned connections are handed directly,
// and a worker that every 100 ms expires waiters and rescues starving ones.
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

	sizing
	active   atomic.Int64 // open connections (idle, lent out, or being opened)
	borrowed atomic.Int64
	waits    atomic.Int64
	idle     atomic.Int64

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
	p.wait.init(cfg.HandOff)
	p.capacity.Store(int64(cfg.Capacity))
	runWorker(&p.workers, p.stop, rescueInterval, p.rescue)
	startIdleWorker(&p.workers, p.stop, cfg.IdleTimeout, p.closeIdle)
	return p
}

// pop pops the top node of s and claims it from the idle worker.
func (p *smartPool) pop(s *stack) *node {
	n := s.pop()
	if n != nil {
		n.borrow()
	}
	return n
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
	// (one apply); else a new one; else the setting stacks from its own on (another
	// setting costs reset + apply).
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
	return p.popSettings(b)
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

// waitFor queues a waiter and blocks until a connection is handed to it. As in vitess,
// it does not watch ctx: the rescue worker wakes it once ctx has ended. It does not look
// at the stacks again either: a connection pushed between its lookup and its queueing
// waits there for the rescue worker.
func (p *smartPool) waitFor(ctx context.Context, setting *Setting) (*node, error) {
	p.waits.Add(1)
	w := p.wait.enqueue(ctx, setting)
	defer p.wait.recycle(w)
	var n *node
	select {
	case n = <-w.ch:
	case <-p.done:
		// Queued after Close's last sweep of the waitlist.
		if p.wait.remove(w) {
			return nil, ErrClosed
		}
		n = <-w.ch
	}
	switch {
	case n != nil:
		return n, nil
	case ctx.Err() != nil:
		return nil, ErrTimeout
	}
	return nil, ErrClosed // woken by Close
}

func (p *smartPool) Put(c *Conn) { p.giveBack(c, false) }

// giveBack returns c's node to the pool, with a new connection in its place when tainted;
// over capacity after a shrink (or after Close, capacity 0) it is closed instead.
func (p *smartPool) giveBack(c *Conn, tainted bool) {
	n := p.slab.get(c.slot)
	p.borrowed.Add(-1)
	if p.overCapacity() {
		p.closeNode(n)
		return
	}
	if tainted {
		p.reopen(n)
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
// one, else onto its stack. It reports whether a waiter got it.
func (p *smartPool) release(n *node) bool {
	if p.wait.handOff(n) {
		return true
	}
	p.push(n)
	return false
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

// rescue is vitess's waitlist worker: it wakes the waiters whose context has ended, and
// for each waiter never skipped it hands over an idle connection, if any. A returner
// that found no waiter and pushed, racing a Get that found no connection and queued,
// leaves both idle; this is what serves that waiter.
func (p *smartPool) rescue() {
	for n := p.wait.expire(false); n > 0 && p.returnAny(); n-- {
	}
}

// returnAny pops an idle connection (clean stack first, then the setting stacks in
// order) and releases it again; true if a waiter got it.
func (p *smartPool) returnAny() bool {
	n := p.pop(&p.clean)
	if n == nil {
		n = p.popSettings(0)
	}
	return n != nil && p.release(n)
}

// Taint closes c and, as vitess's put(nil), opens a new connection in its place and
// returns that one, so a waiter is served as by a Put.
func (p *smartPool) Taint(c *Conn) { p.giveBack(c, true) }

// reopen replaces n's connection with a new, clean one, as vitess's connReopen; the old
// one is closed first so that the two never count against the capacity together.
func (p *smartPool) reopen(n *node) {
	n.conn.Load().Close()
	c := p.tracker.Open()
	c.slot = n.idx
	n.conn.Store(c)
}

// serveWaitersWithNew opens connections for the waiters after the capacity grew.
func (p *smartPool) serveWaitersWithNew() {
	for p.wait.len() > 0 && !p.closed.Load() {
		n := p.getNew()
		if n == nil {
			return
		}
		p.release(n)
	}
}

func (p *smartPool) SetCapacity(ctx context.Context, n int) error {
	return p.resize(func() error { return p.setCapacity(ctx, n) })
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
			p.wait.expire(true)
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

// closeIdle closes the connections idle for longer than the timeout and reopens them in
// place, as vitess's closeIdleResources: the node stays where it is in its stack and the
// pool's open count is unchanged; the new connection has no setting. It walks the stacks
// without popping, best effort.
func (p *smartPool) closeIdle() {
	now, timeout := mono(), int64(p.idleTimeout)
	limit := p.slab.size() + 1
	visit := func(n *node) {
		if !n.claimIdle(now, timeout) {
			return
		}
		p.reopen(n)
		n.used.Store(now)
		p.idle.Add(1)
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
