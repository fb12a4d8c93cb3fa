package pool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchharness/pools/internal/poll"
	"github.com/benchharness/pools/internal/pool"
	"github.com/benchharness/pools/internal/pooltest"
)

// The built-in strategies; the vitess adapter runs the same checks in its own module.
var strategies = []string{"fifo-channel", "smart-lifo", "puddle"}

func forEach(t *testing.T, f func(t *testing.T, strategy string)) {
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) { f(t, s) })
	}
}

// A connection is never lent out twice at once, the pool never opens more than its
// capacity, every Get returns an open connection with the setting asked for, and Close
// leaves nothing behind; also while the idle worker closes (and reopens) connections.
func TestStressExclusiveWithinCapacity(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) { stress(t, idle) })
	}
}

func stress(t *testing.T, idleTimeout time.Duration) {
	forEach(t, func(t *testing.T, strategy string) {
		before := runtime.NumGoroutine()
		const capacity = 4
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: capacity, IdleTimeout: idleTimeout})
		pooltest.Stress(t, p, tr, capacity)
		pooltest.ClosedForGood(t, p, tr, before)
	})
}

// Waiters either get a connection or time out once past their deadline; none is stranded.
func TestWaitersServedOrTimedOut(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		before := runtime.NumGoroutine()
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: 1})
		c, err := p.Get(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var timedOut atomic.Int64
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
				defer cancel()
				if _, err := p.Get(ctx, nil); errors.Is(err, pool.ErrTimeout) {
					timedOut.Add(1)
				} else {
					t.Errorf("get with deadline: %v, want ErrTimeout", err)
				}
			}()
		}
		wg.Wait()
		if timedOut.Load() != 4 {
			t.Fatalf("%d of 4 timed out", timedOut.Load())
		}
		// Now waiters without deadlines: every one is served in turn.
		var served atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := p.Get(context.Background(), nil)
				if err != nil {
					t.Errorf("get: %v", err)
					return
				}
				served.Add(1)
				p.Put(c)
			}()
		}
		time.Sleep(10 * time.Millisecond)
		p.Put(c)
		wg.Wait()
		if served.Load() != 8 {
			t.Errorf("%d of 8 served", served.Load())
		}
		p.Close()
		pooltest.NoLeaks(t, tr, before)
	})
}

// Close wakes the waiters with pool.ErrClosed and waits for lent-out connections. puddle's
// Close does not interrupt its semaphore: its waiters fail with pool.ErrClosed only as
// lent-out resources come back.
func TestCloseWakesWaiters(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		before := runtime.NumGoroutine()
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: 1})
		c, _ := p.Get(context.Background(), nil)
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := p.Get(context.Background(), nil)
				errs <- err
			}()
		}
		time.Sleep(20 * time.Millisecond)
		closed := make(chan struct{})
		go func() { p.Close(); close(closed) }()
		if strategy == "puddle" {
			time.Sleep(10 * time.Millisecond)
			p.Put(c)
		}
		for range 3 {
			select {
			case err := <-errs:
				if !errors.Is(err, pool.ErrClosed) {
					t.Errorf("waiter got %v, want ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("waiter not woken by Close")
			}
		}
		if strategy != "puddle" {
			time.Sleep(10 * time.Millisecond)
			p.Put(c)
		}
		<-closed
		pooltest.NoLeaks(t, tr, before)
	})
}

// Shrinking closes idle connections at once and lent-out ones as they come back;
// growing lets more be opened.
func TestCapacityShrinkGrow(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		before := runtime.NumGoroutine()
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: 4, MaxCapacity: 6})
		ctx := context.Background()
		var conns []*pool.Conn
		for range 4 {
			c, err := p.Get(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		// Shrink to 2 with all 4 lent out: waits for two of them.
		done := make(chan error, 1)
		go func() { done <- p.SetCapacity(ctx, 2) }()
		time.Sleep(10 * time.Millisecond)
		for _, c := range conns {
			p.Put(c)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "2 connections open", func() bool { return tr.Live() <= 2 })
		a, _ := p.Get(ctx, nil)
		b, _ := p.Get(ctx, nil)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		if _, err := p.Get(short, nil); !errors.Is(err, pool.ErrTimeout) {
			t.Errorf("third get at capacity 2: %v, want ErrTimeout", err)
		}
		cancel()
		if tr.Live() > 2 {
			t.Errorf("%d open at capacity 2", tr.Live())
		}
		// Grow to 6: four more can be had at once.
		if err := p.SetCapacity(ctx, 6); err != nil {
			t.Fatal(err)
		}
		more := []*pool.Conn{a, b}
		for range 4 {
			short, cancel := context.WithTimeout(ctx, time.Second)
			c, err := p.Get(short, nil)
			cancel()
			if err != nil {
				t.Fatalf("get after growing: %v", err)
			}
			more = append(more, c)
		}
		if p.Capacity() != 6 || tr.Live() != 6 {
			t.Errorf("capacity %d, open %d; want 6, 6", p.Capacity(), tr.Live())
		}
		for _, c := range more {
			p.Put(c)
		}
		p.Close()
		pooltest.NoLeaks(t, tr, before)
	})
}

// Connections idle for longer than the idle timeout are closed. fifo-channel and
// smart-lifo reopen each in place, as both vitess pools do, so the pool keeps its open
// count; puddle destroys them, as pgxpool does.
func TestIdleClosing(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		before := runtime.NumGoroutine()
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: 4, IdleTimeout: 20 * time.Millisecond})
		ctx := context.Background()
		var conns []*pool.Conn
		for range 4 {
			c, _ := p.Get(ctx, nil)
			conns = append(conns, c)
		}
		for _, c := range conns {
			p.Put(c)
		}
		// The idle worker closes a connection, counts it, then opens its replacement: wait
		// for the whole of it, not for the closing alone.
		poll.Until(t, "the idle connections closed and counted", func() bool {
			for _, c := range conns {
				if !c.IsClosed() {
					return false
				}
			}
			return p.Stats().IdleClosed >= 4
		})
		if strategy == "puddle" {
			poll.Until(t, "none open", func() bool { return p.Stats().Active == 0 && tr.Live() == 0 })
		} else {
			poll.Until(t, "4 reopened in place", func() bool { return tr.Opened() >= 8 })
			if got := p.Stats().Active; got != 4 {
				t.Errorf("%d open after idle closing, want 4 (reopened in place)", got)
			}
		}
		c, err := p.Get(ctx, nil)
		if err != nil || c.IsClosed() {
			t.Fatalf("get after idle close: %v (closed %v)", err, c != nil && c.IsClosed())
		}
		for _, old := range conns {
			if c == old {
				t.Errorf("got the idle-closed connection %d back", c.ID)
			}
		}
		p.Put(c)
		p.Close()
		pooltest.NoLeaks(t, tr, before)
	})
}

// A tainted connection is closed and its slot serves a new one.
func TestTaint(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		p, tr := pooltest.New(t, strategy, pool.Config{Capacity: 1})
		ctx := context.Background()
		c, _ := p.Get(ctx, nil)
		got := make(chan *pool.Conn)
		go func() {
			c, _ := p.Get(ctx, nil)
			got <- c
		}()
		time.Sleep(10 * time.Millisecond)
		p.Taint(c)
		d := <-got
		if !c.IsClosed() || d == c || d.IsClosed() {
			t.Errorf("taint: old closed %v, new distinct %v, new open %v", c.IsClosed(), d != c, !d.IsClosed())
		}
		p.Put(d)
		p.Close()
		if tr.Live() != 0 {
			t.Errorf("%d left open", tr.Live())
		}
	})
}

// fifo-channel and puddle reset + apply on a different setting; the counters show it.
func TestSettingCosts(t *testing.T) {
	forEach(t, func(t *testing.T, strategy string) {
		p, _ := pooltest.New(t, strategy, pool.Config{Capacity: 1})
		defer p.Close()
		ctx := context.Background()
		s := pool.Settings(3)
		c, _ := p.Get(ctx, s[1]) // apply
		p.Put(c)
		c, _ = p.Get(ctx, s[1]) // same: free
		p.Put(c)
		c, _ = p.Get(ctx, s[2]) // reset + apply
		p.Put(c)
		c, _ = p.Get(ctx, nil) // reset
		p.Put(c)
		if c.Applies() != 2 || c.Resets() != 2 {
			t.Errorf("applies %d resets %d, want 2 2", c.Applies(), c.Resets())
		}
	})
}

// smart-lifo reuses the most recently returned connections (LIFO) and opens no more
// than the concurrency needs.
func TestSmartLIFO(t *testing.T) {
	p, tr := pooltest.New(t, "smart-lifo", pool.Config{Capacity: 16})
	defer p.Close()
	ctx := context.Background()
	for range 100 {
		c, _ := p.Get(ctx, nil)
		d, _ := p.Get(ctx, nil)
		p.Put(d)
		p.Put(c)
	}
	if tr.Opened() != 2 {
		t.Errorf("opened %d, want 2", tr.Opened())
	}
	f, _ := pooltest.New(t, "fifo-channel", pool.Config{Capacity: 16})
	defer f.Close()
	for range 100 {
		c, _ := f.Get(ctx, nil)
		f.Put(c)
	}
	if got := f.Stats().Active; got != 16 {
		t.Errorf("fifo-channel opened %d, want all 16 (FIFO cycles every slot)", got)
	}
}
