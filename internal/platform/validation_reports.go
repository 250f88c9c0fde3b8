package platform

import (
	"context"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"slices"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// ReportsQuery narrows what ValidationReports reads.
type ReportsQuery struct {
	// Profile, when set, is the profile text the reports must be against
	// (a cluster's validation_profile); others are ignored, as the gate
	// ignores them.
	Profile string
	// MaxAge, when set, ignores reports S3 stored longer ago.
	MaxAge time.Duration
}

// ValidationReports reads the reports under the reports prefix of
// resource name (ValidationSpec.ReportsPrefix): for each instance that
// published, its newest report judged as the gate judges it (identity
// verified against trustedPEM, or the environment's certificates; the
// instance, account and region matched; the jurisdiction; the checks),
// sorted by instance id. q narrows what is read: a profile, a most age.
func (e *Env) ValidationReports(ctx context.Context, reportsS3URI, name, trustedPEM string, q ReportsQuery) ([]NodeVerdict, error) {
	v := ValidationSpec{ReportsS3URI: reportsS3URI, TrustedCertificates: trustedPEM}.WithDefaults()
	gate, err := e.newGate(ctx, v, q.Profile)
	if err != nil {
		return nil, err
	}
	if q.Profile == "" {
		gate.ProfileSHA256 = "" // reports of any profile
	}
	prefix := v.ReportsPrefix(name)
	ids, err := cloud.ListReportNodes(ctx, e.Clients.S3, prefix, MaxReportNodes, gate.AccountID)
	if err != nil {
		return nil, err
	}
	// Nodes that joined or left Slurm, or that hwprobe drained or resumed
	// in it, say so beside the nodes' prefixes: not nodes.
	ids = slices.DeleteFunc(ids, func(id string) bool {
		return id+"/" == slurm.LeftMarkerDir || id+"/" == slurm.JoinedMarkerDir || id+"/" == slurm.HealthMarkerDir
	})
	slices.Sort(ids)
	nodes := make([]ExpectedNode, len(ids))
	for i, id := range ids {
		nodes[i] = ExpectedNode{Index: -1, InstanceID: id}
	}
	reports, err := e.readReports(ctx, prefix, gate, nodes, map[string][]byte{})
	if err != nil {
		return nil, err
	}
	if q.MaxAge > 0 {
		// Older than the most age by the time S3 stored them: not read.
		since := time.Now().Add(-q.MaxAge)
		reports = slices.DeleteFunc(reports, func(r ReportObject) bool { return r.LastModified.Before(since) })
	}
	res := gate.Decide(nodes, reports, time.Now(), time.Now())
	return res.Nodes, nil
}
