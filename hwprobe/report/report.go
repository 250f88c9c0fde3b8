// Package report builds hwprobe's JSON report (inventory, validation and the
// signed instance identity document) and publishes it to S3 in the
// profile's region, encrypted with KMS.
package report

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// SchemaVersion names the report JSON schema (docs/guides/hwprobe.md).
const SchemaVersion = "hwprobe.mlplatform.io/report/v1"

// Report is what a node publishes after validation.
type Report struct {
	Schema      string    `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	// Challenge is the validation gate's challenge this report answers (64
	// lowercase hex characters, from the instance tag ChallengeTag); empty
	// in a report nobody asked for (the boot-time report).
	Challenge  string           `json:"challenge,omitempty"`
	Version    string           `json:"hwprobe_version,omitempty"`
	Profile    *ProfileRef      `json:"profile,omitempty"`
	Validation *validate.Result `json:"validation,omitempty"`
	Inventory  *probe.Inventory `json:"inventory"`
	// Identity is the instance identity document and its rsa2048 signature,
	// verbatim, so a reader can check where the report was produced.
	Identity *probe.Identity `json:"identity,omitempty"`
}

// ProfileRef identifies the profile the node was validated against.
type ProfileRef struct {
	Name   string `json:"name,omitempty"`
	Region string `json:"region,omitempty"`
	SHA256 string `json:"sha256"` // of the profile source text
}

// Options are the parts of a report that do not come from the probe.
type Options struct {
	Version       string
	ProfileName   string
	ProfileRegion string
	ProfileSource []byte // nil when no profile was used
	Now           time.Time
}

// New assembles a report. res may be nil (inventory only).
func New(inv *probe.Inventory, res *validate.Result, o Options) Report {
	r := Report{Schema: SchemaVersion, GeneratedAt: o.Now.UTC(), Version: o.Version, Inventory: inv, Validation: res}
	if o.ProfileSource != nil {
		sum := sha256.Sum256(o.ProfileSource)
		r.Profile = &ProfileRef{Name: o.ProfileName, Region: o.ProfileRegion, SHA256: hex.EncodeToString(sum[:])}
	}
	if inv != nil && inv.Host.Identity != nil {
		id := *inv.Host.Identity
		r.Identity = &id
	}
	return r
}
