package indexrange

import (
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{3, 0, 1, 2, 7, 7}, "0-3,7"}, {[]int{9, 10, 12}, "9-10,12"}} {
		got := Format(c.in)
		if got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.in, got, c.want)
		}
		back, err := Parse(got)
		if err != nil {
			t.Fatalf("Parse(%q): %v", got, err)
		}
		want := slices.Compact(slices.Sorted(slices.Values(c.in)))
		if !slices.Equal(back, want) {
			t.Errorf("Parse(%q) = %v, want %v", got, back, want)
		}
	}
	for _, bad := range []string{"x", "1-0", "-1", "0-", "0,,1", "0-200000"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0", "0-3,7", "1-0", "9-10,12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		idx, err := Parse(s)
		if err != nil {
			return
		}
		if _, err := Parse(Format(idx)); err != nil {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}
