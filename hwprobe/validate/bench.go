package validate

import (
	"context"
	"fmt"
	"math"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

func (v *validator) benchmarks(ctx context.Context, bms []profile.Benchmark, b Bencher) {
	names := make([]string, len(bms))
	for i, bm := range bms {
		names[i] = bm.Name
	}
	var results []bench.Result
	problem := ""
	if b == nil {
		problem = "benchmarks are not built into this hwprobe"
	} else {
		var err error
		if results, err = b.Run(ctx, names); err != nil {
			problem = "benchmarks: " + err.Error()
		}
	}
	for _, bm := range bms {
		optional := bm.Optional
		id := "bench." + bm.Name
		if problem != "" {
			v.add(Check{ID: id, Status: NotRun, Expected: thresholds(bm), Reason: problem, Optional: optional})
			continue
		}
		found := false
		for _, r := range results {
			if r.Name != bm.Name {
				continue
			}
			found = true
			v.benchResult(id, bm, r)
		}
		if !found {
			v.add(Check{ID: id, Status: NotRun, Expected: thresholds(bm), Reason: "no result for " + bm.Name, Optional: optional})
		}
	}
}

func (v *validator) benchResult(id string, bm profile.Benchmark, r bench.Result) {
	c := Check{ID: id, Subject: r.Device, Expected: thresholds(bm), Optional: bm.Optional}
	if !r.Ran {
		c.Status, c.Reason = NotRun, r.Reason
		if c.Reason == "" {
			c.Reason = "benchmark did not run"
		}
		v.add(c)
		return
	}
	if r.Reps < 1 || math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
		// Marked as run but with nothing measured: incomplete, not a pass.
		c.Status, c.Reason = NotRun, fmt.Sprintf("benchmark reported no measurement (%d repetitions, value %v)", r.Reps, r.Value)
		v.add(c)
		return
	}
	c.Observed = fmt.Sprintf("%.4g %s", r.Value, r.Unit)
	if r.Peak > 0 {
		c.Observed += fmt.Sprintf(" (%.0f%% of peak)", r.Efficiency*100)
	}
	c.Status = Pass
	var reasons []string
	if bm.Min != nil && r.Value < *bm.Min {
		reasons = append(reasons, fmt.Sprintf("%.4g %s below minimum %g", r.Value, r.Unit, *bm.Min))
	}
	if bm.Max != nil && r.Value > *bm.Max {
		reasons = append(reasons, fmt.Sprintf("%.4g %s above maximum %g", r.Value, r.Unit, *bm.Max))
	}
	if bm.Backend != "" && r.Backend != bm.Backend {
		why := fmt.Sprintf("ran on %s, not %s", r.Backend, bm.Backend)
		if note := r.Params["amx"]; note != "" {
			why += ": " + note
		}
		reasons = append(reasons, why)
	}
	if bm.MinEfficiency != nil {
		if r.Peak <= 0 {
			c.Status, c.Reason = NotRun, "peak unknown: efficiency cannot be judged"
			v.add(c)
			return
		}
		if r.Efficiency < *bm.MinEfficiency {
			reasons = append(reasons, fmt.Sprintf("%.0f%% of peak, below %.0f%%", r.Efficiency*100, *bm.MinEfficiency*100))
		}
	}
	if len(reasons) > 0 {
		c.Status = Fail
		c.Reason = fmt.Sprint(reasons)
		if len(reasons) == 1 {
			c.Reason = reasons[0]
		}
	}
	v.add(c)
}

func thresholds(bm profile.Benchmark) string {
	s := ""
	add := func(part string) {
		if s != "" {
			s += ", "
		}
		s += part
	}
	if bm.Min != nil {
		add(fmt.Sprintf(">= %g", *bm.Min))
	}
	if bm.Max != nil {
		add(fmt.Sprintf("<= %g", *bm.Max))
	}
	if bm.MinEfficiency != nil {
		add(fmt.Sprintf(">= %.0f%% of peak", *bm.MinEfficiency*100))
	}
	if s == "" {
		s = "runs"
	}
	if bm.Backend != "" {
		s += " on " + bm.Backend
	}
	return s
}
