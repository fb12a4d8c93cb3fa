package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/benchharness/pools/internal/bench"
	"github.com/benchharness/pools/vitess/adapter"
)

// The vitess strategy replays a short trace and a closed loop through pools-bench's own
// driver: the contract's events in order and a result with the pool's figures.
func TestRunVitessStrategy(t *testing.T) {
	adapter.Register()
	for _, args := range [][]string{
		{"--scenario", "contended", "--duration-s", "0.5", "--param", "latency_ms=2"},
		{"--scenario", "closed-loop", "--duration-s", "0.2", "--warmup-s", "0.05", "--param", "goroutines=4"},
	} {
		full := append([]string{"run", "--strategy", adapter.Name}, args...)
		var out, errb bytes.Buffer
		if code := bench.Main(full, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", full, code, errb.String())
		}
		var order []string
		var res map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
			order = append(order, ev["event"].(string))
			res = ev
		}
		if strings.Join(order, ",") != "ready,measure_start,measure_end,result" {
			t.Fatalf("events %v", order)
		}
		if res["strategy"] != adapter.Name || !(res["ops"].(float64) > 0) {
			t.Errorf("result strategy %v ops %v", res["strategy"], res["ops"])
		}
		if res["connections_open_max"].(float64) > res["params"].(map[string]any)["capacity"].(float64) {
			t.Errorf("open max %v over capacity", res["connections_open_max"])
		}
	}
}
