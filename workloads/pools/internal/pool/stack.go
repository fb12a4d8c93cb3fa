package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// node is smart-lifo's stack entry for one open connection. Nodes live in a slab and are
// named by index, so that a stack's head fits one 64-bit word together with a pop counter.
type node struct {
	// next is the index+1 of the node below this one (0 = bottom).
	next atomic.Uint32
	// used is the monotonic time (ns) the connection was pushed, timeBusy while it is
	// not in a stack, timeReopening while the idle worker replaces its connection.
	used atomic.Int64
	conn atomic.Pointer[Conn]
	idx  uint32
}

const (
	timeBusy      int64 = -1
	timeReopening int64 = -2
)

// borrow claims a node just popped. If the idle worker is reopening its connection, it
// waits for the new one: vitess's pop drops such a node instead, which loses its
// capacity slot and the reopened connection for good.
func (n *node) borrow() {
	for {
		t := n.used.Load()
		if t == timeReopening {
			runtime.Gosched()
			continue
		}
		if n.used.CompareAndSwap(t, timeBusy) {
			return
		}
	}
}

// claimIdle marks an idle node as being reopened if it has been idle longer than
// timeout, and then the caller owns its connection until it stores a new timestamp.
func (n *node) claimIdle(now, timeout int64) bool {
	t := n.used.Load()
	return t >= 0 && now-t > timeout && n.used.CompareAndSwap(t, timeReopening)
}

const (
	chunkBits = 8
	chunkSize = 1 << chunkBits
	maxChunks = 1 << 14 // 4 Mi nodes
)

// slab allocates nodes in fixed chunks that never move, so an index stays valid and a
// node can be read by index without locks.
type slab struct {
	chunks [maxChunks]atomic.Pointer[[chunkSize]node]
	mu     sync.Mutex
	n      uint32
	free   []uint32
}

func (s *slab) get(i uint32) *node {
	return &s.chunks[i>>chunkBits].Load()[i&(chunkSize-1)]
}

// size is the number of node indexes handed out so far (a bound for walks).
func (s *slab) size() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *slab) alloc() *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		return s.get(i)
	}
	i := s.n
	if i>>chunkBits >= maxChunks {
		panic("smart-lifo: too many connections")
	}
	if i&(chunkSize-1) == 0 {
		chunk := new([chunkSize]node)
		for j := range chunk {
			chunk[j].idx = i + uint32(j)
		}
		s.chunks[i>>chunkBits].Store(chunk)
	}
	s.n++
	return s.get(i)
}

// release gives a node's index back once no stack holds it.
func (s *slab) release(n *node) {
	n.conn.Store(nil)
	s.mu.Lock()
	s.free = append(s.free, n.idx)
	s.mu.Unlock()
}

// stack is a Treiber stack (lock-free LIFO) of slab nodes. The head word packs the top
// node's index+1 (low 32 bits) with a pop counter (high 32 bits): every pop bumps the
// counter, so a pop that read a head, was delayed while that node was popped and pushed
// back, fails its compare-and-swap instead of installing a stale `next` (the ABA problem).
// vitess does the same with a pointer + uint64 pair swapped by a 128-bit CAS; an index
// keeps it to one word.
type stack struct {
	head atomic.Uint64
	slab *slab
}

func (s *stack) push(n *node) {
	for {
		old := s.head.Load()
		n.next.Store(uint32(old))
		if s.head.CompareAndSwap(old, old&^0xffffffff|uint64(n.idx+1)) {
			return
		}
		runtime.Gosched()
	}
}

func (s *stack) pop() *node {
	for {
		old := s.head.Load()
		top := uint32(old)
		if top == 0 {
			return nil
		}
		n := s.slab.get(top - 1)
		next := n.next.Load()
		if s.head.CompareAndSwap(old, ((old>>32)+1)<<32|uint64(next)) {
			return n
		}
		runtime.Gosched()
	}
}

// walk visits the nodes from the top without popping them, best effort: nodes may move
// meanwhile, so the walk is bounded by limit steps.
func (s *stack) walk(limit uint32, visit func(*node)) {
	i := uint32(s.head.Load())
	for steps := uint32(0); i != 0 && steps < limit; steps++ {
		n := s.slab.get(i - 1)
		visit(n)
		i = n.next.Load()
	}
}
