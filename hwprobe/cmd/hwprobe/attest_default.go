//go:build !hwprobe_nvmlmock

package main

// configureAttester leaves the NitroTPM in place: a release build ignores
// HWPROBE_NITROTPM_TEST_SIGNER.
func configureAttester(*app) error { return nil }
