package bench

import (
	"slices"
	"strconv"
)

// summary is the median, best and spread of repeated measurements.
type summary struct {
	median, min, max float64
	n                int
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{median: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

// spread is (max-min)/median, 0 when the median is 0.
func (s summary) spread() float64 {
	if s.median == 0 {
		return 0
	}
	return (s.max - s.min) / s.median
}

// percentile returns the p-th percentile (0-100) of xs by the nearest-rank
// method.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// measured fills a Result from repeated rates (higher is better).
func measured(name, backend, unit string, rates []float64, peak float64, params map[string]string) Result {
	s := summarize(rates)
	r := Result{
		Name: name, Device: "cpu", Backend: backend, Ran: true,
		Value: s.median, Unit: unit, HigherIsBetter: true,
		Reps: s.n, Spread: s.spread(), Peak: peak, Params: params,
	}
	if r.Params == nil {
		r.Params = map[string]string{}
	}
	r.Params["best"] = ftoa(s.max)
	if peak > 0 {
		r.Efficiency = s.median / peak
	}
	return r
}

func notRun(name, device, reason string) Result {
	return Result{Name: name, Device: device, Reason: reason}
}

func mergeParams(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
