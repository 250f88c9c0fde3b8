package probe

import (
	"reflect"
	"testing"
	"testing/fstest"
)

func rdmaFS() fstest.MapFS {
	fsys := fstest.MapFS{}
	add := func(dev, driver, state, rate, linkLayer string) {
		d := ibClass + "/" + dev
		fsys[d+"/device/uevent"] = &fstest.MapFile{Data: []byte("DRIVER=" + driver + "\nPCI_ID=1D0F:EFA1\n")}
		fsys[d+"/fw_ver"] = &fstest.MapFile{Data: []byte("1.2.3\n")}
		fsys[d+"/ports/1/state"] = &fstest.MapFile{Data: []byte(state + "\n")}
		fsys[d+"/ports/1/phys_state"] = &fstest.MapFile{Data: []byte("5: LinkUp\n")}
		fsys[d+"/ports/1/rate"] = &fstest.MapFile{Data: []byte(rate + "\n")}
		fsys[d+"/ports/1/link_layer"] = &fstest.MapFile{Data: []byte(linkLayer + "\n")}
	}
	add("rdmap16s27", "efa", "4: ACTIVE", "100 Gb/sec (4X EDR)", "Unspecified")
	add("rdmap32s27", "efa", "1: DOWN", "100 Gb/sec (4X EDR)", "Unspecified")
	add("mlx5_0", "mlx5_core", "4: ACTIVE", "400 Gb/sec (4X NDR)", "InfiniBand")
	add("mlx5_1", "mlx5_core", "4: ACTIVE", "100 Gb/sec (4X EDR)", "Ethernet")
	return fsys
}

func TestCollectNetwork(t *testing.T) {
	n, err := collectNetwork(rdmaFS())
	if err != nil {
		t.Fatal(err)
	}
	if n.EFACount != 2 || n.EFAActivePorts != 1 || n.InfiniBandCount != 1 || len(n.Devices) != 4 {
		t.Errorf("network = %+v", n)
	}
	want := RDMADevice{Name: "mlx5_0", Kind: "infiniband", Driver: "mlx5_core", Firmware: "1.2.3",
		Ports: []Port{{Number: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand"}}}
	if !reflect.DeepEqual(n.Devices[0], want) {
		t.Errorf("mlx5_0 = %+v", n.Devices[0])
	}
	if n.Devices[1].Kind != "rdma" {
		t.Errorf("RoCE device kind = %q", n.Devices[1].Kind)
	}
}

func TestCollectNetworkNone(t *testing.T) {
	n, err := collectNetwork(fstest.MapFS{})
	if err != nil || n.EFACount != 0 || len(n.Devices) != 0 {
		t.Errorf("network = %+v, %v", n, err)
	}
}

func TestCollectNetworkBadPort(t *testing.T) {
	fsys := rdmaFS()
	fsys[ibClass+"/rdmap16s27/ports/1/state"] = &fstest.MapFile{Data: []byte("garbage")}
	if _, err := collectNetwork(fsys); err == nil {
		t.Error("unreadable port state accepted")
	}
}

func TestParsePortState(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		name string
		ok   bool
	}{
		{"4: ACTIVE\n", 4, "ACTIVE", true},
		{"1: DOWN", 1, "DOWN", true},
		{"5: LinkUp", 5, "LinkUp", true},
		{"ACTIVE", 0, "", false},
		{"x: ACTIVE", 0, "", false},
		{"4:", 0, "", false},
	}
	for _, tt := range tests {
		n, name, err := ParsePortState(tt.in)
		if (err == nil) != tt.ok || n != tt.n || name != tt.name {
			t.Errorf("ParsePortState(%q) = %d, %q, %v", tt.in, n, name, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"100 Gb/sec (4X EDR)", 100, true},
		{"25 Gb/sec (1X EDR)\n", 25, true},
		{"2.5 Gb/sec (1X SDR)", 2.5, true},
		{"fast", 0, false},
		{"100 Mb/sec", 0, false},
		{"-1 Gb/sec", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func FuzzParsePortState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "1: DOWN", "", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, name, err := ParsePortState(s); err == nil && name == "" {
			t.Fatal("empty state accepted")
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec", "NaN Gb/sec", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseRate(s); err == nil && !(v >= 0 && v <= 1e6) {
			t.Fatalf("rate %v accepted", v)
		}
	})
}

func FuzzParseUevent(f *testing.F) {
	f.Add([]byte("DRIVER=efa\nPCI_ID=1D0F:EFA1\n"))
	f.Add([]byte("=x\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for k := range ParseUevent(data) {
			if k == "" {
				t.Fatal("empty key")
			}
		}
	})
}
