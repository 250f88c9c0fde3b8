package report

import (
	"strings"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	const good = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	tests := []struct {
		name, in, want, err string
	}{
		{name: "lowercase", in: good, want: good},
		{name: "uppercase is lowered", in: strings.ToUpper(good), want: good},
		{name: "surrounding space", in: " " + good + "\n", want: good},
		{name: "empty", in: "", err: "0 characters"},
		{name: "short", in: good[:62], err: "62 characters"},
		{name: "long", in: good + "00", err: "66 characters"},
		{name: "not hex", in: "zz" + good[2:], err: "not hex"},
		{name: "long value is cut", in: strings.Repeat("a", 200), err: "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, b, err := ParseChallenge(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || len(b) != ChallengeLen {
				t.Fatalf("ParseChallenge = %q, %x, %v", got, b, err)
			}
		})
	}
}

func FuzzParseChallenge(f *testing.F) {
	f.Add("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	f.Add("")
	f.Add("xyz")
	f.Fuzz(func(t *testing.T, s string) {
		got, b, err := ParseChallenge(s)
		if err != nil {
			return
		}
		if len(got) != 64 || len(b) != ChallengeLen || strings.ToLower(got) != got {
			t.Fatalf("ParseChallenge(%q) = %q, %x", s, got, b)
		}
	})
}
