//go:build hwprobe_nvmlmock

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
)

// A test build (tag hwprobe_nvmlmock): when HWPROBE_NITROTPM_TEST_SIGNER
// names a test signer saved by attesttest (Signer.MarshalPEM), report
// serve attests with it instead of the NitroTPM: genuine COSE_Sign1
// documents, in the NitroTPM's format, under a test root no production
// verifier trusts. Release builds do not contain this file.

// configureAttester makes a.newAttester the test signer the variable
// names, and says so on stderr: its documents vouch for no hardware.
func configureAttester(a *app) error {
	name := a.getenv(attesttest.SignerEnvVar)
	if name == "" {
		return nil
	}
	b, err := readFile(name)
	if err != nil {
		return fmt.Errorf("%s: %w", attesttest.SignerEnvVar, err)
	}
	signer, err := attesttest.LoadPEM(b)
	if err != nil {
		return fmt.Errorf("%s: %w", attesttest.SignerEnvVar, err)
	}
	fmt.Fprintf(a.stderr, "hwprobe: test build: the NitroTPM is the test signer in %s, not hardware\n", name)
	a.newAttester = func(context.Context) (attester, error) {
		return &testAttester{signer: signer, imds: a.newIMDS()}, nil
	}
	return nil
}

// testAttester signs NitroTPM documents for the instance the metadata
// service names.
type testAttester struct {
	signer *attesttest.Signer
	imds   probe.IMDS
}

func (t *testAttester) Attest(ctx context.Context, nonce, userData []byte) ([]byte, error) {
	id, err := imdsText(ctx, t.imds, "instance-id")
	if err != nil {
		return nil, fmt.Errorf("test attester: %w", err)
	}
	return t.signer.Sign(attesttest.Document{ModuleID: strings.TrimSpace(id) + "-tpm0000000000000000", Nonce: nonce, UserData: userData})
}
