package slurm

import (
	"strings"
	"testing"
	"time"
)

func TestParseHealthMarker(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 123e6, time.UTC)
	m, err := ParseHealthMarker([]byte(`{"node":"train-1","instance_id":"i-0123456789abcdef0","state":"drained","reason":"hwprobe: gpu.count: expected 8, observed 7","at":"2026-11-27T10:00:00.123Z"}`))
	if err != nil || m.Node != "train-1" || m.State != HealthDrained || !m.At.Equal(at) {
		t.Fatalf("parsed %+v, %v", m, err)
	}
	if got, want := HealthMarkerKey(m), "slurm-health/i-0123456789abcdef0/20261127T100000.123Z.drained.json"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	if id, state, ok := HealthMarkerInstance("i-0123456789abcdef0/20261127T100000.123Z.drained.json"); !ok || id != "i-0123456789abcdef0" || state != HealthDrained {
		t.Errorf("instance of the key: %q %q %v", id, state, ok)
	}
	for _, rel := range []string{"i-0123456789abcdef0.json", "i-0123456789abcdef0/latest.json", "x/20261127T100000.123Z.drained.json",
		"i-0123456789abcdef0/20261127T100000.123Z.drained.txt", "i-0123456789abcdef0/20261127T100000.123Z.json", "i-0123456789abcdef0/20261127T100000.123Z.down.json", "i-0123456789abcdef0/yesterday.resumed.json"} {
		if id, _, ok := HealthMarkerInstance(rel); ok {
			t.Errorf("HealthMarkerInstance(%q) = %q: want refused", rel, id)
		}
	}
	for _, c := range []struct{ name, body, want string }{
		{"administrator's reason", `{"instance_id":"i-0123456789abcdef0","state":"drained","reason":"maintenance","at":"2026-11-27T10:00:00Z"}`, "does not begin with"},
		{"unknown state", `{"instance_id":"i-0123456789abcdef0","state":"down","at":"2026-11-27T10:00:00Z"}`, "state"},
		{"no time", `{"instance_id":"i-0123456789abcdef0","state":"resumed"}`, "no time"},
		{"not an instance", `{"instance_id":"i-xyz","state":"resumed","at":"2026-11-27T10:00:00Z"}`, "not an instance id"},
		{"unknown field", `{"instance_id":"i-0123456789abcdef0","state":"resumed","at":"2026-11-27T10:00:00Z","status":"ok"}`, "unknown field"},
		{"long reason", `{"instance_id":"i-0123456789abcdef0","state":"drained","reason":"hwprobe: ` + strings.Repeat("x", 1100) + `","at":"2026-11-27T10:00:00Z"}`, "longer than"},
	} {
		if _, err := ParseHealthMarker([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
