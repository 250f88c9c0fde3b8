package validate

import (
	"fmt"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

// gpuCheckIDs are the per-GPU checks a gpu block can produce, in order.
func gpuCheckIDs(g *profile.GPU) []string {
	ids := []string{"gpu.health"}
	if g.Model != "" {
		ids = append(ids, "gpu.model")
	}
	if g.MinMemoryGiB > 0 {
		ids = append(ids, "gpu.memory")
	}
	if g.MinNVLinkLinks > 0 {
		ids = append(ids, "gpu.nvlink")
	}
	if g.MIGEnabled != nil {
		ids = append(ids, "gpu.mig")
	}
	if g.ECCEnabled != nil {
		ids = append(ids, "gpu.ecc_mode")
	}
	ids = append(ids, "gpu.uncorrected_errors")
	if g.MinPCIeGen > 0 {
		ids = append(ids, "gpu.pcie_gen")
	}
	ids = append(ids, "gpu.pcie_width")
	if g.MaxTemperatureC > 0 {
		ids = append(ids, "gpu.temperature")
	}
	return ids
}

func (v *validator) gpu(g *profile.GPU) {
	sec := v.inv.GPU
	countExp := fmt.Sprintf("%d", g.Count)
	problem := v.collectorProblem(probe.CollectorGPU)
	if problem == "" && !sec.Available {
		problem = sec.Reason
	}
	if problem != "" {
		if g.Count == 0 && sec.LibraryMissing {
			v.expect(true, "gpu.count", "", countExp, "0 (no NVIDIA driver)", "")
			return
		}
		v.notRun("gpu.count", "", countExp, problem)
		for _, id := range gpuCheckIDs(g) {
			v.notRun(id, "", "", problem)
		}
		if g.XIDSeconds > 0 {
			v.notRun("gpu.xid", "", "no critical XID", problem)
		}
		return
	}
	v.expect(sec.Count == g.Count, "gpu.count", "", countExp, fmt.Sprint(sec.Count),
		fmt.Sprintf("found %d GPUs, profile expects %d", sec.Count, g.Count))
	for _, d := range sec.GPUs {
		v.gpuDevice(g, d)
	}
	if g.XIDSeconds > 0 {
		v.xid(sec.XID)
	}
}

func (v *validator) gpuDevice(g *profile.GPU, d gpu.GPU) {
	subj := fmt.Sprintf("gpu%d", d.Index)
	maxErr := 0
	if g.MaxUncorrectedErrors != nil {
		maxErr = *g.MaxUncorrectedErrors
	}
	for _, id := range gpuCheckIDs(g) {
		switch id {
		case "gpu.health":
			v.expect(len(d.Errors) == 0, id, subj, "all NVML queries answer", okOr(len(d.Errors) == 0, strings.Join(d.Errors, "; ")),
				"NVML queries failed: "+strings.Join(d.Errors, "; "))
		case "gpu.model":
			ok := strings.Contains(strings.ToLower(d.Name), strings.ToLower(g.Model))
			v.expect(ok, id, subj, g.Model, d.Name, fmt.Sprintf("%s is %s, profile expects %s", subj, orNone(d.Name), g.Model))
		case "gpu.memory":
			gib := float64(d.MemoryBytes) / (1 << 30)
			v.expect(gib >= g.MinMemoryGiB, id, subj, fmt.Sprintf(">= %g GiB", g.MinMemoryGiB), fmt.Sprintf("%.1f GiB", gib),
				fmt.Sprintf("%s has %.1f GiB, profile needs %g", subj, gib, g.MinMemoryGiB))
		case "gpu.nvlink":
			nl := d.NVLink
			reason := fmt.Sprintf("%s: %d of %d NVLink links active, profile needs %d", subj, nl.Active, nl.Links, g.MinNVLinkLinks)
			if len(nl.Down) > 0 {
				reason += "; down: " + linkList(nl.Down)
			}
			if !nl.Supported {
				reason = subj + ": no NVLink"
			}
			v.expect(nl.Active >= g.MinNVLinkLinks, id, subj, fmt.Sprintf(">= %d active", g.MinNVLinkLinks),
				fmt.Sprintf("%d/%d active", nl.Active, nl.Links), reason)
		case "gpu.mig":
			want := *g.MIGEnabled
			if d.MIG == nil {
				// MIG unsupported is MIG disabled.
				v.expect(!want, id, subj, onOff(want), "unsupported", subj+" does not support MIG")
				continue
			}
			v.expect(d.MIG.Enabled == want, id, subj, onOff(want), onOff(d.MIG.Enabled),
				fmt.Sprintf("%s has MIG %s, profile expects %s", subj, onOff(d.MIG.Enabled), onOff(want)))
		case "gpu.ecc_mode":
			want := *g.ECCEnabled
			if d.ECC == nil {
				v.expect(!want, id, subj, onOff(want), "unsupported", subj+" does not support ECC")
				continue
			}
			v.expect(d.ECC.Enabled == want, id, subj, onOff(want), onOff(d.ECC.Enabled),
				fmt.Sprintf("%s has ECC %s, profile expects %s", subj, onOff(d.ECC.Enabled), onOff(want)))
		case "gpu.uncorrected_errors":
			v.uncorrected(subj, d, maxErr)
		case "gpu.pcie_gen":
			// Idle GPUs lower their link generation to save power, so the
			// generation is judged on what the link can reach.
			p := d.PCIe
			if p.GenMax == 0 {
				v.notRun(id, subj, fmt.Sprintf(">= Gen%d", g.MinPCIeGen), "PCIe generation not reported")
				continue
			}
			v.expect(p.GenMax >= g.MinPCIeGen, id, subj, fmt.Sprintf(">= Gen%d", g.MinPCIeGen), fmt.Sprintf("Gen%d (now Gen%d)", p.GenMax, p.GenCurrent),
				fmt.Sprintf("%s link reaches Gen%d, profile needs Gen%d", subj, p.GenMax, g.MinPCIeGen))
		case "gpu.pcie_width":
			p := d.PCIe
			want := g.MinPCIeWidth
			if want == 0 {
				want = p.WidthMax // not declared: the link must run at full width
			}
			if p.WidthCurrent == 0 || want == 0 {
				if g.MinPCIeWidth > 0 {
					v.notRun(id, subj, fmt.Sprintf(">= x%d", want), "PCIe width not reported")
				}
				continue
			}
			v.expect(p.WidthCurrent >= want, id, subj, fmt.Sprintf(">= x%d", want), fmt.Sprintf("x%d of x%d", p.WidthCurrent, p.WidthMax),
				fmt.Sprintf("%s PCIe link degraded to x%d (max x%d), profile needs x%d", subj, p.WidthCurrent, p.WidthMax, want))
		case "gpu.temperature":
			exp := fmt.Sprintf("<= %d C", g.MaxTemperatureC)
			if d.TemperatureC == nil {
				v.notRun(id, subj, exp, "temperature not reported")
				continue
			}
			t := *d.TemperatureC
			v.expect(t <= g.MaxTemperatureC, id, subj, exp, fmt.Sprintf("%d C", t), fmt.Sprintf("%s at %d C", subj, t))
		}
	}
}

func (v *validator) uncorrected(subj string, d gpu.GPU, maxErr int) {
	const id = "gpu.uncorrected_errors"
	exp := fmt.Sprintf("<= %d", maxErr)
	var problems, seen []string
	known := false
	if e := d.ECC; e != nil {
		if e.VolatileUncorrected != nil {
			known = true
			seen = append(seen, fmt.Sprintf("volatile %d", *e.VolatileUncorrected))
			if *e.VolatileUncorrected > uint64(maxErr) {
				problems = append(problems, fmt.Sprintf("%d volatile uncorrected ECC errors", *e.VolatileUncorrected))
			}
		}
		if e.AggregateUncorrected != nil {
			known = true
			seen = append(seen, fmt.Sprintf("aggregate %d", *e.AggregateUncorrected))
			if *e.AggregateUncorrected > uint64(maxErr) {
				problems = append(problems, fmt.Sprintf("%d aggregate uncorrected ECC errors", *e.AggregateUncorrected))
			}
		}
	}
	if r := d.RemappedRows; r != nil {
		known = true
		seen = append(seen, fmt.Sprintf("remapped rows %d uncorrectable", r.Uncorrectable))
		if r.Pending {
			problems = append(problems, "row remapping pending (reset the GPU)")
		}
		if r.Failed {
			problems = append(problems, "row remapping failed")
		}
	}
	if p := d.RetiredPages; p != nil {
		known = true
		seen = append(seen, fmt.Sprintf("retired pages %d double-bit", p.DoubleBit))
		if p.DoubleBit > maxErr {
			problems = append(problems, fmt.Sprintf("%d pages retired for double-bit errors", p.DoubleBit))
		}
		if p.Pending {
			problems = append(problems, "page retirement pending")
		}
	}
	if !known {
		v.notRun(id, subj, exp, "no ECC, row-remap or page-retirement counters reported")
		return
	}
	v.expect(len(problems) == 0, id, subj, exp, strings.Join(seen, ", "), subj+": "+strings.Join(problems, "; "))
}

func (v *validator) xid(w *gpu.XIDWatch) {
	const id = "gpu.xid"
	switch {
	case w == nil:
		v.notRun(id, "", "no critical XID", "XID events were not watched")
	case w.Error != "":
		v.notRun(id, "", "no critical XID", w.Error)
	case w.WindowSeconds <= 0 || w.WatchedSeconds < w.WindowSeconds:
		// A watch that did not last its window is incomplete: not run,
		// whatever it saw (a critical XID seen still fails below).
		if len(w.Events) == 0 {
			v.notRun(id, "", "no critical XID", fmt.Sprintf("XID events watched for %gs of %gs", w.WatchedSeconds, w.WindowSeconds))
			return
		}
		fallthrough
	default:
		var evs []string
		for _, e := range w.Events {
			evs = append(evs, fmt.Sprintf("gpu%d XID %d", e.GPU, e.XID))
		}
		v.expect(len(evs) == 0, id, "", "no critical XID", fmt.Sprintf("%d in %gs", len(evs), w.WindowSeconds),
			"critical XID events: "+strings.Join(evs, ", "))
	}
}

func linkList(links []int) string {
	s := make([]string, len(links))
	for i, l := range links {
		s[i] = fmt.Sprintf("link %d", l)
	}
	return strings.Join(s, ", ")
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func okOr(ok bool, s string) string {
	if ok {
		return "ok"
	}
	return s
}
