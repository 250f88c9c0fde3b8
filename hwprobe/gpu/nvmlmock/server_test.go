//go:build cgo

package nvmlmock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
)

func collect(t *testing.T, spec string, opts gpu.Options) gpu.Section {
	t.Helper()
	sp, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := New(sp)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := gpu.Collect(context.Background(), lib, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestNewHealthy(t *testing.T) {
	for _, tt := range []struct {
		machine, name string
		links         int
		minGiB        float64
	}{
		{"dgxa100", "A100-SXM4-40GB", 12, 40},
		{"dgxh100", "H100 80GB", 18, 80},
		{"dgxh200", "H200 141GB", 18, 141},
	} {
		t.Run(tt.machine, func(t *testing.T) {
			sec := collect(t, tt.machine, gpu.Options{})
			if !sec.Available || sec.Count != 8 || len(sec.GPUs) != 8 {
				t.Fatalf("section %+v", sec)
			}
			for _, g := range sec.GPUs {
				if !strings.Contains(g.Name, tt.name) || g.NVLink.Active != tt.links || g.NVLink.Links != tt.links || len(g.Errors) > 0 ||
					float64(g.MemoryBytes)/(1<<30) < tt.minGiB || g.PCIe.WidthCurrent != 16 {
					t.Fatalf("gpu %d: %+v", g.Index, g)
				}
			}
		})
	}
}

func TestNewFaults(t *testing.T) {
	sec := collect(t, "dgxh200;nvlink_down=3:17,3:5;gpus=7;memory_mib=2:40960;ecc_uncorrected=4:2;pcie_width=5:8;xid=1:79", gpu.Options{XIDWindow: 300 * time.Millisecond})
	if sec.Count != 7 || len(sec.GPUs) != 7 {
		t.Fatalf("count %d, gpus %d, want 7", sec.Count, len(sec.GPUs))
	}
	if nl := sec.GPUs[3].NVLink; nl.Active != 16 || nl.Links != 18 || len(nl.Down) != 2 || nl.Down[0] != 5 || nl.Down[1] != 17 {
		t.Fatalf("gpu3 nvlink %+v", nl)
	}
	if nl := sec.GPUs[2].NVLink; nl.Active != 18 {
		t.Fatalf("gpu2 nvlink %+v", nl)
	}
	if m := sec.GPUs[2].MemoryBytes; m != 40960<<20 {
		t.Fatalf("gpu2 memory %d", m)
	}
	if e := sec.GPUs[4].ECC; e == nil || e.VolatileUncorrected == nil || *e.VolatileUncorrected != 2 {
		t.Fatalf("gpu4 ecc %+v", e)
	}
	if w := sec.GPUs[5].PCIe; w.WidthCurrent != 8 || w.WidthMax != 16 {
		t.Fatalf("gpu5 pcie %+v", w)
	}
	if x := sec.XID; x == nil || len(x.Events) != 1 || x.Events[0].GPU != 1 || x.Events[0].XID != 79 || x.Error != "" {
		t.Fatalf("xid %+v", x)
	}
}

func TestNewRejectsLinkTheMachineLacks(t *testing.T) {
	sp, err := Parse("dgxa100;nvlink_down=0:12")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(sp); err == nil || !strings.Contains(err.Error(), "links 0 to 11") {
		t.Fatalf("New = %v, want the A100's link range", err)
	}
}
