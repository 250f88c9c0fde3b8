//go:build !(hwprobe_nvmlmock && cgo)

package main

// nvmlMockBuild says whether this build can play GPUs: a release build
// cannot, and ignores HWPROBE_NVML_MOCK.
const nvmlMockBuild = false

// configureNVML leaves the real NVML in place.
func configureNVML(*app) error { return nil }
