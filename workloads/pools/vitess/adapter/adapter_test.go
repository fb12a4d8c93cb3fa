package adapter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchharness/pools/internal/pool"
)

func settingsFor(n int) []*pool.Setting {
	var in pool.Interner
	out := []*pool.Setting{nil}
	for i := 1; i < n; i++ {
		out = append(out, in.Intern(fmt.Sprintf("set s%d=1", i)))
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The real pool behind the interface: a connection is never lent out twice at once, it
// comes with the setting asked for, the pool opens at most its capacity (tainted
// connections' slots included), and Close closes every connection; also with the idle
// worker reopening connections.
func TestStressExclusiveWithinCapacity(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			before := runtime.NumGoroutine()
			const capacity = 4
			tr := &pool.Tracker{}
			Register()
			p, err := pool.New(Name, pool.Config{Capacity: capacity, IdleTimeout: idle, Tracker: tr})
			if err != nil {
				t.Fatal(err)
			}
			settings := settingsFor(4)
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
						c.Use()
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
			if st := p.Stats(); st.InUse != 0 || st.Active > capacity {
				t.Errorf("stats after the load: %+v", st)
			}
			p.Close()
			eventually(t, "every connection closed", func() bool { return tr.Live() == 0 })
			if _, err := p.Get(context.Background(), nil); !errors.Is(err, pool.ErrClosed) {
				t.Errorf("get after close: %v, want pool.ErrClosed", err)
			}
			eventually(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}

// A waiter past its deadline gets pool.ErrTimeout (vitess notices within its 100 ms
// expire worker at the latest); a waiter without one is served when a connection returns.
func TestWaitersServedOrTimedOut(t *testing.T) {
	Register()
	tr := &pool.Tracker{}
	p, err := pool.New(Name, pool.Config{Capacity: 1, Tracker: tr})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Get(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Get(ctx, nil); !errors.Is(err, pool.ErrTimeout) {
		t.Fatalf("get with deadline: %v, want pool.ErrTimeout", err)
	}
	got := make(chan *pool.Conn)
	go func() {
		c, err := p.Get(context.Background(), nil)
		if err != nil {
			t.Errorf("get: %v", err)
		}
		got <- c
	}()
	p.Put(c)
	c2 := <-got
	if c2 != c {
		t.Errorf("the waiter got connection %d, want the returned one %d", c2.ID, c.ID)
	}
	p.Put(c2)
	p.Close()
	eventually(t, "every connection closed", func() bool { return tr.Live() == 0 })
}

// A setting costs one apply; another setting on the same connection a reset and an apply.
func TestSettingCosts(t *testing.T) {
	Register()
	tr := &pool.Tracker{}
	p, err := pool.New(Name, pool.Config{Capacity: 1, Tracker: tr})
	if err != nil {
		t.Fatal(err)
	}
	s := settingsFor(3)
	for _, want := range []*pool.Setting{s[1], s[1], s[2], nil} {
		c, err := p.Get(context.Background(), want)
		if err != nil {
			t.Fatal(err)
		}
		if c.Setting() != want {
			t.Fatalf("setting %v, want %v", c.Setting(), want)
		}
		p.Put(c)
	}
	c := tr.Conns()[0]
	if c.Applies() != 2 || c.Resets() != 2 {
		t.Errorf("applies %d resets %d, want 2 and 2", c.Applies(), c.Resets())
	}
	p.Close()
}
