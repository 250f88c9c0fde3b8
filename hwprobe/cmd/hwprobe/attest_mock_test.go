//go:build hwprobe_nvmlmock

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

// The test build attests with the signer HWPROBE_NITROTPM_TEST_SIGNER
// names, for the instance the metadata service names, and says so; a
// file that holds no signer cannot run.
func TestServeWithTestSigner(t *testing.T) {
	startIMDS(t, ptr(challengeA))
	prof, rep := serveFiles(t)
	signer, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "signer.pem")
	b, err := signer.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pemFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(file string) (*objectStore, int, string) {
		store := newStore()
		var stdout, stderr syncBuffer
		a := serveApp(store, nil, &stdout, &stderr)
		a.getenv = func(k string) string {
			if k == attesttest.SignerEnvVar {
				return file
			}
			return ""
		}
		code := runServe(context.Background(), a, &stderr, "--profile", prof, "--report", rep, "--once")
		return store, code, stderr.String()
	}

	store, code, stderr := serve(pemFile)
	if code != 0 || !strings.Contains(stderr, "test build: the NitroTPM is the test signer in "+pemFile) {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	keys := store.written()
	if len(keys) != 2 || keys[0] != keys[1]+report.AttestationSuffix {
		t.Fatalf("written %v", keys)
	}
	body := store.body(keys[1])
	nonce, _ := hex.DecodeString(challengeA)
	sum := sha256.Sum256(body)
	d, err := attest.Verify(store.body(keys[0]), attest.VerifyOptions{Roots: signer.Roots(), NitroTPM: true, InstanceID: serveInstance, Nonce: nonce, UserData: sum[:]})
	if err != nil {
		t.Fatal(err)
	}
	if d.ModuleID != serveInstance+"-tpm0000000000000000" || len(d.PCRs) != 16 {
		t.Errorf("module %q, %d PCRs", d.ModuleID, len(d.PCRs))
	}

	if _, code, stderr := serve(prof); code != 2 || !strings.Contains(stderr, "HWPROBE_NITROTPM_TEST_SIGNER: test signer:") {
		t.Errorf("a file without a signer: exit %d:\n%s", code, stderr)
	}
}
