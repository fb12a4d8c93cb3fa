package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benchharness/pools/internal/pool"
	"github.com/benchharness/pools/internal/trace"
)

const usage = `pools-bench: connection-pool strategies under vitess PR #14034's request traces

usage:
  pools-bench describe
  pools-bench check --strategy S [--scenario X] [--param k=v]... --duration-s D --warmup-s W
  pools-bench run --strategy S [--scenario X] [--param k=v]... --duration-s D --warmup-s W [--gate]

Exit codes: 0 done, 2 bad input (one line on stderr), 1 the run failed.
`

// Main runs the command line and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "error: missing command (valid: describe, check, run)")
		return 2
	}
	switch args[0] {
	case "describe":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "error: describe takes no arguments, got '%s'\n", args[1])
			return 2
		}
		out, _ := json.Marshal(Describe())
		fmt.Fprintln(stdout, string(out))
		return 0
	case "check":
		return check(args[1:], stdout, stderr)
	case "run":
		return run(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "error: unknown command '%s' (valid: describe, check, run)\n", args[0])
	return 2
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// plan is a validated run request.
type plan struct {
	strategy string
	scenario string
	params   *Params
	duration time.Duration
	warmup   time.Duration
	gate     bool
}

func seconds(flagName, text string, positive bool) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	low := "[0"
	if positive {
		low = "(0"
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (positive && v == 0) || v > 86400 {
		return 0, badf("bad value '%s' for --%s (valid: seconds in %s, 86400])", text, flagName, low)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func parseRun(args []string) (*plan, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	strategy := fs.String("strategy", "", "")
	scen := fs.String("scenario", "", "")
	var params multi
	fs.Var(&params, "param", "")
	duration := fs.String("duration-s", "", "")
	warmup := fs.String("warmup-s", "", "")
	gate := fs.Bool("gate", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, badf("%v (valid flags: --strategy, --scenario, --param, --duration-s, --warmup-s, --gate)", err)
	}
	if fs.NArg() > 0 {
		return nil, badf("unexpected argument '%s' (valid flags: --strategy, --scenario, --param, --duration-s, --warmup-s, --gate)", fs.Arg(0))
	}
	if *strategy == "" {
		return nil, badf("missing --strategy (valid: %s)",
			names(pool.Strategies, func(s struct{ Name, Help string }) string { return s.Name }))
	}
	if err := checkStrategy(*strategy); err != nil {
		return nil, err
	}
	sc, err := findScenario(*scen)
	if err != nil {
		return nil, err
	}
	p, err := resolve(sc, params)
	if err != nil {
		return nil, err
	}
	if *duration == "" {
		return nil, badf("missing --duration-s (valid: seconds in (0, 86400])")
	}
	d, err := seconds("duration-s", *duration, true)
	if err != nil {
		return nil, err
	}
	w := time.Duration(0)
	if *warmup != "" {
		if w, err = seconds("warmup-s", *warmup, false); err != nil {
			return nil, err
		}
	}
	if p.Load == "trace" {
		if p.TraceDuration == 0 {
			p.TraceDuration = d.Seconds()
			p.values["trace_duration_s"] = p.TraceDuration
		}
		if err := traceOptions(p).Validate(); err != nil {
			return nil, badf("bad parameters for the trace: %v (rps=%v, latency_ms=%v, trace_duration_s=%v)",
				err, p.RPS, p.LatencyMS, p.TraceDuration)
		}
	}
	return &plan{strategy: *strategy, scenario: sc.Name, params: p, duration: d, warmup: w, gate: *gate}, nil
}

func traceOptions(p *Params) trace.Options {
	return trace.Options{
		RPS: p.RPS, Decay: p.Decay, Seed: p.Seed, Weights: p.Weights,
		Duration: time.Duration(p.TraceDuration * float64(time.Second)),
		Latency:  time.Duration(p.LatencyMS * float64(time.Millisecond)),
	}
}

// parsedRun parses the arguments of run; with --help (usage printed, code 0) or bad
// arguments (reported, code 2) there is no plan and nothing more to do.
func parsedRun(args []string, stdout, stderr io.Writer) (*plan, int) {
	pl, err := parseRun(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return nil, 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return nil, 2
	}
	return pl, 0
}

// check validates the arguments of run as run does, without running anything.
func check(args []string, stdout, stderr io.Writer) int {
	_, code := parsedRun(args, stdout, stderr)
	return code
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	pl, code := parsedRun(args, stdout, stderr)
	if pl == nil {
		return code
	}
	if bin := pool.DelegateBinary(pl.strategy); bin != "" {
		return delegate(bin, args, stderr)
	}
	res, err := execute(pl, stdin, func(event map[string]any) {
		line, _ := json.Marshal(event)
		fmt.Fprintln(stdout, string(line))
	})
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if len(res.violations) > 0 {
		for _, v := range res.violations {
			fmt.Fprintf(stderr, "error: correctness check failed: %s\n", v)
		}
		return 1
	}
	return 0
}

// delegate replaces this process with the binary beside it that runs the strategy (same
// pid, same arguments, same stdin and stdout: the harness sees one workload process).
func delegate(bin string, args []string, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot find this binary's folder to run %s: %v\n", bin, err)
		return 1
	}
	path := filepath.Join(filepath.Dir(self), bin)
	err = syscall.Exec(path, append([]string{path, "run"}, args...), os.Environ())
	fmt.Fprintf(stderr, "error: cannot run %s (built by `make deps` from workloads/pools/vitess): %v\n", path, err)
	return 1
}

// gcSnapshot is the runtime's GC counters at a window edge. Neither read stops the
// world (runtime/metrics and debug.ReadGCStats take the heap lock only).
type gcSnapshot struct {
	// cpu is the process's CPU time (user + system, every thread) at the edge, for
	// cpu_ns_per_op.
	cpu        time.Duration
	cycles     uint64
	numGC      int64
	pauseTotal time.Duration
	pauses     []time.Duration
	heapLive   uint64
}

func readGC() gcSnapshot {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(samples)
	var st debug.GCStats
	debug.ReadGCStats(&st)
	s := gcSnapshot{cpu: processCPU(), numGC: st.NumGC, pauseTotal: st.PauseTotal, pauses: st.Pause}
	if samples[0].Value.Kind() == metrics.KindUint64 {
		s.cycles = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		s.heapLive = samples[1].Value.Uint64()
	}
	return s
}

type outcome struct {
	violations []string
}

// execute runs a validated plan, emitting the contract's events.
func execute(pl *plan, stdin io.Reader, emit func(map[string]any)) (*outcome, error) {
	p := pl.params
	latency := time.Duration(p.LatencyMS * float64(time.Millisecond))
	tracker := &pool.Tracker{Latency: latency}
	pl0, err := pool.New(pl.strategy, pool.Config{
		Capacity:    p.Capacity,
		IdleTimeout: time.Duration(p.IdleTimeoutMS) * time.Millisecond,
		HandOff:     p.HandOff,
		Tracker:     tracker,
	})
	if err != nil {
		return nil, err
	}
	settings := pool.Settings(len(p.Weights))
	var reqs []trace.Request
	if p.Load == "trace" {
		reqs = trace.Generate(traceOptions(p))
	}
	if err := prefill(pl0, p.IdleConns); err != nil {
		pl0.Close()
		return nil, err
	}
	emit(map[string]any{"event": "ready", "pids": []int{os.Getpid()}})
	if pl.gate {
		if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil && !errors.Is(err, io.EOF) {
			pl0.Close()
			return nil, fmt.Errorf("cannot read the gate line from stdin: %v", err)
		}
	}
	var m measured
	if p.Load == "trace" {
		m = replay(pl0, reqs, settings, p, emit)
	} else {
		m = closedLoop(pl0, settings, p, pl.warmup, pl.duration, emit)
	}
	openAtEnd := tracker.Live()
	stats := pl0.Stats()
	pl0.Close()

	result := map[string]any{
		"event":    "result",
		"strategy": pl.strategy,
		"scenario": pl.scenario,
		"params":   p.JSON(),
	}
	m.fill(result)
	window := m.end.Sub(m.start).Seconds()
	result["window_s"] = window
	result["ops_per_sec"] = float64(m.ops) / window
	if m.ops > 0 {
		result["ns_per_op"] = window * 1e9 / float64(m.ops)
	}
	if cpu := m.gc1.cpu - m.gc0.cpu; m.ops > 0 && cpu > 0 {
		result["cpu_ns"] = int64(cpu)
		result["cpu_ns_per_op"] = float64(cpu) / float64(m.ops)
	}
	result["timeouts"] = m.timeouts
	result["errors"] = m.errors
	result["pool_waits"] = stats.Waits
	result["idle_closed"] = stats.IdleClosed
	result["connections_opened"] = tracker.Opened()
	result["connections_open_max"] = tracker.LiveMax()
	result["connections_open_end"] = openAtEnd
	conns := tracker.Conns()
	reqCounts, applies, resets := make([]int64, len(conns)), make([]int64, len(conns)), make([]int64, len(conns))
	var totalApplies, totalResets int64
	for i, c := range conns {
		reqCounts[i], applies[i], resets[i] = c.Requests(), c.Applies(), c.Resets()
		totalApplies += applies[i]
		totalResets += resets[i]
	}
	result["applies"] = totalApplies
	result["resets"] = totalResets
	result["per_conn_requests"] = distribution(reqCounts)
	result["per_conn_applies"] = distribution(applies)
	result["per_conn_resets"] = distribution(resets)
	result["conn_requests"] = reqCounts
	result["conn_applies"] = applies
	result["conn_resets"] = resets
	g0, g1 := m.gc0, m.gc1
	result["runtime_gc_cycles"] = g1.cycles - g0.cycles
	result["runtime_gc_pause_total_ns"] = int64(g1.pauseTotal - g0.pauseTotal)
	var pauseMax time.Duration
	for i := int64(0); i < min(g1.numGC-g0.numGC, int64(len(g1.pauses))); i++ {
		pauseMax = max(pauseMax, g1.pauses[i])
	}
	result["runtime_gc_pause_max_ns"] = int64(pauseMax)
	result["heap_live_bytes"] = g1.heapLive
	emit(result)

	out := &outcome{}
	if tracker.LiveMax() > int64(p.Capacity) {
		out.violations = append(out.violations, fmt.Sprintf("%d connections open at once, capacity %d",
			tracker.LiveMax(), p.Capacity))
	}
	if live := tracker.Live(); live != 0 {
		out.violations = append(out.violations, fmt.Sprintf("%d connections left open after Close", live))
	}
	if m.doubleLent > 0 {
		out.violations = append(out.violations, fmt.Sprintf("%d connections lent out twice at once", m.doubleLent))
	}
	return out, nil
}

// prefill opens n connections and returns them idle to the pool.
func prefill(p pool.Pool, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conns := make([]*pool.Conn, 0, n)
	for range n {
		c, err := p.Get(ctx, nil)
		if err != nil {
			return fmt.Errorf("opening idle connection %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		p.Put(c)
	}
	return nil
}

// measured is what a load measured in its window.
type measured struct {
	start, end       time.Time
	gc0, gc1         gcSnapshot
	ops              int64
	timeouts, errors int64
	doubleLent       int64
	wait             map[string]float64
	latency          map[string]float64
	get              map[string]float64
	lag              map[string]float64
	hist             *hist
	requests         int64
	// arrivalRPS is the rate requests were launched at (requests / time of the last
	// launch), traceRPS the trace's own (requests / its duration): sleep pacing drifts.
	arrivalRPS, traceRPS float64
}

func (m *measured) fill(r map[string]any) {
	r["ops"] = m.ops
	r["wait_ns"] = m.wait
	r["latency_ns"] = m.latency
	r["wait_hist"] = m.hist.cdf()
	if m.get != nil {
		r["get_ns"] = m.get
	}
	if m.lag != nil {
		r["dispatch_lag_ns"] = m.lag
		r["requests"] = m.requests
		r["arrival_rps"] = m.arrivalRPS
		r["trace_rps"] = m.traceRPS
	}
}

func beginWindow(emit func(map[string]any)) (time.Time, gcSnapshot) {
	g := readGC()
	emit(map[string]any{"event": "measure_start"})
	return time.Now(), g
}

func endWindow(emit func(map[string]any)) (time.Time, gcSnapshot) {
	end := time.Now()
	g := readGC()
	emit(map[string]any{"event": "measure_end"})
	return end, g
}

// replay launches every request of the trace at its arrival time (pacing=absolute) or
// after sleeping its gap from the previous launch (pacing=sleep); each gets a connection
// with its setting, holds it for its duration and recycles it. The window is the whole
// replay, until the last request completes. Wait = elapsed - duration, as the source
// measures it (it includes apply/reset costs and the hold's sleep overshoot).
func replay(p pool.Pool, reqs []trace.Request, settings []*pool.Setting, params *Params,
	emit func(map[string]any)) measured {
	var m measured
	waits := make([]float64, len(reqs))
	gets := make([]float64, len(reqs))
	lags := make([]float64, len(reqs))
	ok := make([]bool, len(reqs))
	var timeouts, errs, doubles atomic.Int64
	timeout := time.Duration(params.TimeoutMS) * time.Millisecond
	var wg sync.WaitGroup
	m.start, m.gc0 = beginWindow(emit)
	prev := time.Duration(0)
	for i, r := range reqs {
		if params.Pacing == "sleep" {
			time.Sleep(r.At - prev)
			prev = r.At
		} else if d := time.Until(m.start.Add(r.At)); d > 0 {
			time.Sleep(d)
		}
		lags[i] = float64(time.Since(m.start) - r.At)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			begin := time.Now()
			c, err := p.Get(ctx, settings[r.Setting])
			got := time.Since(begin)
			if err != nil {
				if errors.Is(err, pool.ErrTimeout) {
					timeouts.Add(1)
				} else {
					errs.Add(1)
				}
				return
			}
			if !c.Take() {
				doubles.Add(1)
			}
			c.Use()
			time.Sleep(r.Duration)
			c.Release()
			p.Put(c)
			waits[i] = float64(time.Since(begin) - r.Duration)
			gets[i] = float64(got)
			ok[i] = true
		}()
	}
	dispatched := time.Since(m.start)
	wg.Wait()
	m.end, m.gc1 = endWindow(emit)
	m.arrivalRPS = float64(len(reqs)) / dispatched.Seconds()
	m.traceRPS = float64(len(reqs)) / params.TraceDuration
	var w, g []float64
	m.hist = &hist{}
	for i := range reqs {
		if ok[i] {
			w = append(w, waits[i])
			g = append(g, gets[i])
			m.hist.record(int64(waits[i]))
		}
	}
	m.ops, m.requests = int64(len(w)), int64(len(reqs))
	m.timeouts, m.errors, m.doubleLent = timeouts.Load(), errs.Load(), doubles.Load()
	m.wait, m.latency = summary(w), latencySummary(w)
	gs := summary(g)
	m.get = map[string]float64{"avg": gs["avg"], "p50": gs["p50"], "p99": gs["p99"], "max": gs["max"]}
	ls := latencySummary(lags)
	m.lag = map[string]float64{"p50": ls["p50"], "p99": ls["p99"], "max": ls["max"]}
	return m
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// closedLoop runs goroutines that get (a setting drawn by weight), use, optionally
// allocate and hold, and put, as fast as they can: warm-up, then the measured window.
// wait_ns here is the time Get took.
func closedLoop(p pool.Pool, settings []*pool.Setting, params *Params, warmup, duration time.Duration,
	emit func(map[string]any)) measured {
	var m measured
	var phase atomic.Int32
	type worker struct {
		h                hist
		ops              int64
		timeouts, errors int64
		doubles          int64
		sink             []byte
	}
	workers := make([]*worker, params.Goroutines)
	cdf := make([]float64, len(params.Weights))
	total := 0.0
	for i, w := range params.Weights {
		total += w
		cdf[i] = total
	}
	hold := time.Duration(params.HoldUS) * time.Microsecond
	timeout := time.Duration(params.TimeoutMS) * time.Millisecond
	var wg sync.WaitGroup
	for gi := range workers {
		w := &worker{}
		workers[gi] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(params.Seed, uint64(gi)))
			for {
				ph := phase.Load()
				if ph == phaseStop {
					return
				}
				k := 0
				if len(cdf) > 1 {
					v := rng.Float64() * total
					for k < len(cdf)-1 && cdf[k] <= v {
						k++
					}
				}
				ctx := context.Background()
				cancel := context.CancelFunc(func() {})
				if timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, timeout)
				}
				begin := time.Now()
				c, err := p.Get(ctx, settings[k])
				got := time.Since(begin)
				cancel()
				if err != nil {
					if ph == phaseMeasure {
						if errors.Is(err, pool.ErrTimeout) {
							w.timeouts++
						} else {
							w.errors++
						}
					}
					if errors.Is(err, pool.ErrClosed) {
						return
					}
					continue
				}
				if !c.Take() {
					w.doubles++
				}
				c.Use()
				if params.AllocBytes > 0 {
					buf := make([]byte, params.AllocBytes)
					buf[0], buf[len(buf)-1] = 1, 1
					w.sink = buf
				}
				if hold > 0 {
					time.Sleep(hold)
				}
				c.Release()
				p.Put(c)
				if ph == phaseMeasure {
					w.ops++
					w.h.record(int64(got))
				}
			}
		}()
	}
	time.Sleep(warmup)
	m.start, m.gc0 = beginWindow(emit)
	phase.Store(phaseMeasure)
	time.Sleep(duration)
	phase.Store(phaseStop)
	m.end, m.gc1 = endWindow(emit)
	wg.Wait()
	m.hist = &hist{}
	for _, w := range workers {
		m.hist.merge(&w.h)
		m.ops += w.ops
		m.timeouts += w.timeouts
		m.errors += w.errors
		m.doubleLent += w.doubles
	}
	m.wait, m.latency = m.hist.summary(), m.hist.latencySummary()
	return m
}
