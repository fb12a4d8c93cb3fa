// Package bench is pools-bench's command line: `describe` and `run`, keeping the workload
// contract of docs/workload-contract.md.
package bench

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/benchharness/pools/internal/pool"
	"github.com/benchharness/pools/internal/trace"
)

// BadInput is rejected input: exit code 2, its message on one stderr line.
type BadInput struct{ Msg string }

func (e BadInput) Error() string { return e.Msg }

func badf(format string, args ...any) error { return BadInput{fmt.Sprintf(format, args...)} }

// spec is one parameter as describe lists it.
type spec struct {
	Name     string
	Type     string // int, float, choice, string
	Default  any    // int64, float64 or string
	Min, Max float64
	Choices  []string
	Help     string
}

const maxSafeInt = 1<<53 - 1

func specs() []spec {
	cpus := int64(runtime.NumCPU())
	return []spec{
		{Name: "load", Type: "choice", Default: "trace", Choices: []string{"trace", "closed"},
			Help: "trace: replay a synthesised request trace (open loop); closed: goroutines get/put as fast as they can"},
		{Name: "rps", Type: "float", Default: 100.0, Min: 0.001, Max: 1e6,
			Help: "trace: arrival rate at t=0 (Poisson)"},
		{Name: "decay", Type: "float", Default: 0.01, Min: 0, Max: 100,
			Help: "trace: the rate at t is rps*exp(-decay*t[s])"},
		{Name: "latency_ms", Type: "float", Default: 15.0, Min: 0, Max: 60000,
			Help: "cost of one setting apply or reset (a sleep); trace: also the Pareto scale Xm of request durations"},
		{Name: "settings", Type: "string", Default: "5,1,1,1",
			Help: "comma-separated weights of the settings requests ask for; index 0 = a clean connection"},
		{Name: "capacity", Type: "int", Default: int64(8), Min: 1, Max: 1_000_000,
			Help: "pool capacity (connections)"},
		{Name: "trace_duration_s", Type: "float", Default: 0.0, Min: 0, Max: 86400,
			Help: "trace: length of the trace; 0 = --duration-s (durations are capped at a quarter of it)"},
		{Name: "seed", Type: "int", Default: int64(1), Min: 0, Max: maxSafeInt,
			Help: "seed of the trace (the same trace for every strategy) and of closed-loop setting draws"},
		{Name: "pacing", Type: "choice", Default: "absolute", Choices: []string{"absolute", "sleep"},
			Help: "trace: absolute = launch each request at its arrival time; sleep = sleep each inter-arrival gap in turn, the source's replay, which drifts late by every sleep's overshoot (points realises ~800 of its 2000 rps; see arrival_rps). The four source traces set sleep"},
		{Name: "handoff", Type: "choice", Default: "vitess", Choices: []string{"vitess", "prefer-clean"},
			Help: "smart-lifo: the waiter a returned connection goes to. vitess = v0.22.1's code: the front-most waiter wanting its setting or skipped more than 8 times, else the front; prefer-clean = PR #14034's description: else the front-most waiter wanting a clean connection, else the front"},
		{Name: "timeout_ms", Type: "int", Default: int64(0), Min: 0, Max: 3_600_000,
			Help: "deadline of each Get; 0 = wait forever (the source)"},
		{Name: "idle_timeout_ms", Type: "int", Default: int64(0), Min: 0, Max: 3_600_000,
			Help: "close connections idle for longer; 0 = never"},
		{Name: "idle_conns", Type: "int", Default: int64(0), Min: 0, Max: 1_000_000,
			Help: "connections opened at set-up and returned idle to the pool (explicit ballast); at most capacity"},
		{Name: "goroutines", Type: "int", Default: cpus, Min: 1, Max: 100_000,
			Help: "closed: client goroutines (default: logical CPUs)"},
		{Name: "hold_us", Type: "int", Default: int64(0), Min: 0, Max: 10_000_000,
			Help: "closed: time each op holds its connection (a sleep; 0 = none)"},
		{Name: "alloc_bytes", Type: "int", Default: int64(0), Min: 0, Max: 64 << 20,
			Help: "closed: garbage allocated per op (a result buffer), so the GC runs"},
	}
}

type scenario struct {
	Name   string
	Help   string
	Params [][2]any // name, value
}

const defaultScenario = "contended"

func scenarios() []scenario {
	// The source's traces are replayed as the source did: one sleep per gap.
	tr := func(rps, lat float64, settings string, capacity int64) [][2]any {
		return [][2]any{{"load", "trace"}, {"rps", rps}, {"latency_ms", lat},
			{"settings", settings}, {"capacity", capacity}, {"pacing", "sleep"}}
	}
	return []scenario{
		{"contended", "PR #14034 contended trace: 100 rps, 15 ms, settings [5,1,1,1], capacity 8 (starved throughout), sleep pacing",
			tr(100, 15, "5,1,1,1", 8)},
		{"uncontended", "PR #14034 uncontended trace: 20 rps, 15 ms, settings [5,1,1,1,1,1], capacity 16, sleep pacing",
			tr(20, 15, "5,1,1,1,1,1", 16)},
		{"uncontended-no-settings", "PR #14034 uncontended trace with one setting: 20 rps, 15 ms, settings [5,1], capacity 16, sleep pacing",
			tr(20, 15, "5,1", 16)},
		{"points", "PR #14034 point-query trace: 2000 rps nominal, 2 ms, settings [5,2,1,1], capacity 16, sleep pacing (realises ~800 rps, as the source's replay)",
			tr(2000, 2, "5,2,1,1", 16)},
		{"closed-loop", "goroutines get/put as fast as they can, half of them with one setting, capacity 64, free applies (vitess BenchmarkGetPut)",
			[][2]any{{"load", "closed"}, {"latency_ms", 0.0}, {"settings", "1,1"}, {"capacity", int64(64)}}},
		{"ballast", "closed loop on a 2000-connection pool allocating 8 KiB per op: FIFO opens every connection (32 MB of buffers), LIFO a few, and the GC runs accordingly",
			[][2]any{{"load", "closed"}, {"latency_ms", 0.0}, {"settings", "1"}, {"capacity", int64(2000)},
				{"goroutines", int64(8)}, {"alloc_bytes", int64(8192)}}},
	}
}

// Params are the resolved parameters of a run.
type Params struct {
	values map[string]any
	order  []string

	Load          string
	RPS           float64
	Decay         float64
	LatencyMS     float64
	Weights       []float64
	Capacity      int
	TraceDuration float64
	Seed          uint64
	Pacing        string
	HandOff       pool.HandOff
	TimeoutMS     int64
	IdleTimeoutMS int64
	IdleConns     int
	Goroutines    int
	HoldUS        int64
	AllocBytes    int
}

func names[T any](items []T, name func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return strings.Join(out, ", ")
}

func rangeText(s spec) string {
	switch s.Type {
	case "int":
		return fmt.Sprintf("an integer in %d..%d", int64(s.Min), int64(s.Max))
	case "float":
		return fmt.Sprintf("a number in %v..%v", s.Min, s.Max)
	case "choice":
		return "one of " + strings.Join(s.Choices, ", ")
	}
	return "comma-separated weights >= 0 with a positive sum, e.g. 5,1,1,1"
}

// isJSONNumber reports whether s is a JSON number (RFC 8259): the spellings of numbers in
// the workload contract, so no "+", "0x", "_", ".5", "5.", "inf" or "nan".
func isJSONNumber(s string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// parseInt reads an integral value in any JSON-number spelling ("8", "8.0", "1e3"; not
// "8.5"). Spellings with a fraction or an exponent go through a float64, exact up to 2^53-1.
func parseInt(t string) (int64, bool) {
	if !isJSONNumber(t) {
		return 0, false
	}
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInt {
		return 0, false
	}
	return int64(f), true
}

// parseFloat reads a finite number in any JSON-number spelling.
func parseFloat(t string) (float64, bool) {
	if !isJSONNumber(t) {
		return 0, false
	}
	v, err := strconv.ParseFloat(t, 64)
	return v, err == nil && !math.IsInf(v, 0)
}

func parseValue(s spec, text string) (any, error) {
	bad := badf("bad value '%s' for parameter '%s' (valid: %s)", text, s.Name, rangeText(s))
	t := strings.TrimSpace(text)
	switch s.Type {
	case "int":
		v, ok := parseInt(t)
		if !ok || float64(v) < s.Min || float64(v) > s.Max {
			return nil, bad
		}
		return v, nil
	case "float":
		v, ok := parseFloat(t)
		if !ok || v < s.Min || v > s.Max {
			return nil, bad
		}
		return v, nil
	case "choice":
		for _, c := range s.Choices {
			if c == t {
				return c, nil
			}
		}
		return nil, bad
	}
	if _, err := trace.ParseWeights(t); err != nil {
		return nil, bad
	}
	return t, nil
}

func findScenario(name string) (scenario, error) {
	all := scenarios()
	if name == "" {
		name = defaultScenario
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return scenario{}, badf("unknown scenario '%s' (valid: %s)", name,
		names(all, func(s scenario) string { return s.Name }))
}

func checkStrategy(name string) error {
	for _, s := range pool.Strategies {
		if s.Name == name {
			return nil
		}
	}
	return badf("unknown strategy '%s' (valid: %s)", name,
		names(pool.Strategies, func(s struct{ Name, Help string }) string { return s.Name }))
}

// resolve applies --param over the scenario over the defaults.
func resolve(sc scenario, overrides []string) (*Params, error) {
	all := specs()
	p := &Params{values: map[string]any{}}
	for _, s := range all {
		p.values[s.Name] = s.Default
		p.order = append(p.order, s.Name)
	}
	for _, kv := range sc.Params {
		p.values[kv[0].(string)] = kv[1]
	}
	validNames := names(all, func(s spec) string { return s.Name })
	for _, text := range overrides {
		name, raw, ok := strings.Cut(text, "=")
		if !ok {
			return nil, badf("bad --param '%s': expected name=value (valid names: %s)", text, validNames)
		}
		name = strings.TrimSpace(name)
		var sp *spec
		for i := range all {
			if all[i].Name == name {
				sp = &all[i]
			}
		}
		if sp == nil {
			return nil, badf("unknown parameter '%s' (valid: %s)", name, validNames)
		}
		v, err := parseValue(*sp, raw)
		if err != nil {
			return nil, err
		}
		p.values[name] = v
	}
	i := func(n string) int64 { return p.values[n].(int64) }
	f := func(n string) float64 { return p.values[n].(float64) }
	s := func(n string) string { return p.values[n].(string) }
	p.Load, p.RPS, p.Decay, p.LatencyMS = s("load"), f("rps"), f("decay"), f("latency_ms")
	p.Weights, _ = trace.ParseWeights(s("settings"))
	p.Capacity, p.TraceDuration, p.Seed = int(i("capacity")), f("trace_duration_s"), uint64(i("seed"))
	p.Pacing, p.TimeoutMS, p.IdleTimeoutMS = s("pacing"), i("timeout_ms"), i("idle_timeout_ms")
	if s("handoff") == "prefer-clean" {
		p.HandOff = pool.HandOffPreferClean
	}
	p.IdleConns, p.Goroutines = int(i("idle_conns")), int(i("goroutines"))
	p.HoldUS, p.AllocBytes = i("hold_us"), int(i("alloc_bytes"))
	if p.IdleConns > p.Capacity {
		return nil, badf("bad value '%d' for parameter 'idle_conns' (valid: an integer in 0..%d, the capacity)",
			p.IdleConns, p.Capacity)
	}
	return p, nil
}

// JSON is the resolved parameters for the result line.
func (p *Params) JSON() map[string]any {
	out := make(map[string]any, len(p.values))
	for k, v := range p.values {
		out[k] = v
	}
	return out
}

// Describe is the describe document.
func Describe() map[string]any {
	var params []map[string]any
	for _, s := range specs() {
		m := map[string]any{"name": s.Name, "type": s.Type, "default": s.Default, "help": s.Help}
		switch s.Type {
		case "int":
			m["min"], m["max"] = int64(s.Min), int64(s.Max)
		case "float":
			m["min"], m["max"] = s.Min, s.Max
		case "choice":
			m["choices"] = s.Choices
		}
		params = append(params, m)
	}
	var scs []map[string]any
	for _, sc := range scenarios() {
		ps := map[string]any{}
		for _, kv := range sc.Params {
			ps[kv[0].(string)] = kv[1]
		}
		scs = append(scs, map[string]any{"name": sc.Name, "help": sc.Help, "params": ps})
	}
	var strategies []map[string]any
	for _, s := range pool.Strategies {
		strategies = append(strategies, map[string]any{"name": s.Name, "help": s.Help})
	}
	metric := func(name, unit, better string) map[string]any {
		return map[string]any{"name": name, "unit": unit, "better": better}
	}
	// Headline metrics are the harness table's columns: the wait times of the source's tables,
	// labelled as there.
	headline := func(name, label string) map[string]any {
		m := metric(name, "ns", "lower")
		m["headline"] = true
		m["label"] = label
		return m
	}
	metrics := []map[string]any{
		headline("wait_ns.avg", "wait avg"),
		headline("wait_ns.std", "wait std"),
		headline("wait_ns.p50", "wait p50"),
		headline("wait_ns.p75", "wait p75"),
		headline("wait_ns.p99", "wait p99"),
		headline("wait_ns.max", "wait max"),
		metric("ops_per_sec", "ops/s", "higher"),
		{"name": "arrival_rps", "unit": "requests/s"}, // the regime a trace ran in, not a score
		metric("ns_per_op", "ns", "lower"),
		metric("cpu_ns_per_op", "ns", "lower"),
		metric("connections_opened", "connections", "lower"),
		metric("applies", "applies", "lower"),
		metric("resets", "resets", "lower"),
		metric("runtime_gc_cycles", "cycles", "lower"),
		metric("runtime_gc_pause_total_ns", "ns", "lower"),
		metric("heap_live_bytes", "bytes", "lower"),
		metric("timeouts", "requests", "lower"),
		metric("errors", "requests", "lower"),
	}
	series := func(name, label string) map[string]any {
		return map[string]any{"name": name, "label": label}
	}
	// The harness draws these per scenario from every repeat's wait_hist and conn_* lists.
	plots := []map[string]any{
		{
			"name":    "wait",
			"chart":   "cdf",
			"title":   "wait-time distribution (CDF)",
			"metrics": []map[string]any{series("wait_hist", "wait for a connection")},
		},
		{
			"name":  "per_conn",
			"chart": "per_connection",
			"title": "work per connection (all repeats)",
			"metrics": []map[string]any{
				series("conn_requests", "requests"),
				series("conn_applies", "setting applies"),
				series("conn_resets", "setting resets"),
			},
		},
	}
	return map[string]any{
		"suite":            "pools",
		"contract_version": 2,
		"baseline":         pool.Strategies[0].Name,
		"strategies":       strategies,
		"default_scenario": defaultScenario,
		"scenarios":        scs,
		"params":           params,
		"metrics":          metrics,
		"plots":            plots,
		"needs":            needs,
	}
}

// needs is what one run needs, as expressions the harness evaluates before it starts
// anything (docs/workload-contract.md, `needs`). The trace is generated in full before the
// run; at worst every request of it waits at once, each a goroutine (~3 KB measured).
var needs = map[string]string{
	"trace_s": "trace_duration_s or duration_s",
	"requests": "(rps * trace_s if decay == 0 else rps * (1 - exp(-decay * trace_s)) / decay) " +
		"if load == 'trace' else 0",
	"memory_bytes": "64e6 + requests * 3072 + goroutines * (8192 + alloc_bytes) + idle_conns * 1024",
}
