package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchharness/pools/internal/pool"
)

func runMain(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDescribeIsValid(t *testing.T) {
	code, out, _ := runMain(t, "", "describe")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d["suite"] != "pools" || d["contract_version"] != 2.0 || d["baseline"] != "fifo-channel" ||
		d["default_scenario"] != "contended" {
		t.Errorf("header: %v %v %v %v", d["suite"], d["contract_version"], d["baseline"], d["default_scenario"])
	}
	var strategies []string
	for _, s := range d["strategies"].([]any) {
		strategies = append(strategies, s.(map[string]any)["name"].(string))
	}
	if strings.Join(strategies, ",") != "fifo-channel,smart-lifo,puddle,vitess-smartconnpool" {
		t.Errorf("strategies %v", strategies)
	}
	specsByName := map[string]spec{}
	for _, s := range specs() {
		specsByName[s.Name] = s
	}
	for _, p := range d["params"].([]any) {
		pm := p.(map[string]any)
		ty := pm["type"].(string)
		if !strings.Contains("int float choice string", ty) || pm["help"] == "" {
			t.Errorf("param %v", pm)
		}
	}
	// Every scenario value names a parameter and passes its validation.
	names := map[string]bool{}
	for _, s := range d["scenarios"].([]any) {
		sm := s.(map[string]any)
		names[sm["name"].(string)] = true
		for k, v := range sm["params"].(map[string]any) {
			sp, ok := specsByName[k]
			if !ok {
				t.Errorf("scenario %v: unknown param %s", sm["name"], k)
				continue
			}
			text := strings.Trim(string(must(json.Marshal(v))), `"`)
			if _, err := parseValue(sp, text); err != nil {
				t.Errorf("scenario %v: %v", sm["name"], err)
			}
		}
	}
	for _, want := range []string{"contended", "uncontended", "uncontended-no-settings", "points", "closed-loop", "ballast"} {
		if !names[want] {
			t.Errorf("scenario %s missing", want)
		}
	}
	metrics := map[string]string{}
	labels := map[string]string{}
	for _, m := range d["metrics"].([]any) {
		mm := m.(map[string]any)
		better, _ := mm["better"].(string) // absent: not a score
		metrics[mm["name"].(string)] = better
		labels[mm["name"].(string)], _ = mm["label"].(string)
	}
	if labels["wait_ns.avg"] != "wait avg" || labels["wait_ns.max"] != "wait max" {
		t.Errorf("wait labels: %v", labels)
	}
	// The plots name the result fields they draw.
	var plots []string
	for _, p := range d["plots"].([]any) {
		pm := p.(map[string]any)
		var series []string
		for _, m := range pm["metrics"].([]any) {
			series = append(series, m.(map[string]any)["name"].(string))
		}
		plots = append(plots, fmt.Sprintf("%s:%s:%s", pm["name"], pm["chart"], strings.Join(series, ",")))
	}
	if got := strings.Join(plots, " "); got != "wait:cdf:wait_hist per_conn:per_connection:conn_requests,conn_applies,conn_resets" {
		t.Errorf("plots: %s", got)
	}
	for name, better := range map[string]string{"wait_ns.avg": "lower", "wait_ns.p50": "lower",
		"wait_ns.p99": "lower", "ops_per_sec": "higher", "runtime_gc_cycles": "lower", "arrival_rps": ""} {
		if got, ok := metrics[name]; !ok || got != better {
			t.Errorf("metric %s: better %q, want %q", name, metrics[name], better)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Bad input: exit 2, exactly one stderr line naming the input and the valid choices.
func TestBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--strategy", "tokio", "--duration-s", "1"},
			[]string{"'tokio'", "fifo-channel, smart-lifo, puddle"}},
		{[]string{"run", "--strategy", "smart-lifo", "--scenario", "x", "--duration-s", "1"},
			[]string{"'x'", "contended", "ballast"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "nope=1", "--duration-s", "1"},
			[]string{"'nope'", "rps"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "capacity=0", "--duration-s", "1"},
			[]string{"'capacity'", "1..1000000"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "settings=a,b", "--duration-s", "1"},
			[]string{"'settings'", "weights"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "pacing=fast", "--duration-s", "1"},
			[]string{"'pacing'", "absolute, sleep"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "handoff=lifo", "--duration-s", "1"},
			[]string{"'handoff'", "vitess, prefer-clean"}},
		{[]string{"run", "--strategy", "smart-lifo", "--duration-s", "0"},
			[]string{"--duration-s"}},
		{[]string{"run", "--strategy", "smart-lifo", "--duration-s", "1", "--warmup-s", "-1"},
			[]string{"--warmup-s"}},
		{[]string{"run", "--strategy", "smart-lifo", "--duration-s", "0.01"},
			[]string{"trace", "latency"}},
		{[]string{"run", "--strategy", "smart-lifo", "--duration-s", "1", "--bogus"},
			[]string{"bogus"}},
		{[]string{"run", "--strategy", "smart-lifo", "--param", "idle_conns=9", "--duration-s", "1"},
			[]string{"'idle_conns'"}},
		{[]string{"run", "--duration-s", "1"}, []string{"--strategy", "fifo-channel, smart-lifo, puddle"}},
		{[]string{"run", "--strategy", "puddle"}, []string{"--duration-s"}},
		{[]string{"frobnicate"}, []string{"'frobnicate'", "describe, check, run"}},
		{nil, []string{"describe, check, run"}},
	}
	for _, c := range cases {
		code, out, errText := runMain(t, "", c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out)
		}
		if lines := strings.Split(strings.TrimSuffix(errText, "\n"), "\n"); len(lines) != 1 ||
			!strings.HasPrefix(lines[0], "error: ") {
			t.Errorf("%v: stderr %q is not one error line", c.args, errText)
		}
		for _, w := range c.want {
			if !strings.Contains(errText, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, errText, w)
			}
		}
	}
}

// Numbers take every JSON spelling and no other (docs/workload-contract.md): an int
// parameter any integral value, a float parameter any finite one.
func TestNumberSpellings(t *testing.T) {
	all := map[string]spec{}
	for _, s := range specs() {
		all[s.Name] = s
	}
	ints := map[string]int64{"8": 8, "8.0": 8, "1e3": 1000, "1E+3": 1000, "0.8e1": 8, " 8 ": 8}
	for text, want := range ints {
		if v, err := parseValue(all["capacity"], text); err != nil || v != want {
			t.Errorf("capacity=%q: %v, %v; want %d", text, v, err, want)
		}
	}
	if v, err := parseValue(all["seed"], "9007199254740991"); err != nil || v != int64(maxSafeInt) {
		t.Errorf("seed=2^53-1: %v, %v", v, err)
	}
	floats := map[string]float64{"1": 1, "0.25": 0.25, "2.5e-1": 0.25, "25E-2": 0.25, "-0": 0}
	for text, want := range floats {
		if v, err := parseValue(all["decay"], text); err != nil || v != want {
			t.Errorf("decay=%q: %v, %v; want %v", text, v, err, want)
		}
	}
	for _, text := range []string{"8.5", "+8", "08", "0x10", "1_000", "8.", ".8e1", "8e", "inf", "",
		"1e400", "9007199254740993.0"} {
		if _, err := parseValue(all["capacity"], text); err == nil {
			t.Errorf("capacity=%q accepted", text)
		}
	}
	for _, text := range []string{"NaN", "Inf", ".5", "1.", "+0.5", "0x1p-1", "0_5", "1e400"} {
		if _, err := parseValue(all["decay"], text); err == nil {
			t.Errorf("decay=%q accepted", text)
		}
	}
}

// The source's four traces pace by sleeping each gap unless told otherwise; the hand-off
// rule is vitess's unless told otherwise.
func TestScenarioDefaults(t *testing.T) {
	for _, name := range []string{"contended", "uncontended", "uncontended-no-settings", "points"} {
		sc, err := findScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := resolve(sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Pacing != "sleep" || p.HandOff != pool.HandOffVitess {
			t.Errorf("%s: pacing %s, handoff %v; want sleep, vitess", name, p.Pacing, p.HandOff)
		}
		p, err = resolve(sc, []string{"pacing=absolute", "handoff=prefer-clean"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Pacing != "absolute" || p.HandOff != pool.HandOffPreferClean {
			t.Errorf("%s with overrides: pacing %s, handoff %v", name, p.Pacing, p.HandOff)
		}
	}
}

func events(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func checkResult(t *testing.T, res map[string]any) {
	t.Helper()
	for _, k := range []string{"strategy", "scenario", "params", "ops", "ops_per_sec", "timeouts", "errors",
		"connections_opened", "per_conn_requests", "per_conn_applies", "per_conn_resets",
		"conn_requests", "conn_applies", "conn_resets", "runtime_gc_cycles",
		"runtime_gc_pause_total_ns", "wait_hist", "latency_ns"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks %s", k)
		}
	}
	w := res["wait_ns"].(map[string]any)
	for _, k := range []string{"avg", "std", "p50", "p75", "p99", "max"} {
		if v, ok := w[k].(float64); !ok || math.IsNaN(v) {
			t.Errorf("wait_ns.%s = %v", k, w[k])
		}
	}
	if res["ops"].(float64) <= 0 {
		t.Error("no ops")
	}
	// CPU per op: cpu_ns_per_op x ops is the window's process CPU time, which no more than
	// every CPU can have spent over the window (5% and 20 ms of slack: getrusage lags each
	// running thread's time by up to a scheduler tick).
	perOp, ok1 := res["cpu_ns_per_op"].(float64)
	cpu, ok2 := res["cpu_ns"].(float64)
	if !ok1 || !ok2 || perOp <= 0 {
		t.Fatalf("cpu_ns_per_op %v, cpu_ns %v", res["cpu_ns_per_op"], res["cpu_ns"])
	}
	if got := perOp * res["ops"].(float64); math.Abs(got-cpu) > 1+cpu*1e-9 {
		t.Errorf("cpu_ns_per_op x ops = %v, cpu_ns = %v", got, cpu)
	}
	if limit := float64(runtime.NumCPU())*res["window_s"].(float64)*1e9*1.05 + 20e6; cpu > limit {
		t.Errorf("cpu_ns %v over %d CPUs x the window (%v ns)", cpu, runtime.NumCPU(), limit)
	}
}

// Every strategy replays a short trace and a short closed loop; events come in order and
// the result carries the metrics.
func TestRunEveryStrategy(t *testing.T) {
	for _, strategy := range []string{"fifo-channel", "smart-lifo", "puddle"} {
		for _, args := range [][]string{
			{"--scenario", "contended", "--duration-s", "0.5", "--param", "latency_ms=2"},
			{"--scenario", "closed-loop", "--duration-s", "0.2", "--warmup-s", "0.05", "--param", "goroutines=4"},
		} {
			full := append([]string{"run", "--strategy", strategy}, args...)
			code, out, errText := runMain(t, "", full...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", full, code, errText)
			}
			evs := events(t, out)
			var order []string
			for _, ev := range evs {
				order = append(order, ev["event"].(string))
			}
			if strings.Join(order, ",") != "ready,measure_start,measure_end,result" {
				t.Fatalf("events %v", order)
			}
			if pids := evs[0]["pids"].([]any); len(pids) != 1 || int(pids[0].(float64)) != os.Getpid() {
				t.Errorf("ready pids %v", pids)
			}
			res := evs[3]
			checkResult(t, res)
			if args[1] == "contended" {
				for _, k := range []string{"arrival_rps", "trace_rps"} {
					if v, _ := res[k].(float64); !(v > 0) {
						t.Errorf("%s = %v, want a rate", k, res[k])
					}
				}
			}
			if res["strategy"] != strategy {
				t.Errorf("strategy %v", res["strategy"])
			}
		}
	}
}

// The same seed replays the same trace: the request count is the same for every strategy.
func TestSameTraceEveryStrategy(t *testing.T) {
	var counts []float64
	for _, strategy := range []string{"fifo-channel", "smart-lifo", "puddle"} {
		_, out, _ := runMain(t, "", "run", "--strategy", strategy, "--scenario", "points",
			"--duration-s", "0.3", "--param", "rps=500", "--param", "latency_ms=1")
		evs := events(t, out)
		counts = append(counts, evs[len(evs)-1]["requests"].(float64))
	}
	if counts[0] != counts[1] || counts[1] != counts[2] {
		t.Errorf("request counts differ: %v", counts)
	}
}

// The ballast scenario: FIFO opens every slot, LIFO a few.
func TestBallastOpensConnections(t *testing.T) {
	opened := map[string]float64{}
	for _, strategy := range []string{"fifo-channel", "smart-lifo"} {
		_, out, errText := runMain(t, "", "run", "--strategy", strategy, "--scenario", "ballast",
			"--duration-s", "0.2", "--warmup-s", "0.1", "--param", "capacity=200", "--param", "goroutines=2")
		evs := events(t, out)
		if len(evs) != 4 {
			t.Fatalf("%s: %s", strategy, errText)
		}
		opened[strategy] = evs[3]["connections_opened"].(float64)
	}
	if opened["fifo-channel"] != 200 || opened["smart-lifo"] > 2 {
		t.Errorf("opened %v, want fifo-channel 200 and smart-lifo <= 2", opened)
	}
}

// The built binary: with --gate it prints ready and waits for a line on stdin.
func TestGateWaitsForStdin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pools-bench")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/pools-bench")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "--strategy", "smart-lifo", "--scenario", "closed-loop",
		"--duration-s", "0.1", "--warmup-s", "0", "--gate", "--param", "goroutines=2")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	first := <-lines
	if !strings.Contains(first, `"event":"ready"`) {
		t.Fatalf("first line %q", first)
	}
	select {
	case l := <-lines:
		t.Fatalf("went on before the gate: %q", l)
	case <-time.After(300 * time.Millisecond):
	}
	io.WriteString(stdin, "go\n")
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(rest) != 3 || !strings.Contains(rest[2], `"event":"result"`) {
		t.Errorf("after the gate: %v", rest)
	}
	// Bad input from the binary: exit 2, one stderr line.
	bad := exec.Command(bin, "run", "--strategy", "nope", "--duration-s", "1")
	var errb bytes.Buffer
	bad.Stderr = &errb
	err := bad.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
		strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("bad strategy: %v, stderr %q", err, errb.String())
	}
}

func TestHistogram(t *testing.T) {
	var h hist
	for v := int64(1); v <= 1_000_000; v++ {
		h.record(v)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		got, want := h.quantile(q), q*1e6
		if math.Abs(got-want)/want > 1.0/16 {
			t.Errorf("q%v: %v, want ~%v", q, got, want)
		}
	}
	for i := range 900 {
		if bucketOf(bucketUpper(i)) != i || (i > 0 && bucketOf(bucketUpper(i-1)+1) != i) {
			t.Fatalf("bucket %d bounds inconsistent", i)
		}
	}
	s := summary([]float64{1, 2, 3, 4})
	if s["p50"] != 2.5 || s["avg"] != 2.5 || s["max"] != 4 {
		t.Errorf("summary %v", s)
	}
}

// check takes run's arguments and answers as run would before set-up, doing nothing else.
func TestCheckValidatesWithoutRunning(t *testing.T) {
	good := []string{"check", "--strategy", "smart-lifo", "--duration-s", "1", "--warmup-s", "0"}
	if code, out, errText := runMain(t, "", good...); code != 0 || out != "" || errText != "" {
		t.Errorf("%v: exit %d, stdout %q, stderr %q", good, code, out, errText)
	}
	bad := [][]string{
		{"check", "--strategy", "smart-lifo", "--duration-s", "86401"},
		{"check", "--strategy", "smart-lifo", "--duration-s", "1", "--warmup-s", "100000"},
		{"check", "--strategy", "smart-lifo", "--duration-s", "1", "--param", "settings=0,0"},
		{"check", "--strategy", "smart-lifo", "--duration-s", "1", "--param", "load=trace",
			"--param", "latency_ms=60000", "--param", "trace_duration_s=1"},
	}
	for _, args := range bad {
		code, out, errText := runMain(t, "", args...)
		if code != 2 || out != "" || strings.Count(errText, "\n") != 1 ||
			!strings.HasPrefix(errText, "error: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errText)
		}
	}
}

// vitess-smartconnpool is not linked into pools-bench: its run is handed to the binary
// beside it (exec), and a missing binary is a failed run (exit 1), not bad input.
func TestVitessStrategyDelegated(t *testing.T) {
	if bin := pool.DelegateBinary("vitess-smartconnpool"); bin != "pools-bench-vitess" {
		t.Fatalf("DelegateBinary = %q", bin)
	}
	if bin := pool.DelegateBinary("smart-lifo"); bin != "" {
		t.Fatalf("DelegateBinary(smart-lifo) = %q", bin)
	}
	if _, err := pool.New("vitess-smartconnpool", pool.Config{Capacity: 1}); err == nil {
		t.Fatal("pool.New built vitess-smartconnpool in pools-bench")
	}
	// The test binary has no pools-bench-vitess beside it.
	code, _, errText := runMain(t, "", "run", "--strategy", "vitess-smartconnpool", "--duration-s", "0.1")
	if code != 1 || !strings.Contains(errText, "pools-bench-vitess") {
		t.Errorf("exit %d, stderr %q", code, errText)
	}
}
