package pool

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benchharness/pools/internal/poll"
)

// smart is a smart-lifo pool as New builds it, for the tests of its insides.
func smart(t *testing.T, cfg Config) *smartPool {
	t.Helper()
	p, err := New("smart-lifo", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*smartPool)
}

// queue starts a Get of want from p that, once served, sends name to order and returns
// the connection; it returns when that Get waits in p's waitlist.
func queue(t *testing.T, p *smartPool, order chan<- string, name string, want *Setting) {
	t.Helper()
	n := p.wait.len()
	go func() {
		c, err := p.Get(context.Background(), want)
		if err != nil {
			t.Error(err)
			return
		}
		order <- name
		p.Put(c)
	}()
	poll.Until(t, name+" queued", func() bool { return p.wait.len() == n+1 })
}

// Through the pool: a returned connection goes to the waiter wanting its setting; with
// none, to the front (vitess) or to the first wanting a clean one (prefer-clean).
func TestSmartHandOffOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule HandOff
		want []string
	}{
		{"vitess", HandOffVitess, []string{"wants-a", "wants-b", "wants-clean"}},
		{"prefer-clean", HandOffPreferClean, []string{"wants-a", "wants-clean", "wants-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := smart(t, Config{Capacity: 1, HandOff: tc.rule})
			defer p.Close()
			ctx := context.Background()
			s := Settings(3)
			a, b := s[1], s[2]
			c, _ := p.Get(ctx, a)
			order := make(chan string, 3)
			queue(t, p, order, "wants-b", b)
			queue(t, p, order, "wants-clean", nil)
			queue(t, p, order, "wants-a", a)
			p.Put(c)
			got := []string{<-order, <-order, <-order}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}

// A waiter skipped more than 8 times is served next, whatever it wants.
func TestSmartAgeBound(t *testing.T) {
	p := smart(t, Config{Capacity: 1})
	defer p.Close()
	ctx := context.Background()
	s := Settings(3)
	a, b := s[1], s[2]
	c, _ := p.Get(ctx, a)
	order := make(chan string, 16)
	queue(t, p, order, "old-b", b)
	for i := range 12 {
		queue(t, p, order, fmt.Sprintf("a%d", i), a)
	}
	p.Put(c)
	var served []string
	for range 13 {
		served = append(served, <-order)
	}
	if served[9] != "old-b" {
		t.Errorf("served %v: the skipped waiter should be 10th", served)
	}
}

// The Treiber stack never hands one node to two poppers (ABA-safe under contention).
func TestStackConcurrent(t *testing.T) {
	var sl slab
	st := stack{slab: &sl}
	const nodes = 4
	for range nodes {
		st.push(sl.alloc())
	}
	var owned [nodes]atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5000 {
				n := st.pop()
				if n == nil {
					runtime.Gosched()
					continue
				}
				if owned[n.idx].Add(1) != 1 {
					t.Errorf("node %d popped twice", n.idx)
					return
				}
				owned[n.idx].Add(-1)
				st.push(n)
			}
		}()
	}
	wg.Wait()
	count := 0
	for n := st.pop(); n != nil; n = st.pop() {
		count++
	}
	if count != nodes {
		t.Errorf("%d nodes left, want %d", count, nodes)
	}
}
