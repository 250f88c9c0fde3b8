//go:build cgo

package gpu_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
)

func TestCollect(t *testing.T) {
	tests := []struct {
		name   string
		server func() *server.Server
		break_ func(s *server.Server)
		check  func(t *testing.T, sec gpu.Section)
	}{
		{
			name:   "healthy h100",
			server: gputest.DGXH100,
			check: func(t *testing.T, sec gpu.Section) {
				if !sec.Available || sec.Count != 8 || len(sec.GPUs) != 8 {
					t.Fatalf("section = %+v", sec)
				}
				g := sec.GPUs[5]
				if g.Index != 5 || g.Name != "NVIDIA H100 80GB HBM3" || g.MemoryBytes != 80<<30 || g.ComputeCapability != "9.0" {
					t.Errorf("gpu 5 = %+v", g)
				}
				if g.NVLink.Links != 18 || g.NVLink.Active != 18 || len(g.NVLink.Down) != 0 {
					t.Errorf("nvlink = %+v", g.NVLink)
				}
				if g.ECC == nil || !g.ECC.Enabled || *g.ECC.VolatileUncorrected != 0 || g.MIG == nil || g.MIG.Enabled {
					t.Errorf("ecc %+v mig %+v", g.ECC, g.MIG)
				}
				if g.PCIe != (gpu.PCIe{GenCurrent: 5, GenMax: 5, WidthCurrent: 16, WidthMax: 16}) {
					t.Errorf("pcie = %+v", g.PCIe)
				}
				if g.RetiredPages != nil || g.RemappedRows == nil || len(g.Errors) != 0 {
					t.Errorf("pages %+v rows %+v errors %v", g.RetiredPages, g.RemappedRows, g.Errors)
				}
				if sec.DriverVersion != "550.54.15" || sec.CUDADriverVersion != "12.4" {
					t.Errorf("versions %q %q", sec.DriverVersion, sec.CUDADriverVersion)
				}
				if *g.PowerLimitWatts != 700 || *g.TemperatureC != 34 {
					t.Errorf("power %v temp %v", *g.PowerLimitWatts, *g.TemperatureC)
				}
			},
		},
		{
			name:   "nvlink link 7 down on gpu 3",
			server: gputest.DGXH200,
			break_: func(s *server.Server) {
				gputest.Device(s, 3).GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
					switch {
					case link >= gputest.H100Links:
						return 0, nvml.ERROR_INVALID_ARGUMENT
					case link == 7:
						return nvml.FEATURE_DISABLED, nvml.SUCCESS
					}
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
			},
			check: func(t *testing.T, sec gpu.Section) {
				nl := sec.GPUs[3].NVLink
				if nl.Links != 18 || nl.Active != 17 || !reflect.DeepEqual(nl.Down, []int{7}) {
					t.Errorf("nvlink = %+v", nl)
				}
			},
		},
		{
			name:   "no nvlink on a pcie card",
			server: gputest.DGXA100,
			break_: func(s *server.Server) {
				gputest.Device(s, 0).GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
			},
			check: func(t *testing.T, sec gpu.Section) {
				if nl := sec.GPUs[0].NVLink; nl.Supported || nl.Links != 0 {
					t.Errorf("nvlink = %+v", nl)
				}
				if nl := sec.GPUs[1].NVLink; nl.Links != 12 || nl.Active != 12 {
					t.Errorf("a100 nvlink = %+v", nl)
				}
			},
		},
		{
			name:   "gpu missing",
			server: gputest.DGXH100,
			break_: func(s *server.Server) { gputest.RemoveGPU(s, 6) },
			check: func(t *testing.T, sec gpu.Section) {
				if sec.Count != 7 || len(sec.GPUs) != 7 {
					t.Errorf("count = %d", sec.Count)
				}
			},
		},
		{
			name:   "ecc errors, mig, pcie x8, remap pending, query error",
			server: gputest.DGXH100,
			break_: func(s *server.Server) {
				d := gputest.Device(s, 2)
				d.GetTotalEccErrorsFunc = func(_ nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
					if c == nvml.VOLATILE_ECC {
						return 3, nvml.SUCCESS
					}
					return 5, nvml.SUCCESS
				}
				d.MigMode = nvml.DEVICE_MIG_ENABLE
				d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 1, 2, true, false, nvml.SUCCESS }
				d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
			},
			check: func(t *testing.T, sec gpu.Section) {
				g := sec.GPUs[2]
				if *g.ECC.VolatileUncorrected != 3 || *g.ECC.AggregateUncorrected != 5 {
					t.Errorf("ecc = %+v", g.ECC)
				}
				if !g.MIG.Enabled || g.PCIe.WidthCurrent != 8 || g.PCIe.WidthMax != 16 {
					t.Errorf("mig %+v pcie %+v", g.MIG, g.PCIe)
				}
				if *g.RemappedRows != (gpu.RemappedRows{Correctable: 1, Uncorrectable: 2, Pending: true}) {
					t.Errorf("rows = %+v", g.RemappedRows)
				}
				if g.TemperatureC != nil || !reflect.DeepEqual(g.Errors, []string{"temperature: ERROR_GPU_IS_LOST"}) {
					t.Errorf("temp %v errors %v", g.TemperatureC, g.Errors)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.server()
			if tt.break_ != nil {
				tt.break_(s)
			}
			sec, err := gpu.Collect(context.Background(), s, gpu.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, sec)
		})
	}
}

func TestCollectNoLibrary(t *testing.T) {
	sec, err := gpu.Collect(context.Background(), gputest.NoLibrary(), gpu.Options{})
	if err != nil {
		t.Fatalf("a missing driver is not an error: %v", err)
	}
	if sec.Available || !sec.LibraryMissing || sec.Reason == "" {
		t.Errorf("section = %+v", sec)
	}
}

func TestCollectInitError(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	sec, err := gpu.Collect(context.Background(), lib, gpu.Options{})
	if err == nil || sec.Available || sec.Reason != "NVIDIA driver not loaded" {
		t.Errorf("section = %+v, err = %v", sec, err)
	}
}

func TestCollectXID(t *testing.T) {
	s := gputest.DGXH100()
	d := gputest.Device(s, 4)
	sent := false
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				if !sent {
					sent = true
					return nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: 79}, nvml.SUCCESS
				}
				time.Sleep(5 * time.Millisecond)
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	sec, err := gpu.Collect(context.Background(), s, gpu.Options{XIDWindow: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.XIDEvent{{GPU: 4, UUID: d.UUID, XID: 79}}
	if sec.XID == nil || !reflect.DeepEqual(sec.XID.Events, want) || sec.XID.Error != "" {
		t.Errorf("xid = %+v", sec.XID)
	}
}

// TestCollectXIDCutShort: a watch whose context ends before its window is
// over says so (an error and the seconds watched), so validate cannot count
// it as a clean window.
func TestCollectXIDCutShort(t *testing.T) {
	s := gputest.DGXH100()
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				time.Sleep(5 * time.Millisecond)
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sec, _ := gpu.Collect(ctx, s, gpu.Options{XIDWindow: 10 * time.Second})
	if sec.XID == nil {
		t.Fatal("no xid watch recorded")
	}
	if sec.XID.Error == "" || !strings.Contains(sec.XID.Error, "ended after") {
		t.Errorf("cut-short watch has no error: %+v", sec.XID)
	}
	if sec.XID.WatchedSeconds >= sec.XID.WindowSeconds {
		t.Errorf("watched %gs of %gs", sec.XID.WatchedSeconds, sec.XID.WindowSeconds)
	}
}
