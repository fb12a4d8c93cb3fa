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

// handOffs is a smart-lifo pool of one connection, held with setting a, and the names of
// the Gets queued for it in the order they are served.
type handOffs struct {
	p      *smartPool
	a, b   *Setting
	held   *Conn
	served chan string
}

func newHandOffs(t *testing.T, rule HandOff) *handOffs {
	p := smart(t, Config{Capacity: 1, HandOff: rule})
	t.Cleanup(p.Close)
	s := Settings(3)
	held, err := p.Get(context.Background(), s[1])
	if err != nil {
		t.Fatal(err)
	}
	return &handOffs{p: p, a: s[1], b: s[2], held: held, served: make(chan string, 16)}
}

// queue starts a Get of want that, once served, reports name and returns the connection;
// it returns when that Get waits in the pool's waitlist.
func (h *handOffs) queue(t *testing.T, name string, want *Setting) {
	t.Helper()
	n := h.p.wait.len()
	go func() {
		c, err := h.p.Get(context.Background(), want)
		if err != nil {
			t.Error(err)
			return
		}
		h.served <- name
		h.p.Put(c)
	}()
	poll.Until(t, name+" queued", func() bool { return h.p.wait.len() == n+1 })
}

// release returns the held connection; then the n queued Gets' names, in serving order.
func (h *handOffs) release(n int) []string {
	h.p.Put(h.held)
	order := make([]string, n)
	for i := range order {
		order[i] = <-h.served
	}
	return order
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
			h := newHandOffs(t, tc.rule)
			h.queue(t, "wants-b", h.b)
			h.queue(t, "wants-clean", nil)
			h.queue(t, "wants-a", h.a)
			if got := h.release(3); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}

// A waiter skipped more than 8 times is served next, whatever it wants.
func TestSmartAgeBound(t *testing.T) {
	h := newHandOffs(t, HandOffVitess)
	h.queue(t, "old-b", h.b)
	for i := range 12 {
		h.queue(t, fmt.Sprintf("a%d", i), h.a)
	}
	if served := h.release(13); served[9] != "old-b" {
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
