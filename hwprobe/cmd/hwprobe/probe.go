package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/identity"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
)

func probeCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "probe", "[flags]", `
Print the node's inventory as JSON (schema `+probe.SchemaVersion+`): EC2
identity from IMDSv2 with the signed identity document, CPU, memory and ISA
features, NVIDIA GPUs through NVML, and EFA/InfiniBand devices. Without an
NVIDIA driver the GPU section says so; that is not an error. Exit code 2
means a collector failed (the JSON says which).`,
		"hwprobe probe --identity-cert /etc/hwprobe/aws-me-central-1.pem > inventory.json")
	var pf probeFlags
	pf.register(fset)
	xid := fset.Duration("xid-window", 0, "listen for GPU XID events this long (for example 10s)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	cfg, err := pf.config(a, *xid)
	if err != nil {
		return cannotRun(err)
	}
	ctx, cancel := context.WithTimeout(ctx, pf.timeout)
	defer cancel()
	inv, err := probe.Probe(ctx, cfg)
	if err != nil {
		return cannotRun(fmt.Errorf("probe: %w", err))
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(inv); err != nil {
		return cannotRun(fmt.Errorf("write inventory: %w", err))
	}
	if failed := inv.Failed(); hasErrors(failed) {
		return cannotRun(fmt.Errorf("collectors failed: %s", describeRuns(failed)))
	}
	return nil
}

func hasErrors(runs []probe.Run) bool {
	for _, r := range runs {
		if r.Error != "" {
			return true
		}
	}
	return false
}

func describeRuns(runs []probe.Run) string {
	var s []string
	for _, r := range runs {
		if r.Error != "" {
			s = append(s, r.Name+": "+r.Error)
		}
	}
	return strings.Join(s, "; ")
}

func readCerts(name string) ([]*x509.Certificate, error) {
	b, err := readFile(name)
	if err != nil {
		return nil, err
	}
	certs, err := identity.ParseCertificates(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return certs, nil
}
