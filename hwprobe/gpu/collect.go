//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Options tune Collect.
type Options struct {
	// XIDWindow, when above zero, listens for critical XID events for that
	// long after the inventory is read.
	XIDWindow time.Duration
}

// Collect reads every GPU NVML reports. A missing NVIDIA library is not an
// error: the section says Available false with LibraryMissing set. The
// error is non-nil when NVML is present but could not be read; the section
// then says what was read.
func Collect(ctx context.Context, lib Library, opts Options) (Section, error) {
	if lib == nil {
		return Section{Reason: "NVML not configured"}, nil
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return Section{LibraryMissing: true, Reason: "NVML library not found: no NVIDIA driver installed"}, nil
		}
		s := Section{Reason: "NVML init: " + ret.Error()}
		if ret == nvml.ERROR_DRIVER_NOT_LOADED {
			s.Reason = "NVIDIA driver not loaded"
		}
		return s, fmt.Errorf("nvml init: %w", ret)
	}
	defer lib.Shutdown()

	s := Section{Available: true}
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.DriverVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		s.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		s.Available = false
		s.Reason = "device count: " + ret.Error()
		return s, fmt.Errorf("nvml device count: %w", ret)
	}
	s.Count = n
	var errs []error
	handles := make([]Device, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return s, fmt.Errorf("gpu %d: %w", i, err)
		}
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			// A GPU NVML counts but cannot open is itself a fault to report.
			s.GPUs = append(s.GPUs, GPU{Index: i, Errors: []string{"handle: " + ret.Error()}})
			errs = append(errs, fmt.Errorf("gpu %d handle: %w", i, ret))
			continue
		}
		handles = append(handles, d)
		s.GPUs = append(s.GPUs, readDevice(i, d))
	}
	if opts.XIDWindow > 0 {
		s.XID = watchXID(ctx, lib, handles, s.GPUs, opts.XIDWindow)
	}
	return s, errors.Join(errs...)
}

// reader records query failures other than "not supported".
type reader struct{ errs []string }

func (r *reader) ok(what string, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		return false
	default:
		r.errs = append(r.errs, what+": "+ret.Error())
		return false
	}
}

func readDevice(index int, d Device) GPU {
	r := &reader{}
	g := GPU{Index: index}
	if v, ret := d.GetName(); r.ok("name", ret) {
		g.Name = v
	}
	if v, ret := d.GetUUID(); r.ok("uuid", ret) {
		g.UUID = v
	}
	if p, ret := d.GetPciInfo(); r.ok("pci info", ret) {
		g.PCIBusID = cString(p.BusId[:])
	}
	if m, ret := d.GetMemoryInfo(); r.ok("memory", ret) {
		g.MemoryBytes = m.Total
	}
	if major, minor, ret := d.GetCudaComputeCapability(); r.ok("compute capability", ret) {
		g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	g.NVLink = readNVLink(d, r)
	if cur, pending, ret := d.GetMigMode(); r.ok("mig mode", ret) {
		g.MIG = &MIG{Enabled: cur == nvml.DEVICE_MIG_ENABLE, PendingEnabled: pending == nvml.DEVICE_MIG_ENABLE}
	}
	if cur, pending, ret := d.GetEccMode(); r.ok("ecc mode", ret) {
		e := &ECC{Enabled: cur == nvml.FEATURE_ENABLED, PendingEnabled: pending == nvml.FEATURE_ENABLED}
		if v, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok("volatile uncorrected ecc", ret) {
			e.VolatileUncorrected = &v
		}
		if v, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); r.ok("aggregate uncorrected ecc", ret) {
			e.AggregateUncorrected = &v
		}
		g.ECC = e
	}
	if corr, unc, pending, failed, ret := d.GetRemappedRows(); r.ok("remapped rows", ret) {
		g.RemappedRows = &RemappedRows{Correctable: corr, Uncorrectable: unc, Pending: pending, Failed: failed}
	}
	if sbe, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS); r.ok("retired pages", ret) {
		rp := &RetiredPages{SingleBit: len(sbe)}
		if dbe, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR); r.ok("retired pages", ret) {
			rp.DoubleBit = len(dbe)
		}
		if st, ret := d.GetRetiredPagesPendingStatus(); r.ok("retired pages pending", ret) {
			rp.Pending = st == nvml.FEATURE_ENABLED
		}
		g.RetiredPages = rp
	}
	if v, ret := d.GetCurrPcieLinkGeneration(); r.ok("pcie generation", ret) {
		g.PCIe.GenCurrent = v
	}
	if v, ret := d.GetMaxPcieLinkGeneration(); r.ok("pcie max generation", ret) {
		g.PCIe.GenMax = v
	}
	if v, ret := d.GetCurrPcieLinkWidth(); r.ok("pcie width", ret) {
		g.PCIe.WidthCurrent = v
	}
	if v, ret := d.GetMaxPcieLinkWidth(); r.ok("pcie max width", ret) {
		g.PCIe.WidthMax = v
	}
	if v, ret := d.GetClockInfo(nvml.CLOCK_SM); r.ok("sm clock", ret) {
		g.Clocks.SMMHz = v
	}
	if v, ret := d.GetClockInfo(nvml.CLOCK_MEM); r.ok("memory clock", ret) {
		g.Clocks.MemoryMHz = v
	}
	if v, ret := d.GetMaxClockInfo(nvml.CLOCK_SM); r.ok("sm max clock", ret) {
		g.Clocks.SMMaxMHz = v
	}
	if v, ret := d.GetMaxClockInfo(nvml.CLOCK_MEM); r.ok("memory max clock", ret) {
		g.Clocks.MemoryMaxMHz = v
	}
	if mw, ret := d.GetPowerManagementLimit(); r.ok("power limit", ret) {
		w := float64(mw) / 1000
		g.PowerLimitWatts = &w
	}
	if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); r.ok("temperature", ret) {
		c := int(t)
		g.TemperatureC = &c
	}
	g.Errors = r.errs
	return g
}

// readNVLink walks the links that exist: ERROR_INVALID_ARGUMENT means no
// such link, ERROR_NOT_SUPPORTED on every link means no NVLink at all.
func readNVLink(d Device, r *reader) NVLink {
	var nl NVLink
	for link := range nvml.NVLINK_MAX_LINKS {
		st, ret := d.GetNvLinkState(link)
		switch ret {
		case nvml.SUCCESS:
			nl.Supported = true
			nl.Links++
			if st == nvml.FEATURE_ENABLED {
				nl.Active++
			} else {
				nl.Down = append(nl.Down, link)
			}
		case nvml.ERROR_INVALID_ARGUMENT, nvml.ERROR_NOT_SUPPORTED:
			// no such link
		default:
			r.ok(fmt.Sprintf("nvlink %d", link), ret)
		}
	}
	return nl
}

func watchXID(ctx context.Context, lib Library, handles []Device, gpus []GPU, window time.Duration) *XIDWatch {
	w := &XIDWatch{WindowSeconds: window.Seconds(), Events: []XIDEvent{}}
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		w.Error = "event set: " + ret.Error()
		return w
	}
	defer set.Free()
	var regErrs []string
	for i, d := range handles {
		if ret := d.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS {
			regErrs = append(regErrs, fmt.Sprintf("gpu %d: %s", i, ret.Error()))
		}
	}
	if len(regErrs) > 0 {
		w.Error = "register xid events: " + strings.Join(regErrs, "; ")
	}
	byUUID := map[string]int{}
	for _, g := range gpus {
		byUUID[g.UUID] = g.Index
	}
	start := time.Now()
	deadline := start.Add(window)
	// The set is read at least once, however late this goroutine got to
	// run: events already pending are never missed for lack of a look.
	for looked := false; ; looked = true {
		// One reading of the clock for both: read twice, the watch could
		// end past its deadline yet record less than its window (not run).
		now := time.Now()
		w.WatchedSeconds = now.Sub(start).Seconds()
		left := deadline.Sub(now)
		if left <= 0 && looked {
			return w
		}
		left = max(left, time.Millisecond)
		if err := ctx.Err(); err != nil {
			// A window cut short saw only part of what it was asked to
			// watch: that is not a clean window.
			w.Error = fmt.Sprintf("xid watch ended after %.1fs of %.1fs: %v", w.WatchedSeconds, w.WindowSeconds, err)
			return w
		}
		data, ret := set.Wait(uint32(min(left, 200*time.Millisecond).Milliseconds()))
		switch ret {
		case nvml.SUCCESS:
			if data.EventType != nvml.EventTypeXidCriticalError {
				continue
			}
			ev := XIDEvent{GPU: -1, XID: data.EventData}
			if data.Device != nil {
				if u, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
					ev.UUID = u
					if i, ok := byUUID[u]; ok {
						ev.GPU = i
					}
				}
			}
			w.Events = append(w.Events, ev)
		case nvml.ERROR_TIMEOUT:
		default:
			w.Error = "wait for xid events: " + ret.Error()
			return w
		}
	}
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
