package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/puddle/v2"
)

// puddlePool puts github.com/jackc/puddle/v2 (the pool under pgxpool) behind Pool.
// puddle keeps idle resources in a generational stack (LIFO within a generation) under one
// mutex and admits Acquires through a FIFO weighted semaphore sized MaxSize; it knows
// nothing of settings, so a different setting costs reset + apply as in fifo-channel.
//
// puddle's MaxSize is fixed, so capacity below MaxCapacity is emulated: the adapter keeps
// MaxCapacity-capacity resources acquired as closed placeholders ("reserved"), and growing
// destroys placeholders to free their slots. Idle closing acquires all idle resources,
// destroys the expired ones and releases the others, as pgxpool's health check does.
type puddlePool struct {
	p           *puddle.Pool[*Conn]
	tracker     *Tracker
	idleTimeout time.Duration

	capMu    sync.Mutex
	reserved []*puddle.Resource[*Conn]
	capacity atomic.Int64
	maxCap   int

	active atomic.Int64
	inUse  atomic.Int64
	idle   atomic.Int64

	closing atomic.Bool
	stop    chan struct{}
	workers sync.WaitGroup
	once    sync.Once
}

func newPuddle(cfg Config) (*puddlePool, error) {
	a := &puddlePool{tracker: cfg.Tracker, idleTimeout: cfg.IdleTimeout, maxCap: cfg.MaxCapacity,
		stop: make(chan struct{})}
	if cfg.MaxCapacity < 1 {
		return nil, fmt.Errorf("puddle needs a capacity of at least 1")
	}
	p, err := puddle.NewPool(&puddle.Config[*Conn]{
		Constructor: func(context.Context) (*Conn, error) {
			a.active.Add(1)
			return a.tracker.Open(), nil
		},
		Destructor: func(c *Conn) {
			if !c.IsClosed() {
				c.Close()
				a.active.Add(-1)
			}
		},
		MaxSize: int32(cfg.MaxCapacity),
	})
	if err != nil {
		return nil, err
	}
	a.p = p
	a.capacity.Store(int64(cfg.MaxCapacity))
	if err := a.SetCapacity(context.Background(), cfg.Capacity); err != nil {
		return nil, err
	}
	startIdleWorker(&a.workers, a.stop, cfg.IdleTimeout, a.closeIdle)
	return a, nil
}

func (a *puddlePool) Get(ctx context.Context, setting *Setting) (*Conn, error) {
	if ctx.Err() != nil {
		return nil, ErrTimeout
	}
	if a.closing.Load() {
		return nil, ErrClosed
	}
	// (TryAcquire first would start a background construction when it finds no idle
	// resource, opening connections nobody asked for.)
	res, err := a.p.Acquire(ctx)
	if err != nil {
		if errors.Is(err, puddle.ErrClosedPool) {
			return nil, ErrClosed
		}
		return nil, ErrTimeout
	}
	c := res.Value()
	c.res = res
	applySetting(ctx, c, setting)
	a.inUse.Add(1)
	return c, nil
}

func (a *puddlePool) resource(c *Conn) *puddle.Resource[*Conn] {
	res := c.res.(*puddle.Resource[*Conn])
	c.res = nil
	return res
}

func (a *puddlePool) Put(c *Conn) {
	a.inUse.Add(-1)
	a.resource(c).Release()
}

func (a *puddlePool) Taint(c *Conn) {
	a.inUse.Add(-1)
	a.resource(c).Destroy()
}

func (a *puddlePool) Capacity() int { return int(a.capacity.Load()) }

func (a *puddlePool) SetCapacity(ctx context.Context, n int) error {
	a.capMu.Lock()
	defer a.capMu.Unlock()
	if n < 0 || n > a.maxCap {
		return fmt.Errorf("capacity %d out of range 0..%d", n, a.maxCap)
	}
	for int(a.capacity.Load()) > n {
		// Hold one more slot, closing whatever connection it had (waits for one).
		res, err := a.p.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("shrinking to %d: %w", n, err)
		}
		if c := res.Value(); !c.IsClosed() {
			c.Close()
			a.active.Add(-1)
		}
		a.reserved = append(a.reserved, res)
		a.capacity.Add(-1)
	}
	for int(a.capacity.Load()) < n {
		k := len(a.reserved) - 1
		a.reserved[k].Destroy()
		a.reserved = a.reserved[:k]
		a.capacity.Add(1)
	}
	return nil
}

func (a *puddlePool) closeIdle() {
	for _, res := range a.p.AcquireAllIdle() {
		if res.IdleDuration() > a.idleTimeout {
			a.idle.Add(1)
			res.Destroy()
		} else {
			res.ReleaseUnused()
		}
	}
}

func (a *puddlePool) Close() {
	a.once.Do(func() {
		a.closing.Store(true)
		close(a.stop)
		a.workers.Wait()
		a.capMu.Lock()
		for _, res := range a.reserved {
			res.Destroy()
		}
		a.reserved = nil
		a.capacity.Store(0)
		a.capMu.Unlock()
		// puddle's Close waits for every lent-out resource; bound it like the others.
		done := make(chan struct{})
		go func() {
			a.p.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(CloseTimeout):
		}
	})
}

func (a *puddlePool) Stats() Stats {
	// puddle counts Acquires that found no idle resource (waited, or constructed one);
	// the constructions are not waits.
	waits := a.p.Stat().EmptyAcquireCount() - a.tracker.Opened()
	return Stats{Active: a.active.Load(), InUse: a.inUse.Load(), Waits: max(waits, 0),
		IdleClosed: a.idle.Load()}
}
