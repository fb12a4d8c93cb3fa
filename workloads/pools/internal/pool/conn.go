// Package pool holds the connection-pool strategies compared by pools-bench and the
// simulated backend connection they pool.
//
// A simulated connection models a MySQL connection as vitess PR #14034 analyses it:
// applying or resetting a session setting costs one round trip (one `latency` sleep),
// and every connection holds a 16 KiB I/O buffer, so that the number of open connections
// shows in the Go heap (the "homemade ballast" the PR found).
package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// BufferSize is the per-connection I/O buffer, as the MySQL client connection's.
const BufferSize = 16 << 10

var (
	// ErrTimeout is returned by Get when its context ends before a connection is available.
	ErrTimeout = errors.New("pool: timed out waiting for a connection")
	// ErrClosed is returned by Get once the pool is closed.
	ErrClosed = errors.New("pool: closed")
)

// settingCounter numbers interned settings; the bucket is the number modulo the number of
// setting stacks, so consecutive settings land on different stacks.
var settingCounter atomic.Uint32

// Setting is an interned session setting: one pointer per distinct setting, so pools
// compare settings by pointer. nil means a clean connection.
type Setting struct {
	Query  string
	bucket uint32
}

// Bucket is the setting's stack index in smart-lifo (its interning number & 7).
func (s *Setting) Bucket() uint32 { return s.bucket & stackMask }

// Interner hands out one *Setting per distinct query.
type Interner struct {
	mu sync.Mutex
	m  map[string]*Setting
}

// Intern returns the setting for query, creating it (with the next bucket) on first use.
func (in *Interner) Intern(query string) *Setting {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m == nil {
		in.m = make(map[string]*Setting)
	}
	if s, ok := in.m[query]; ok {
		return s
	}
	s := &Setting{Query: query, bucket: (settingCounter.Add(1) - 1) & stackMask}
	in.m[query] = s
	return s
}

// Conn is a simulated backend connection. Only the goroutine holding it (or the pool, while
// it is idle) touches its setting and buffer; the counters are atomic so that they can be
// read at any time.
type Conn struct {
	ID      int64
	latency time.Duration
	setting *Setting
	buf     []byte

	requests atomic.Int64
	applies  atomic.Int64
	resets   atomic.Int64
	closed   atomic.Bool
	// lent is the holders' own check that a pool never lends a connection twice at once.
	lent atomic.Bool

	tracker *Tracker
	// slot is smart-lifo's index of this connection's stack node.
	slot uint32
	// res is the puddle resource holding this connection while it is lent out.
	res any
	// Handle is a pool's own record of the connection for pools built outside this
	// package (the vitess adapter's *smartconnpool.Pooled), set by that pool.
	Handle any
}

// Setting is the setting applied on the connection (nil = clean).
func (c *Conn) Setting() *Setting { return c.setting }

// Apply applies s; it costs one round trip.
func (c *Conn) Apply(ctx context.Context, s *Setting) {
	sleep(c.latency)
	c.setting = s
	c.applies.Add(1)
}

// Reset removes the applied setting; it costs one round trip.
func (c *Conn) Reset(ctx context.Context) {
	sleep(c.latency)
	c.setting = nil
	c.resets.Add(1)
}

// Use records one request served on the connection and touches its buffer.
func (c *Conn) Use() {
	n := c.requests.Add(1)
	if c.buf != nil {
		c.buf[int(n)%len(c.buf)]++
	}
}

// Close closes the connection and drops its buffer; closing twice is a no-op.
func (c *Conn) Close() {
	if c.closed.CompareAndSwap(false, true) {
		c.buf = nil
		if c.tracker != nil {
			c.tracker.closed.Add(1)
		}
	}
}

// Take marks the connection as held by the caller; false if someone holds it already
// (a pool bug). Release undoes it before the connection goes back.
func (c *Conn) Take() bool { return c.lent.CompareAndSwap(false, true) }

// Release marks the connection as no longer held.
func (c *Conn) Release() { c.lent.Store(false) }

// IsClosed reports whether Close was called.
func (c *Conn) IsClosed() bool { return c.closed.Load() }

// Requests, Applies and Resets are the connection's counters.
func (c *Conn) Requests() int64 { return c.requests.Load() }
func (c *Conn) Applies() int64  { return c.applies.Load() }
func (c *Conn) Resets() int64   { return c.resets.Load() }

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// Tracker opens simulated connections and keeps every one it opened, for the
// per-connection statistics and for the leak checks of the tests.
type Tracker struct {
	Latency time.Duration

	mu     sync.Mutex
	conns  []*Conn
	opened atomic.Int64
	closed atomic.Int64
	// liveMax is the most connections open at once.
	liveMax atomic.Int64
}

// Open opens a connection: a fresh 16 KiB buffer, its pages touched.
func (t *Tracker) Open() *Conn {
	c := &Conn{latency: t.Latency, buf: make([]byte, BufferSize), tracker: t}
	for i := 0; i < len(c.buf); i += 4096 {
		c.buf[i] = 1
	}
	t.mu.Lock()
	c.ID = int64(len(t.conns))
	t.conns = append(t.conns, c)
	t.mu.Unlock()
	opened := t.opened.Add(1)
	live := opened - t.closed.Load()
	for {
		m := t.liveMax.Load()
		if live <= m || t.liveMax.CompareAndSwap(m, live) {
			break
		}
	}
	return c
}

// Opened is the number of connections opened so far.
func (t *Tracker) Opened() int64 { return t.opened.Load() }

// Closed is the number of connections closed so far.
func (t *Tracker) Closed() int64 { return t.closed.Load() }

// Live is the number of connections open now.
func (t *Tracker) Live() int64 { return t.opened.Load() - t.closed.Load() }

// LiveMax is the most connections that were open at once (sampled at each open).
func (t *Tracker) LiveMax() int64 { return t.liveMax.Load() }

// Conns is every connection opened so far, in opening order.
func (t *Tracker) Conns() []*Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Conn(nil), t.conns...)
}
