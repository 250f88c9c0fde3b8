//go:build !cgo

package gpu

import (
	"context"
	"time"
)

// Library stands for NVML in a build without cgo, where go-nvml cannot
// load libnvidia-ml: Collect then reports the GPU section as unavailable.
type Library interface{ withoutCgo() }

type noCgo struct{}

func (noCgo) withoutCgo() {}

// NewLibrary returns the placeholder for NVML in a build without cgo.
func NewLibrary() Library { return noCgo{} }

// Options tune Collect.
type Options struct {
	XIDWindow time.Duration // unused without cgo
}

// Collect says GPUs cannot be probed: this hwprobe was built without cgo.
func Collect(_ context.Context, lib Library, _ Options) (Section, error) {
	if lib == nil {
		return Section{Reason: "NVML not configured"}, nil
	}
	return Section{Reason: "this hwprobe was built without cgo and cannot load NVML (build with CGO_ENABLED=1)"}, nil
}
