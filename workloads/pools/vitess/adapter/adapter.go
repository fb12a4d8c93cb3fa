// Package adapter puts vitess's own smartconnpool (vitess.io/vitess v0.22.1,
// go/pools/smartconnpool) behind pools-bench's pool interface, so that the real pool
// replays the same traces as the reimplementations.
//
// The simulated connection of the pool package is wrapped in a smartconnpool.Connection;
// the suite's interned settings map one to one onto smartconnpool settings (NewSetting,
// interned too), so the pool compares them by pointer as vitess does.
package adapter

import (
	"context"
	"errors"
	"sync"

	"github.com/benchharness/pools/internal/pool"
	"vitess.io/vitess/go/pools/smartconnpool"
)

// Name is the strategy's name in pools-bench.
const Name = "vitess-smartconnpool"

// Register makes pool.New build the vitess pool.
func Register() { pool.Register(Name, New) }

// conn is a simulated connection as smartconnpool sees it.
type conn struct {
	c        *pool.Conn
	settings *settings
	setting  *smartconnpool.Setting
}

func (v *conn) ApplySetting(ctx context.Context, s *smartconnpool.Setting) error {
	v.c.Apply(ctx, v.settings.ours(s))
	v.setting = s
	return nil
}

func (v *conn) ResetSetting(ctx context.Context) error {
	v.c.Reset(ctx)
	v.setting = nil
	return nil
}

func (v *conn) Setting() *smartconnpool.Setting { return v.setting }
func (v *conn) IsClosed() bool                  { return v.c.IsClosed() }
func (v *conn) Close()                          { v.c.Close() }

// settings maps the suite's interned settings onto smartconnpool's, both ways.
type settings struct {
	toVitess sync.Map // *pool.Setting -> *smartconnpool.Setting
	toOurs   sync.Map // *smartconnpool.Setting -> *pool.Setting
	mu       sync.Mutex
}

func (m *settings) vitess(s *pool.Setting) *smartconnpool.Setting {
	if s == nil {
		return nil
	}
	if v, ok := m.toVitess.Load(s); ok {
		return v.(*smartconnpool.Setting)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.toVitess.Load(s); ok {
		return v.(*smartconnpool.Setting)
	}
	v := smartconnpool.NewSetting(s.Query, "RESET SESSION")
	m.toOurs.Store(v, s)
	m.toVitess.Store(s, v)
	return v
}

func (m *settings) ours(v *smartconnpool.Setting) *pool.Setting {
	if v == nil {
		return nil
	}
	s, _ := m.toOurs.Load(v)
	return s.(*pool.Setting)
}

// Pool is smartconnpool.ConnPool behind pool.Pool.
type Pool struct {
	p        *smartconnpool.ConnPool[*conn]
	settings *settings
}

// New opens a vitess pool of cfg.Capacity connections opened by cfg.Tracker, with
// cfg.IdleTimeout (vitess reopens idle-closed connections in place). cfg.HandOff does
// not apply: the pool hands off as vitess v0.22.1 does.
func New(cfg pool.Config) (pool.Pool, error) {
	if cfg.Tracker == nil {
		cfg.Tracker = &pool.Tracker{}
	}
	a := &Pool{settings: &settings{}}
	tracker := cfg.Tracker
	a.p = smartconnpool.NewPool(&smartconnpool.Config[*conn]{
		Capacity:    int64(cfg.Capacity),
		IdleTimeout: cfg.IdleTimeout,
	}).Open(func(context.Context) (*conn, error) {
		return &conn{c: tracker.Open(), settings: a.settings}, nil
	}, nil)
	return a, nil
}

// Get gets a connection with setting applied.
func (a *Pool) Get(ctx context.Context, setting *pool.Setting) (*pool.Conn, error) {
	p, err := a.p.Get(ctx, a.settings.vitess(setting))
	if err != nil {
		switch {
		case errors.Is(err, smartconnpool.ErrTimeout), errors.Is(err, smartconnpool.ErrCtxTimeout):
			return nil, pool.ErrTimeout
		case errors.Is(err, smartconnpool.ErrConnPoolClosed):
			return nil, pool.ErrClosed
		}
		return nil, err
	}
	p.Conn.c.Handle = p
	return p.Conn.c, nil
}

// Put recycles c.
func (a *Pool) Put(c *pool.Conn) { c.Handle.(*smartconnpool.Pooled[*conn]).Recycle() }

// Taint closes c and gives its capacity slot back.
func (a *Pool) Taint(c *pool.Conn) {
	p := c.Handle.(*smartconnpool.Pooled[*conn])
	p.Close()
	p.Taint()
}

// SetCapacity changes the capacity (vitess waits for lent-out connections when shrinking).
func (a *Pool) SetCapacity(ctx context.Context, n int) error {
	return a.p.SetCapacity(ctx, int64(n))
}

// Capacity is the current capacity.
func (a *Pool) Capacity() int { return int(a.p.Capacity()) }

// Close closes the pool (waiting up to pool.CloseTimeout for lent-out connections).
func (a *Pool) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), pool.CloseTimeout)
	defer cancel()
	_ = a.p.CloseWithContext(ctx)
}

// Stats are the vitess pool's own counters.
func (a *Pool) Stats() pool.Stats {
	return pool.Stats{
		Active:     a.p.Active(),
		InUse:      a.p.InUse(),
		Waits:      a.p.Metrics.WaitCount(),
		IdleClosed: a.p.Metrics.IdleClosed(),
	}
}
