package adapter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/benchharness/pools/internal/poll"
	"github.com/benchharness/pools/internal/pool"
	"github.com/benchharness/pools/internal/pooltest"
)

// The real pool behind the interface: a connection is never lent out twice at once, it
// comes with the setting asked for, the pool opens at most its capacity (tainted
// connections' slots included), and Close closes every connection; also with the idle
// worker reopening connections.
func TestStressExclusiveWithinCapacity(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			before := runtime.NumGoroutine()
			const capacity = 4
			Register()
			p, tr := pooltest.New(t, Name, pool.Config{Capacity: capacity, IdleTimeout: idle})
			pooltest.Stress(t, p, tr, capacity)
			if st := p.Stats(); st.InUse != 0 || st.Active > capacity {
				t.Errorf("stats after the load: %+v", st)
			}
			pooltest.ClosedForGood(t, p, tr, before)
		})
	}
}

// A waiter past its deadline gets pool.ErrTimeout (vitess notices within its 100 ms
// expire worker at the latest); a waiter without one is served when a connection returns.
func TestWaitersServedOrTimedOut(t *testing.T) {
	Register()
	p, tr := pooltest.New(t, Name, pool.Config{Capacity: 1})
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
	poll.Until(t, "every connection closed", func() bool { return tr.Live() == 0 })
}

// A setting costs one apply; another setting on the same connection a reset and an apply.
func TestSettingCosts(t *testing.T) {
	Register()
	p, tr := pooltest.New(t, Name, pool.Config{Capacity: 1})
	s := pool.Settings(3)
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
