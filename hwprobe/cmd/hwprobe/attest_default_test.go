//go:build !hwprobe_nvmlmock

package main

import (
	"context"
	"errors"
	"io"
	"testing"
)

// A release build ignores HWPROBE_NITROTPM_TEST_SIGNER: the attester
// stays the NitroTPM's, whatever the variable names.
func TestReleaseBuildIgnoresTestSigner(t *testing.T) {
	a := newApp(io.Discard, io.Discard, func(k string) string {
		if k == "HWPROBE_NITROTPM_TEST_SIGNER" {
			return "/nonexistent/signer.pem"
		}
		return ""
	})
	sentinel := errors.New("the release attester")
	a.newAttester = func(context.Context) (attester, error) { return nil, sentinel }
	if err := configureAttester(a); err != nil {
		t.Fatal(err)
	}
	if _, err := a.newAttester(context.Background()); !errors.Is(err, sentinel) {
		t.Fatalf("the attester was replaced: %v", err)
	}
}
