package bench

import (
	"math"
	"math/bits"
	"slices"
)

// summary is {avg, std, p50, p75, p99, max} of exact samples, as the source's tables;
// percentiles interpolate linearly between order statistics (numpy's default).
func summary(xs []float64) map[string]float64 {
	if len(xs) == 0 {
		return map[string]float64{"avg": 0, "std": 0, "p50": 0, "p75": 0, "p99": 0, "max": 0}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	v := 0.0
	for _, x := range s {
		v += (x - mean) * (x - mean)
	}
	return map[string]float64{
		"avg": mean, "std": math.Sqrt(v / float64(len(s))),
		"p50": quantile(s, 0.5), "p75": quantile(s, 0.75), "p99": quantile(s, 0.99),
		"max": s[len(s)-1],
	}
}

// latencySummary is the shared latency_ns shape {p50, p90, p99, p999, max}.
func latencySummary(xs []float64) map[string]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	out := map[string]float64{}
	for name, q := range map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999} {
		out[name] = quantile(s, q)
	}
	out["max"] = 0
	if len(s) > 0 {
		out["max"] = s[len(s)-1]
	}
	return out
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// distribution is {min, p50, max, mean} of per-connection counters.
func distribution(xs []int64) map[string]float64 {
	if len(xs) == 0 {
		return map[string]float64{"min": 0, "p50": 0, "max": 0, "mean": 0}
	}
	f := make([]float64, len(xs))
	sum := 0.0
	for i, x := range xs {
		f[i] = float64(x)
		sum += f[i]
	}
	slices.Sort(f)
	return map[string]float64{"min": f[0], "p50": quantile(f, 0.5), "max": f[len(f)-1],
		"mean": sum / float64(len(f))}
}

// hist is a log-linear histogram of non-negative nanoseconds: 16 sub-buckets per power of
// two (relative error < 1/16), for closed-loop waits too many to keep, and for the
// wait_hist CDF of the result.
type hist struct {
	counts [64 * 16]int64
	n      int64
	sum    float64
	sumSq  float64
	max    int64
}

func bucketOf(v int64) int {
	if v < 16 {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 1 // v in [2^e, 2^(e+1))
	return (e-3)*16 + int((uint64(v)>>(e-4))&15)
}

// bucketUpper is the largest value of bucket i.
func bucketUpper(i int) int64 {
	if i < 16 {
		return int64(i)
	}
	e, sub := i/16+3, int64(i%16)
	return (16+sub+1)<<(e-4) - 1
}

func (h *hist) record(v int64) {
	v = max(v, 0)
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	h.sumSq += float64(v) * float64(v)
	h.max = max(h.max, v)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.sumSq += o.sumSq
	h.max = max(h.max, o.max)
}

// quantile is the upper bound of the bucket holding the q-th value (capped at the max).
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	seen := int64(0)
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(min(bucketUpper(i), h.max))
		}
	}
	return float64(h.max)
}

func (h *hist) summary() map[string]float64 {
	if h.n == 0 {
		return summary(nil)
	}
	mean := h.sum / float64(h.n)
	return map[string]float64{
		"avg": mean, "std": math.Sqrt(max(h.sumSq/float64(h.n)-mean*mean, 0)),
		"p50": h.quantile(0.5), "p75": h.quantile(0.75), "p99": h.quantile(0.99),
		"max": float64(h.max),
	}
}

func (h *hist) latencySummary() map[string]float64 {
	return map[string]float64{"p50": h.quantile(0.5), "p90": h.quantile(0.9),
		"p99": h.quantile(0.99), "p999": h.quantile(0.999), "max": float64(h.max)}
}

// cdf is the wait_hist of the result: the non-empty buckets' upper bounds and counts.
// Lists, so the harness keeps them as data and does not summarise them as metrics.
func (h *hist) cdf() map[string]any {
	le, counts := []int64{}, []int64{}
	for i, c := range h.counts {
		if c > 0 {
			le = append(le, bucketUpper(i))
			counts = append(counts, c)
		}
	}
	return map[string]any{"le_ns": le, "counts": counts}
}
