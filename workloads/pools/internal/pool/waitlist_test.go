package pool

import (
	"context"
	"testing"
	"time"

	"github.com/benchharness/pools/internal/poll"
)

// connNode is a node holding a connection with setting s.
func connNode(s *Setting) *node {
	n := &node{}
	n.conn.Store(&Conn{setting: s})
	return n
}

func newWaitlist(rule HandOff) *waitlist {
	wl := &waitlist{}
	wl.init(rule)
	return wl
}

// got reports whether w was handed n (a hand-off writes the channel before returning).
func got(w *waiter, n *node) bool {
	select {
	case m := <-w.ch:
		return m == n
	default:
		return false
	}
}

func ages(ws ...*waiter) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.age
	}
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The first waiter wanting the connection's setting gets it, under both rules; the
// waiters scanned before it age by one, the ones behind it do not.
func TestHandOffSameSettingFirst(t *testing.T) {
	for name, rule := range map[string]HandOff{"vitess": HandOffVitess, "prefer-clean": HandOffPreferClean} {
		t.Run(name, func(t *testing.T) {
			s := Settings(3)
			a, b := s[1], s[2]
			wl := newWaitlist(rule)
			ctx := context.Background()
			wb, wclean, wa, wa2 := wl.enqueue(ctx, b), wl.enqueue(ctx, nil), wl.enqueue(ctx, a), wl.enqueue(ctx, a)
			n := connNode(a)
			if !wl.handOff(n) || !got(wa, n) {
				t.Fatal("the first waiter wanting the setting did not get the connection")
			}
			if want := []int{1, 1, 0}; !sameInts(ages(wb, wclean, wa2), want) {
				t.Errorf("ages %v, want %v (skipped ones only)", ages(wb, wclean, wa2), want)
			}
			if wl.len() != 3 {
				t.Errorf("%d waiting, want 3", wl.len())
			}
		})
	}
}

// With no waiter wanting the setting, vitess's code hands the connection to the front
// waiter even if a later one wants a clean connection, and every waiter scanned ages;
// prefer-clean picks the clean one and ages only the waiters before it.
func TestHandOffNoMatch(t *testing.T) {
	s := Settings(4)
	a, b, c := s[1], s[2], s[3]
	ctx := context.Background()

	wl := newWaitlist(HandOffVitess)
	wb, wclean, wc := wl.enqueue(ctx, b), wl.enqueue(ctx, nil), wl.enqueue(ctx, c)
	n := connNode(a)
	if !wl.handOff(n) || !got(wb, n) {
		t.Fatal("vitess: the front waiter did not get the connection")
	}
	if want := []int{1, 1}; !sameInts(ages(wclean, wc), want) {
		t.Errorf("vitess: ages %v, want %v (all scanned)", ages(wclean, wc), want)
	}

	wl = newWaitlist(HandOffPreferClean)
	wb, wclean, wc = wl.enqueue(ctx, b), wl.enqueue(ctx, nil), wl.enqueue(ctx, c)
	n = connNode(a)
	if !wl.handOff(n) || !got(wclean, n) {
		t.Fatal("prefer-clean: the clean waiter did not get the connection")
	}
	if want := []int{1, 0}; !sameInts(ages(wb, wc), want) {
		t.Errorf("prefer-clean: ages %v, want %v", ages(wb, wc), want)
	}
}

// A waiter skipped 8 times still yields to one wanting the setting; skipped 9 times
// (age > 8) it wins.
func TestHandOffAgedWaiterWins(t *testing.T) {
	s := Settings(3)
	a, b := s[1], s[2]
	ctx := context.Background()
	wl := newWaitlist(HandOffVitess)
	old := wl.enqueue(ctx, b)
	for i := 1; i <= 9; i++ {
		wa := wl.enqueue(ctx, a)
		n := connNode(a)
		if !wl.handOff(n) || !got(wa, n) {
			t.Fatalf("hand-off %d (old waiter's age %d): the same-setting waiter did not win", i, i-1)
		}
		if old.age != i {
			t.Fatalf("after hand-off %d the old waiter's age is %d, want %d", i, old.age, i)
		}
	}
	wa := wl.enqueue(ctx, a)
	n := connNode(a)
	if !wl.handOff(n) || !got(old, n) {
		t.Fatal("the waiter aged past 8 did not win")
	}
	if wa.age != 0 || wl.len() != 1 {
		t.Errorf("the waiter behind: age %d, %d waiting; want 0, 1", wa.age, wl.len())
	}
}

// expire wakes (with nil) and removes the waiters whose context has ended, and counts
// the others never skipped; forced, it wakes them all.
func TestWaitlistExpire(t *testing.T) {
	s := Settings(2)
	wl := newWaitlist(HandOffVitess)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()
	gone := wl.enqueue(ended, nil)
	skipped := wl.enqueue(ctx, nil)
	fresh := wl.enqueue(ctx, s[1])
	n := connNode(s[1]) // skips the first two, served to fresh; then requeue fresh
	if !wl.handOff(n) || !got(fresh, n) {
		t.Fatal("set-up hand-off failed")
	}
	fresh = wl.enqueue(ctx, s[1])
	if starving := wl.expire(false); starving != 1 {
		t.Errorf("maybe starving %d, want 1 (only the never-skipped waiter)", starving)
	}
	if !got(gone, nil) || gone.listed || wl.len() != 2 {
		t.Errorf("the ended waiter: listed %v, %d waiting; want woken and removed, 2 waiting", gone.listed, wl.len())
	}
	wl.expire(true)
	if !got(skipped, nil) || !got(fresh, nil) || wl.len() != 0 {
		t.Errorf("forced expiry left %d waiting", wl.len())
	}
}

// A waiter left queued next to an idle connection (a returner that found no waiter
// pushed it while the waiter was queueing) is served by the rescue worker.
func TestSmartRescuesStarvingWaiter(t *testing.T) {
	p := smart(t, Config{Capacity: 1})
	defer p.Close()
	ctx := context.Background()
	c, _ := p.Get(ctx, nil)
	served := make(chan *Conn, 1)
	go func() {
		d, err := p.Get(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		served <- d
	}()
	poll.Until(t, "the waiter queued", func() bool { return p.wait.len() == 1 })
	// Return c the way the losing side of that race does: onto its stack, no hand-off.
	p.borrowed.Add(-1)
	p.push(p.slab.get(c.slot))
	select {
	case d := <-served:
		if d != c {
			t.Errorf("served connection %v, want the idle one %d", d, c.ID)
		}
		p.Put(d)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was never served")
	}
}
