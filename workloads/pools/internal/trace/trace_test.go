package trace

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func contended(seed uint64) Options {
	return Options{RPS: 100, Decay: 0.01, Duration: 30 * time.Second, Latency: 15 * time.Millisecond,
		Weights: []float64{5, 1, 1, 1}, Seed: seed}
}

// The number of arrivals matches the integral of RPS*exp(-decay t), within 4 sigma of
// a Poisson count, and so does the count in each third of the trace.
func TestArrivalRate(t *testing.T) {
	for _, decay := range []float64{0, 0.01, 0.1} {
		o := contended(7)
		o.RPS, o.Decay = 2000, decay
		reqs := Generate(o)
		want := o.ExpectedArrivals()
		if got := float64(len(reqs)); math.Abs(got-want) > 4*math.Sqrt(want) {
			t.Errorf("decay %v: %v arrivals, want %.0f", decay, got, want)
		}
		thirds := [3]float64{}
		for _, r := range reqs {
			thirds[int(r.At*3/o.Duration)]++
		}
		for k := range 3 {
			a, b := float64(k)*10, float64(k+1)*10
			exp := o.RPS * 10
			if decay > 0 {
				exp = o.RPS * (math.Exp(-decay*a) - math.Exp(-decay*b)) / decay
			}
			if math.Abs(thirds[k]-exp) > 4*math.Sqrt(exp) {
				t.Errorf("decay %v third %d: %v arrivals, want %.0f", decay, k, thirds[k], exp)
			}
		}
		for i := 1; i < len(reqs); i++ {
			if reqs[i].At < reqs[i-1].At || reqs[i].At >= o.Duration {
				t.Fatalf("arrival %d at %v out of order or range", i, reqs[i].At)
			}
		}
	}
}

// Durations follow Pareto(Xm = latency, alpha = 1) truncated at duration/4:
// P(d > x) = (Xm/x - Xm/cap) / (1 - Xm/cap).
func TestParetoDurations(t *testing.T) {
	o := contended(3)
	o.RPS = 3000 // ~86k samples
	reqs := Generate(o)
	xm, maxD := float64(o.Latency), float64(o.Cap())
	n := float64(len(reqs))
	for _, mult := range []float64{1.5, 2, 4, 10, 50} {
		x := xm * mult
		above := 0.0
		for _, r := range reqs {
			if float64(r.Duration) > x {
				above++
			}
		}
		want := (xm/x - xm/maxD) / (1 - xm/maxD)
		sigma := math.Sqrt(want * (1 - want) / n)
		if got := above / n; math.Abs(got-want) > 5*sigma+1e-4 {
			t.Errorf("P(d > %.0fms) = %.4f, want %.4f", x/1e6, got, want)
		}
	}
	for _, r := range reqs {
		if r.Duration < o.Latency || r.Duration > o.Cap() {
			t.Fatalf("duration %v outside [%v, %v]", r.Duration, o.Latency, o.Cap())
		}
	}
}

// Settings are drawn in proportion to their weights.
func TestSettingFrequencies(t *testing.T) {
	o := contended(11)
	o.RPS = 3000
	o.Weights = []float64{5, 2, 1, 0, 1}
	reqs := Generate(o)
	counts := make([]float64, len(o.Weights))
	for _, r := range reqs {
		counts[r.Setting]++
	}
	n := float64(len(reqs))
	for i, w := range o.Weights {
		p := w / 9
		if math.Abs(counts[i]/n-p) > 5*math.Sqrt(p*(1-p)/n)+1e-9 {
			t.Errorf("setting %d: frequency %.4f, want %.4f", i, counts[i]/n, p)
		}
	}
	// One weight: every request is clean.
	o.Weights = []float64{1}
	for _, r := range Generate(o) {
		if r.Setting != 0 {
			t.Fatal("a single weight must give clean requests only")
		}
	}
}

// The same options and seed give the same trace; another seed another one.
func TestDeterministic(t *testing.T) {
	a, b := Generate(contended(5)), Generate(contended(5))
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different traces")
	}
	if reflect.DeepEqual(a, Generate(contended(6))) {
		t.Error("different seeds, same trace")
	}
}

func TestParseWeights(t *testing.T) {
	w, err := ParseWeights(" 5, 1,1 ,1")
	if err != nil || !reflect.DeepEqual(w, []float64{5, 1, 1, 1}) {
		t.Errorf("got %v %v", w, err)
	}
	for _, bad := range []string{"", "a", "1,-1", "0,0", "1,,2", "NaN"} {
		if _, err := ParseWeights(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	o := contended(1)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o.Duration = 40 * time.Millisecond
	if o.Validate() == nil {
		t.Error("latency above the cap accepted")
	}
}
