package pool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// fifoPool is the old vitess ResourcePool (go/pools/resource_pool.go): two buffered
// channels sized to the maximum capacity, `resources` for clean connections and
// `settingResources` for connections with any setting. The channels start with `capacity`
// empty slots (nil connections) and a connection is opened lazily when an empty slot is
// popped. Because a channel is FIFO, every slot cycles: all `capacity` connections end up
// open and every one is used in turn.
type fifoPool struct {
	resources        chan fifoSlot
	settingResources chan fifoSlot
	tracker          *Tracker
	idleTimeout      time.Duration

	sizing
	active atomic.Int64
	inUse  atomic.Int64
	waits  atomic.Int64
	idle   atomic.Int64

	closing atomic.Bool // Close has begun: Get fails
	closed  atomic.Bool // Close is done: Put closes the connection
	done    chan struct{}
	stop    chan struct{}
	workers sync.WaitGroup
	once    sync.Once
}

type fifoSlot struct {
	conn *Conn
	used time.Time
}

func newFifo(cfg Config) *fifoPool {
	p := &fifoPool{
		resources:        make(chan fifoSlot, cfg.MaxCapacity),
		settingResources: make(chan fifoSlot, cfg.MaxCapacity),
		tracker:          cfg.Tracker,
		idleTimeout:      cfg.IdleTimeout,
		done:             make(chan struct{}),
		stop:             make(chan struct{}),
	}
	p.capacity.Store(int64(cfg.Capacity))
	for range cfg.Capacity {
		p.resources <- fifoSlot{}
	}
	startIdleWorker(&p.workers, p.stop, cfg.IdleTimeout, p.closeIdle)
	return p
}

func (p *fifoPool) Get(ctx context.Context, setting *Setting) (*Conn, error) {
	if ctx.Err() != nil {
		return nil, ErrTimeout
	}
	if p.closing.Load() {
		return nil, ErrClosed
	}
	// Try the preferred channel, then the other one, then block on both: a select over
	// both at once would pick at random.
	first, second := p.resources, p.settingResources
	if setting != nil {
		first, second = second, first
	}
	var slot fifoSlot
	select {
	case slot = <-first:
	default:
		select {
		case slot = <-second:
		default:
			p.waits.Add(1)
			select {
			case slot = <-first:
			case slot = <-second:
			case <-ctx.Done():
				return nil, ErrTimeout
			case <-p.done:
				return nil, ErrClosed
			}
		}
	}
	if slot.conn == nil {
		slot.conn = p.tracker.Open()
		p.active.Add(1)
	}
	applySetting(ctx, slot.conn, setting)
	p.inUse.Add(1)
	return slot.conn, nil
}

func (p *fifoPool) Put(c *Conn) {
	p.inUse.Add(-1)
	if p.closed.Load() {
		c.Close()
		p.active.Add(-1)
		return
	}
	p.push(fifoSlot{conn: c, used: time.Now()})
}

func (p *fifoPool) push(slot fifoSlot) {
	ch := p.resources
	if slot.conn != nil && slot.conn.setting != nil {
		ch = p.settingResources
	}
	select {
	case ch <- slot:
	default:
		panic("fifo-channel: put into a full pool")
	}
}

// Taint closes c and gives its slot back empty (a new connection opens when it is next
// popped).
func (p *fifoPool) Taint(c *Conn) {
	p.inUse.Add(-1)
	c.Close()
	p.active.Add(-1)
	if !p.closed.Load() {
		p.push(fifoSlot{})
	}
}

func (p *fifoPool) SetCapacity(ctx context.Context, n int) error {
	return p.resize(func() error { return p.setCapacity(ctx, n) })
}

func (p *fifoPool) setCapacity(ctx context.Context, n int) error {
	if n < 0 || n > cap(p.resources) {
		return fmt.Errorf("capacity %d out of range 0..%d", n, cap(p.resources))
	}
	old := int(p.capacity.Load())
	for ; old > n; old-- {
		// Wait for a slot (idle or returned) and close it, as the old pool did.
		var slot fifoSlot
		select {
		case slot = <-p.resources:
		case slot = <-p.settingResources:
		case <-ctx.Done():
			p.capacity.Store(int64(old))
			return fmt.Errorf("shrinking to %d: %w (capacity now %d)", n, ctx.Err(), old)
		}
		if slot.conn != nil {
			slot.conn.Close()
			p.active.Add(-1)
		}
		p.capacity.Store(int64(old - 1))
	}
	for ; old < n; old++ {
		p.resources <- fifoSlot{}
		p.capacity.Store(int64(old + 1))
	}
	return nil
}

// closeIdle closes connections idle for longer than the timeout and reopens them in their
// slot, as the old pool's closeIdleResources: it cycles through the available slots, and
// a reopened connection (clean) goes to the clean channel.
func (p *fifoPool) closeIdle() {
	available := len(p.resources) + len(p.settingResources)
	for range available {
		var slot fifoSlot
		select {
		case slot = <-p.resources:
		case slot = <-p.settingResources:
		default:
			return // everything else is lent out
		}
		if slot.conn != nil && time.Since(slot.used) > p.idleTimeout {
			slot.conn.Close()
			p.idle.Add(1)
			slot = fifoSlot{conn: p.tracker.Open(), used: time.Now()}
		}
		p.push(slot)
	}
}

func (p *fifoPool) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.workers.Wait()
		p.capMu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		p.closing.Store(true)
		close(p.done)
		_ = p.setCapacity(ctx, 0)
		p.closed.Store(true)
		cancel()
		p.capMu.Unlock()
	})
}

func (p *fifoPool) Stats() Stats {
	return Stats{Active: p.active.Load(), InUse: p.inUse.Load(), Waits: p.waits.Load(),
		IdleClosed: p.idle.Load()}
}
