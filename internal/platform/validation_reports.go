package platform

import (
	"context"
	"slices"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
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
	prefix := v.ReportsPrefix(name)
	ids, err := cloud.ListReportNodes(ctx, e.Clients.S3, prefix, MaxReportNodes, gate.AccountID)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	nodes := make([]ExpectedNode, len(ids))
	for i, id := range ids {
		nodes[i] = ExpectedNode{Index: -1, InstanceID: id}
	}
	reports, err := e.readReports(ctx, prefix, gate.AccountID, nodes, map[string][]byte{})
	if err != nil {
		return nil, err
	}
	res := gate.Decide(nodes, reports, time.Now(), time.Now())
	return res.Nodes, nil
}
