// Package pooltest holds the checks every pool.Pool must pass, run alike on the built-in
// strategies (internal/pool's tests) and on the real vitess pool behind its adapter.
package pooltest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benchharness/pools/internal/poll"
	"github.com/benchharness/pools/internal/pool"
)

// New builds strategy with cfg (and a tracker of its own when cfg has none).
func New(t *testing.T, strategy string, cfg pool.Config) (pool.Pool, *pool.Tracker) {
	t.Helper()
	if cfg.Tracker == nil {
		cfg.Tracker = &pool.Tracker{}
	}
	p, err := pool.New(strategy, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg.Tracker
}

// Stress lends p's connections to 16 goroutines, 300 times each with one of 4 settings,
// tainting one in 97: a connection is never lent out twice at once, it is open and comes
// with the setting asked for, and no more than capacity connections are ever open.
func Stress(t *testing.T, p pool.Pool, tr *pool.Tracker, capacity int64) {
	t.Helper()
	settings := pool.Settings(4)
	var held sync.Map
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) < 5 {
			t.Errorf(format, args...)
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 300 {
				s := settings[rng.IntN(len(settings))]
				c, err := p.Get(context.Background(), s)
				if err != nil {
					fail("get: %v", err)
					return
				}
				if _, dup := held.LoadOrStore(c, g); dup {
					fail("connection %d lent out twice", c.ID)
				}
				if c.Setting() != s {
					fail("asked for %v, got %v", s, c.Setting())
				}
				if c.IsClosed() {
					fail("got closed connection %d", c.ID)
				}
				if live := tr.Live(); live > capacity {
					fail("%d connections open, capacity %d", live, capacity)
				}
				c.Use()
				if i%7 == 0 {
					runtime.Gosched()
				}
				held.Delete(c)
				if i%97 == 0 {
					p.Taint(c)
				} else {
					p.Put(c)
				}
			}
		}()
	}
	wg.Wait()
	if tr.LiveMax() > capacity {
		t.Errorf("at most %d connections open at once, capacity %d", tr.LiveMax(), capacity)
	}
}

// NoLeaks checks that every connection is closed and the goroutines are back to before.
func NoLeaks(t *testing.T, tr *pool.Tracker, goroutines int) {
	t.Helper()
	poll.Until(t, "every connection closed", func() bool { return tr.Live() == 0 })
	for _, c := range tr.Conns() {
		if !c.IsClosed() {
			t.Errorf("connection %d left open", c.ID)
		}
	}
	poll.Until(t, fmt.Sprintf("goroutines back to %d", goroutines), func() bool {
		return runtime.NumGoroutine() <= goroutines
	})
}

// ClosedForGood closes p: nothing is left behind (NoLeaks) and a later Get fails with
// pool.ErrClosed.
func ClosedForGood(t *testing.T, p pool.Pool, tr *pool.Tracker, goroutines int) {
	t.Helper()
	p.Close()
	NoLeaks(t, tr, goroutines)
	if _, err := p.Get(context.Background(), nil); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("get after close: %v, want pool.ErrClosed", err)
	}
}
