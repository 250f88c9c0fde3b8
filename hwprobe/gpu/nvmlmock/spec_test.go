package nvmlmock

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{in: "dgxh200", want: Spec{Machine: "dgxh200"}},
		{in: " DGXA100 ", want: Spec{Machine: "dgxa100"}},
		{in: "dgxh200;nvlink_down=3:17", want: Spec{Machine: "dgxh200", NVLinkDown: []Link{{3, 17}}}},
		{in: "dgxh100;nvlink_down=3:17,3:16;gpus=7", want: Spec{Machine: "dgxh100", GPUs: 7, NVLinkDown: []Link{{3, 17}, {3, 16}}}},
		{in: "dgxh100;gpus=0", want: Spec{Machine: "dgxh100", GPUs: -1}},
		{in: "dgxa100;memory_mib=2:20480;xid=1:79;ecc_uncorrected=4:2;pcie_width=5:8;",
			want: Spec{Machine: "dgxa100", MemoryMiB: []Value{{2, 20480}}, XID: []Value{{1, 79}}, ECCUncorrected: []Value{{4, 2}}, PCIeWidth: []Value{{5, 8}}}},
		{in: "", wantErr: "mock machine"},
		{in: "dgxh900", wantErr: "mock machine"},
		{in: "dgxh200;nvlink_down", wantErr: "want name=value"},
		{in: "dgxh200;nvlink_down=8:1", wantErr: "GPU index 0 to 7"},
		{in: "dgxh200;nvlink_down=1:18", wantErr: "NVLink ids are 0 to 17"},
		{in: "dgxh200;nvlink_down=1", wantErr: "want GPU:VALUE"},
		{in: "dgxh200;gpus=9", wantErr: "want 0 to 8"},
		{in: "dgxh200;xid=1:-3", wantErr: "not a whole number"},
		{in: "dgxh200;fan=1:3", wantErr: "use nvlink_down"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := Parse(got.String())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip of %q through %q: %+v, %v", tt.in, got.String(), again, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"dgxh200", "dgxa100;nvlink_down=3:11,2:0;gpus=7", "dgxh100;xid=1:79;memory_mib=0:1", "x;=;:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(sp.String())
		if err != nil {
			t.Fatalf("String() of a parsed spec does not parse: %q: %v", sp.String(), err)
		}
		if !reflect.DeepEqual(again, sp) {
			t.Fatalf("round trip: %+v != %+v", again, sp)
		}
	})
}
