//go:build cgo

package nvmlmock

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
)

// New builds the machine spec names, healthy, with its faults. go-nvml's
// mock servers answer names, UUIDs, memory and compute capability; the
// queries they leave unset (NVLink state, ECC, PCIe, clocks, events) are
// answered as on a healthy machine by gputest, then the faults replace
// what they break.
func New(spec Spec) (gpu.Library, error) {
	var s *server.Server
	links := gputest.H100Links
	switch spec.Machine {
	case "dgxa100":
		s, links = gputest.DGXA100(), gputest.A100Links
	case "dgxh100":
		s = gputest.DGXH100()
	case "dgxh200":
		s = gputest.DGXH200()
	default:
		return nil, fmt.Errorf("mock machine %q: use one of %v", spec.Machine, Machines())
	}
	for _, d := range spec.NVLinkDown {
		if d.Link >= links {
			return nil, fmt.Errorf("nvlink_down=%d:%d: %s GPUs have links 0 to %d", d.GPU, d.Link, spec.Machine, links-1)
		}
	}
	for i := range s.Devices {
		applyFaults(gputest.Device(s, i), i, spec)
	}
	if len(spec.XID) > 0 {
		s.EventSetCreateFunc = xidEvents(s, spec.XID)
	}
	if spec.GPUs != 0 {
		s.Devices = s.Devices[:max(spec.GPUs, 0)]
	}
	return s, nil
}

func applyFaults(d *server.Device, i int, spec Spec) {
	var down []int
	for _, l := range spec.NVLinkDown {
		if l.GPU == i {
			down = append(down, l.Link)
		}
	}
	if len(down) > 0 {
		healthy := d.GetNvLinkStateFunc
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			st, ret := healthy(link)
			if ret == nvml.SUCCESS && slices.Contains(down, link) {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			return st, ret
		}
	}
	for _, v := range spec.MemoryMiB {
		if v.GPU == i {
			d.MemoryInfo = nvml.Memory{Total: v.Value << 20}
		}
	}
	for _, v := range spec.ECCUncorrected {
		if v.GPU == i {
			n := v.Value
			d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
				if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
					return n, nvml.SUCCESS
				}
				return 0, nvml.SUCCESS
			}
		}
	}
	for _, v := range spec.PCIeWidth {
		if v.GPU == i {
			w := int(v.Value)
			d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return w, nvml.SUCCESS }
		}
	}
}

// xidEvents is an event set that delivers each XID once, then times out.
func xidEvents(s *server.Server, xids []Value) func() (nvml.EventSet, nvml.Return) {
	return func() (nvml.EventSet, nvml.Return) {
		var mu sync.Mutex
		queue := slices.Clone(xids)
		return &mock.EventSet{
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				mu.Lock()
				defer mu.Unlock()
				for len(queue) > 0 {
					x := queue[0]
					queue = queue[1:]
					if x.GPU >= len(s.Devices) {
						continue
					}
					return nvml.EventData{Device: s.Devices[x.GPU], EventType: nvml.EventTypeXidCriticalError, EventData: x.Value}, nvml.SUCCESS
				}
				// As NVML does: wait out the timeout when nothing comes.
				time.Sleep(time.Duration(ms) * time.Millisecond)
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
}
