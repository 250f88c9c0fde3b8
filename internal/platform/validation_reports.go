package platform

import (
	"context"
	"slices"
	"strings"
	"time"
)

// ValidationReports reads the reports under the reports prefix of
// resource name (ValidationSpec.ReportsPrefix): for each instance that
// published, its newest report judged as the gate judges it (identity
// verified against trustedPEM, or the environment's certificates; the
// instance, account and region matched; the jurisdiction; the checks),
// sorted by instance id. Reports of any profile are read.
func (e *Env) ValidationReports(ctx context.Context, reportsS3URI, name, trustedPEM string) ([]NodeVerdict, error) {
	v := ValidationSpec{ReportsS3URI: reportsS3URI, TrustedCertificates: trustedPEM}.WithDefaults()
	gate, err := e.newGate(ctx, v, "")
	if err != nil {
		return nil, err
	}
	gate.ProfileSHA256 = ""
	reports, err := e.readReports(ctx, v.ReportsPrefix(name), map[string][]byte{})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range reports {
		id, _, _ := strings.Cut(r.Key, "/")
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	nodes := make([]ExpectedNode, len(ids))
	for i, id := range ids {
		nodes[i] = ExpectedNode{Index: -1, InstanceID: id}
	}
	res := gate.Decide(nodes, reports, time.Now(), time.Now())
	return res.Nodes, nil
}
