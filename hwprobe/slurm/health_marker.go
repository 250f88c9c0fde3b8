package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
)

// HealthMarkerDir is where the health check says, under its cluster's
// reports prefix, that it drained or resumed its node: one marker per
// change, HealthMarkerDir + INSTANCE-ID + "/" + TIME + "." + STATE +
// ".json". A refresh lists them and reads the newest of each node: a node
// whose newest marker says drained is drift (the provider never talks to
// the controller). The key says the state, so that only a drained node's
// marker is read.
const HealthMarkerDir = "slurm-health/"

// healthMarkerTime is how a marker's key names its time: sortable, to the
// millisecond, so that two changes in one second keep two markers.
const healthMarkerTime = "20060102T150405.000Z"

// Health states a marker records.
const (
	HealthDrained = "drained"
	HealthResumed = "resumed"
)

// maxHealthReason bounds a marker's reason (Slurm's own are shorter).
const maxHealthReason = 1024

// HealthMarker is what the health check writes when it drains or resumes
// its node.
type HealthMarker struct {
	Node       string    `json:"node"`
	InstanceID string    `json:"instance_id"`
	State      string    `json:"state"`            // HealthDrained or HealthResumed
	Reason     string    `json:"reason,omitempty"` // the drain reason, "hwprobe: CHECK: DETAIL"
	At         time.Time `json:"at"`
}

// HealthMarkerKey is the key of m under its cluster's reports prefix
// (relative to it).
func HealthMarkerKey(m HealthMarker) string {
	return HealthMarkerDir + m.InstanceID + "/" + m.At.UTC().Format(healthMarkerTime) + "." + m.State + ".json"
}

// ParseHealthMarker reads a marker and checks it: an instance id, a state
// it knows, a time, and for a drain a reason of hwprobe's own.
func ParseHealthMarker(b []byte) (HealthMarker, error) {
	var m HealthMarker
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return HealthMarker{}, fmt.Errorf("slurm health marker: %w", err)
	}
	switch {
	case !attest.ValidInstanceID(m.InstanceID):
		return HealthMarker{}, fmt.Errorf("slurm health marker: instance_id %q is not an instance id", short(m.InstanceID))
	case m.State != HealthDrained && m.State != HealthResumed:
		return HealthMarker{}, fmt.Errorf("slurm health marker: state %q is not %q or %q", short(m.State), HealthDrained, HealthResumed)
	case m.At.IsZero():
		return HealthMarker{}, errors.New("slurm health marker: no time")
	case len(m.Reason) > maxHealthReason:
		return HealthMarker{}, fmt.Errorf("slurm health marker: reason longer than %d bytes", maxHealthReason)
	case m.State == HealthDrained && !Ours(m.Reason):
		return HealthMarker{}, fmt.Errorf("slurm health marker: drain reason %q does not begin with %q", short(m.Reason), ReasonPrefix)
	}
	return m, nil
}

// HealthMarkerInstance reads a marker's key (relative to HealthMarkerDir):
// the instance and the state it names, and whether the key is one
// HealthMarkerKey makes. Keys of one instance sort by time.
func HealthMarkerInstance(rel string) (id, state string, ok bool) {
	id, file, found := strings.Cut(rel, "/")
	base, isJSON := strings.CutSuffix(file, ".json")
	dot := strings.LastIndexByte(base, '.')
	if !found || !isJSON || dot < 0 || !attest.ValidInstanceID(id) {
		return "", "", false
	}
	stamp, state := base[:dot], base[dot+1:]
	if state != HealthDrained && state != HealthResumed {
		return "", "", false
	}
	if _, err := time.Parse(healthMarkerTime, stamp); err != nil {
		return "", "", false
	}
	return id, state, true
}
