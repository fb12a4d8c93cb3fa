package pool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is what every strategy implements.
//
// Get returns a connection with setting applied (nil = a clean connection), blocking until
// one is available or ctx ends (ErrTimeout; smart-lifo, as vitess, notices it within
// 100 ms) or the pool closes (ErrClosed). Every connection Get returns goes back exactly
// once, through Put (recycled) or Taint (closed, never handed out again; its capacity
// slot goes to a new connection).
type Pool interface {
	Get(ctx context.Context, setting *Setting) (*Conn, error)
	Put(c *Conn)
	Taint(c *Conn)
	// SetCapacity changes the number of connections the pool may keep open. Shrinking
	// closes idle connections at once and waits (until ctx ends) for lent-out ones.
	SetCapacity(ctx context.Context, n int) error
	Capacity() int
	// Close rejects further Gets, wakes the waiters with ErrClosed, and closes every
	// connection (waiting up to CloseTimeout for lent-out ones to come back).
	Close()
	Stats() Stats
}

// Stats are a pool's own counters.
type Stats struct {
	Active     int64 // open connections owned by the pool (idle or lent out)
	InUse      int64 // lent out
	Waits      int64 // Gets that had to wait for a returned connection
	IdleClosed int64 // connections closed by the idle timeout
}

// Config configures a pool.
type Config struct {
	Capacity int
	// MaxCapacity bounds SetCapacity for fifo-channel and puddle (their channel buffers
	// and puddle's MaxSize are fixed at creation); 0 = Capacity. smart-lifo ignores it.
	MaxCapacity int
	// IdleTimeout closes connections idle for longer (0 = never); checked every
	// IdleTimeout/10. fifo-channel and smart-lifo reopen them in place, as vitess does;
	// puddle destroys them.
	IdleTimeout time.Duration
	// HandOff is smart-lifo's choice of the waiter a returned connection goes to.
	HandOff HandOff
	// Tracker opens the connections.
	Tracker *Tracker
}

// HandOff names a rule for choosing the waiter that gets a returned connection.
type HandOff int

const (
	// HandOffVitess is vitess v0.22.1's code: the front-most waiter that wants the
	// connection's setting or was skipped more than maxAge times, else the front.
	HandOffVitess HandOff = iota
	// HandOffPreferClean is PR #14034's description: as HandOffVitess, but with no such
	// waiter the front-most one wanting a clean connection comes before the front.
	HandOffPreferClean
)

// CloseTimeout is how long Close waits for lent-out connections.
var CloseTimeout = 10 * time.Second

// Strategy names, in describe order; the first is the baseline.
var Strategies = []struct{ Name, Help string }{
	{"fifo-channel", "old vitess ResourcePool: one buffered channel (FIFO) for clean and one for all " +
		"setting connections; a different setting costs reset + apply"},
	{"smart-lifo", "vitess smartconnpool (PR #14034): ABA-safe Treiber stacks, 1 clean + 8 setting " +
		"stacks by interned setting bucket, FIFO waitlist with direct hand-off preferring the same setting, " +
		"a 100 ms worker rescuing starving waiters"},
	{"puddle", "github.com/jackc/puddle/v2 (pgx's pool): mutex + FIFO semaphore + generational idle " +
		"stack; a different setting costs reset + apply"},
	{"vitess-smartconnpool", "the real vitess.io/vitess v0.22.1 go/pools/smartconnpool behind the same " +
		"interface (its own module and binary, bin/pools-bench-vitess: workloads/pools/vitess)"},
}

// external holds the constructors of strategies built outside this module, registered
// by the binary that links them (pools-bench-vitess registers vitess-smartconnpool).
var external = map[string]func(Config) (Pool, error){}

// delegated names, per strategy built outside this module, the binary beside pools-bench
// that runs it.
var delegated = map[string]string{"vitess-smartconnpool": "pools-bench-vitess"}

// Register makes New build strategy name with newPool; called before New, from main.
func Register(name string, newPool func(Config) (Pool, error)) {
	external[name] = newPool
}

// DelegateBinary is the binary (beside this one) that runs strategy, or "" when this
// binary runs it itself.
func DelegateBinary(strategy string) string {
	if _, ok := external[strategy]; ok {
		return ""
	}
	return delegated[strategy]
}

// New builds the named strategy.
func New(strategy string, cfg Config) (Pool, error) {
	if cfg.Capacity < 0 {
		return nil, fmt.Errorf("negative capacity %d", cfg.Capacity)
	}
	if cfg.MaxCapacity < cfg.Capacity {
		cfg.MaxCapacity = cfg.Capacity
	}
	if cfg.Tracker == nil {
		cfg.Tracker = &Tracker{}
	}
	if newPool, ok := external[strategy]; ok {
		return newPool(cfg)
	}
	if bin := delegated[strategy]; bin != "" {
		return nil, fmt.Errorf("strategy %q runs in the binary %s, not in this one", strategy, bin)
	}
	switch strategy {
	case "fifo-channel":
		return newFifo(cfg), nil
	case "smart-lifo":
		return newSmart(cfg), nil
	case "puddle":
		return newPuddle(cfg)
	}
	return nil, fmt.Errorf("unknown strategy %q", strategy)
}

// sizing is the capacity of fifo-channel and smart-lifo, and the lock that serialises
// its changes (SetCapacity, and the idle worker's closing).
type sizing struct {
	capacity atomic.Int64
	capMu    sync.Mutex
}

func (s *sizing) Capacity() int { return int(s.capacity.Load()) }

// resize runs change, a change of the capacity, under the lock.
func (s *sizing) resize(change func() error) error {
	s.capMu.Lock()
	defer s.capMu.Unlock()
	return change()
}

// Settings is the settings of a load with n kinds of request: the first kind wants a clean
// connection (nil), kind i a setting of its own (SET SESSION setting_i = 1).
func Settings(n int) []*Setting {
	var in Interner
	out := []*Setting{nil}
	for i := 1; i < n; i++ {
		out = append(out, in.Intern(fmt.Sprintf("SET SESSION setting_%d = 1", i)))
	}
	return out
}

// applySetting brings c to setting as the old pool and the puddle adapter do: a different
// setting is reset first, then the wanted one applied.
func applySetting(ctx context.Context, c *Conn, setting *Setting) {
	if c.setting == setting {
		return
	}
	if c.setting != nil {
		c.Reset(ctx)
	}
	if setting != nil {
		c.Apply(ctx, setting)
	}
}

// runWorker calls work every interval until stop is closed: the pools' background
// workers (vitess's runWorker).
func runWorker(workers *sync.WaitGroup, stop <-chan struct{}, interval time.Duration, work func()) {
	workers.Add(1)
	go func() {
		defer workers.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			work()
		}
	}()
}

// startIdleWorker runs closeIdle every idleTimeout/10 (at least 1 ms): every pool's
// idle-connection reaper. No worker without an idle timeout.
func startIdleWorker(workers *sync.WaitGroup, stop <-chan struct{}, idleTimeout time.Duration,
	closeIdle func()) {
	if idleTimeout > 0 {
		runWorker(workers, stop, max(idleTimeout/10, time.Millisecond), closeIdle)
	}
}
