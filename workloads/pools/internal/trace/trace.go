// Package trace synthesises the request traces of vitess PR #14034's pool analysis: Poisson
// arrivals whose rate decays exponentially, Pareto-distributed durations, and a setting per
// request drawn by weight. A trace depends only on its options and seed, so every strategy
// replays exactly the same requests.
package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Request is one request of a trace.
type Request struct {
	// At is the arrival time from the start of the trace.
	At time.Duration
	// Duration is how long the request holds its connection.
	Duration time.Duration
	// Setting indexes the weights: 0 = a clean connection.
	Setting int
}

// Options define a trace.
type Options struct {
	RPS      float64       // arrival rate at t = 0
	Decay    float64       // the rate at t is RPS * exp(-Decay * t[s])
	Duration time.Duration // arrivals fall in [0, Duration); durations are capped at Duration/4
	Latency  time.Duration // Pareto scale Xm (the minimum duration)
	Alpha    float64       // Pareto shape; 0 = 1
	Weights  []float64     // setting weights, index 0 = clean
	Seed     uint64
}

// Cap is the longest request duration: a quarter of the trace, as in the source.
func (o Options) Cap() time.Duration { return o.Duration / 4 }

// ExpectedArrivals is the integral of the rate over the trace.
func (o Options) ExpectedArrivals() float64 {
	d := o.Duration.Seconds()
	if o.Decay == 0 {
		return o.RPS * d
	}
	return o.RPS * (1 - math.Exp(-o.Decay*d)) / o.Decay
}

// Validate reports options that cannot make a trace.
func (o Options) Validate() error {
	switch {
	case !(o.RPS > 0):
		return fmt.Errorf("rps must be > 0")
	case o.Duration <= 0:
		return fmt.Errorf("trace duration must be > 0")
	case o.Latency <= 0:
		return fmt.Errorf("latency must be > 0 (it is the Pareto scale of the durations)")
	case o.Latency >= o.Cap():
		return fmt.Errorf("latency %v must be below a quarter of the trace (%v), the duration cap",
			o.Latency, o.Cap())
	case len(o.Weights) == 0:
		return fmt.Errorf("no setting weights")
	}
	return nil
}

// Generate builds the trace: first the arrival times, then a setting per request, then
// a duration per request, all from one generator seeded by Seed.
func Generate(o Options) []Request {
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed_14034))
	alpha := o.Alpha
	if alpha == 0 {
		alpha = 1
	}
	// Arrivals: exponential inter-arrival times at the rate of the current instant.
	var times []time.Duration
	limit := o.Duration.Seconds()
	for t := 0.0; ; {
		rate := o.RPS * math.Exp(-o.Decay*t)
		gap := rng.ExpFloat64() / rate
		if gap >= limit {
			continue // as the source: an absurd gap is redrawn
		}
		t += gap
		if t >= limit {
			break
		}
		times = append(times, time.Duration(t*float64(time.Second)))
	}
	reqs := make([]Request, len(times))
	cdf := make([]float64, len(o.Weights))
	sum := 0.0
	for i, w := range o.Weights {
		sum += w
		cdf[i] = sum
	}
	for i := range reqs {
		reqs[i].At = times[i]
		if len(cdf) > 1 {
			v := rng.Float64() * sum
			k := 0
			for k < len(cdf)-1 && cdf[k] <= v {
				k++
			}
			reqs[i].Setting = k
		}
	}
	xm, maxD := float64(o.Latency), float64(o.Cap())
	for i := range reqs {
		for {
			u := 1 - rng.Float64() // (0, 1]
			d := xm / math.Pow(u, 1/alpha)
			if d <= maxD {
				reqs[i].Duration = time.Duration(d)
				break
			}
		}
	}
	return reqs
}

// ParseWeights reads "5,1,1,1": at least one weight, each finite and >= 0, the sum > 0.
func ParseWeights(text string) ([]float64, error) {
	var out []float64
	sum := 0.0
	for _, f := range strings.Split(text, ",") {
		w, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, fmt.Errorf("bad weight %q", strings.TrimSpace(f))
		}
		sum += w
		out = append(out, w)
	}
	if len(out) > 64 {
		return nil, fmt.Errorf("at most 64 settings")
	}
	if sum <= 0 {
		return nil, fmt.Errorf("the weights sum to 0")
	}
	return out, nil
}
