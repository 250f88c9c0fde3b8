package platform

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/residency"
)

func validApproverConfig() ApproverConfig {
	return ApproverConfig{Schema: ApproverSchema, Region: "me-central-1", Jurisdiction: "AE", Footprint: "smb",
		Profile: "version = 1\n", ReportsS3URI: "s3://reports/footprints/", OnFailure: OnFailureFail, TimeoutSeconds: 600}
}

func TestParseApproverConfig(t *testing.T) {
	good := validApproverConfig()
	b, _ := json.Marshal(good)
	if c, err := ParseApproverConfig(b); err != nil || c.Footprint != "smb" {
		t.Fatalf("valid configuration: %+v, %v", c, err)
	}
	for _, tt := range []struct {
		name   string
		edit   func(*ApproverConfig)
		raw    string
		errHas string
	}{
		{name: "another schema", edit: func(c *ApproverConfig) { c.Schema = "v0" }, errHas: `schema "v0"`},
		{name: "no region", edit: func(c *ApproverConfig) { c.Region = "" }, errHas: "region is empty"},
		{name: "no jurisdiction", edit: func(c *ApproverConfig) { c.Jurisdiction = "" }, errHas: "jurisdiction is empty"},
		{name: "no footprint", edit: func(c *ApproverConfig) { c.Footprint = "" }, errHas: "footprint is empty"},
		{name: "no profile", edit: func(c *ApproverConfig) { c.Profile = " " }, errHas: "profile is empty"},
		{name: "reports not in S3", edit: func(c *ApproverConfig) { c.ReportsS3URI = "https://x/" }, errHas: "reports_s3_uri"},
		{name: "unknown on_failure", edit: func(c *ApproverConfig) { c.OnFailure = "ignore" }, errHas: `on_failure "ignore"`},
		{name: "timeout under the heartbeat's least", edit: func(c *ApproverConfig) { c.TimeoutSeconds = 5 }, errHas: "timeout_seconds 5"},
		{name: "timeout over two hours", edit: func(c *ApproverConfig) { c.TimeoutSeconds = 7201 }, errHas: "timeout_seconds 7201"},
		{name: "unknown attestation", edit: func(c *ApproverConfig) { c.Attestation = "sgx" }, errHas: `attestation "sgx"`},
		{name: "bad PCR", edit: func(c *ApproverConfig) { c.AttestationPCRs = map[string]string{"40": "00"} }, errHas: "attestation_pcrs"},
		{name: "unknown field", raw: `{"schema":"` + ApproverSchema + `","nodes_approve_themselves":true}`, errHas: "unknown field"},
		{name: "two values", raw: string(b) + string(b), errHas: "more than one JSON value"},
		{name: "too large", raw: strings.Repeat(" ", MaxApproverConfigBytes+1), errHas: "bytes, more than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			if tt.edit != nil {
				c := validApproverConfig()
				tt.edit(&c)
				raw, _ = json.Marshal(c)
			}
			_, err := ParseApproverConfig(raw)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("error %v, want one naming %q", err, tt.errHas)
			}
		})
	}
}

// What the footprint renders, the approver reads back unchanged, and the
// validation settings it carries are the gate's.
func TestApproverConfigRoundTrip(t *testing.T) {
	e := &Env{TrustedCertificates: "PEM", Policy: &residency.Policy{Jurisdiction: residency.Jurisdiction{Code: "AE"}}}
	v := ValidationSpec{ReportsS3URI: "s3://reports/footprints/", OnFailure: OnFailureWarn, Attestation: AttestationNitroTPM,
		AttestationPCRs: map[string]string{"4": strings.Repeat("ab", 48)}}
	plan := &CPUFootprintPlan{Profile: "version = 1\n", Attested: true}
	raw := e.approverConfigIn("me-central-1", "smb", v, plan)
	c, err := ParseApproverConfig([]byte(raw))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	s := c.spec()
	if c.Jurisdiction != "AE" || c.TrustedCertificates != "PEM" || !c.Attested || s.OnFailure != OnFailureWarn || s.Timeout != DefaultValidationTimeout ||
		s.AttestationPCRs["4"] != v.AttestationPCRs["4"] || s.ReportsPrefix("smb") != v.ReportsPrefix("smb") {
		t.Errorf("round trip lost settings: %+v\n%s", s, raw)
	}
	if (&Env{}).approverConfigIn("me-central-1", "smb", v, &CPUFootprintPlan{}) != "" {
		t.Error("a plan without a profile has an approver configuration")
	}
}

func FuzzParseApproverConfig(f *testing.F) {
	b, _ := json.Marshal(validApproverConfig())
	f.Add(b)
	f.Add([]byte(`{"schema":"` + ApproverSchema + `"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := ParseApproverConfig(raw)
		if err != nil {
			return
		}
		// What parses names a footprint, a region, a jurisdiction and an
		// S3 prefix, and its settings make a gate's.
		if c.Footprint == "" || c.Region == "" || c.Jurisdiction == "" || !strings.HasPrefix(c.ReportsS3URI, "s3://") {
			t.Fatalf("accepted %+v", c)
		}
		if s := c.spec(); s.Timeout <= 0 || s.MaxReplacements == nil {
			t.Fatalf("spec without defaults: %+v", s)
		}
	})
}
