// Package review turns a plan (`terraform show -json` or `pulumi preview
// --json`) into what a reviewer of a platform change needs: the monthly cost
// before and after, GPUs added or removed, the residency verdict of every
// location, the destructive changes with stateful ML resources first, and
// which nodes the validation gate will check. It works offline: prices come
// from the embedded catalog, residency from the plan itself, and nothing
// leaves the machine.
package review

// SchemaVersion is the version of the JSON report's shape
// (report.schema.json). It changes when a field is removed or changes
// meaning; new fields may appear without a change.
const SchemaVersion = "1"

// Report is the review of one plan, as `--format json` writes it.
type Report struct {
	SchemaVersion string     `json:"schema_version"`
	Source        Source     `json:"source"`
	ToolVersion   string     `json:"tool_version,omitempty"`
	Summary       Summary    `json:"summary"`
	Cost          Cost       `json:"cost"`
	GPUs          GPUDelta   `json:"gpus"`
	Residency     Residency  `json:"residency"`
	Destructive   []Destroy  `json:"destructive"`
	Validation    Validation `json:"validation"`
	Policy        *Verdict   `json:"policy,omitempty"`
}

// Summary counts the plan's actions.
type Summary struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
	NoOp    int `json:"no_op"`
}

// Cost is the monthly cost before and after the plan. Totals add known
// prices only; Unknown lists every resource whose price is not known, so a
// total is a lower bound whenever Unknown is not empty.
type Cost struct {
	Currency      string       `json:"currency"`
	HoursPerMonth float64      `json:"hours_per_month"`
	BeforeMonthly float64      `json:"before_monthly"`
	AfterMonthly  float64      `json:"after_monthly"`
	DeltaMonthly  float64      `json:"delta_monthly"`
	Complete      bool         `json:"complete"` // no unknown price among the changed resources
	Resources     []CostLine   `json:"resources"`
	Unknown       []Unpriced   `json:"unknown"`
	NotPriced     []Unpriced   `json:"not_priced"`
	Prices        []PriceQuote `json:"prices"`
	CatalogAsOf   string       `json:"catalog_as_of"`
}

// CostLine is one priced resource. Before or After is null when that side's
// price is unknown (or the side does not exist: then it is 0).
type CostLine struct {
	Address string   `json:"address"`
	Type    string   `json:"type"`
	Action  Action   `json:"action"`
	Before  *float64 `json:"before_monthly"`
	After   *float64 `json:"after_monthly"`
	Delta   *float64 `json:"delta_monthly"`
	Basis   string   `json:"basis"` // how the figure is made, e.g. "2 x p5en.48xlarge x HoursPerMonth h"
}

// Unpriced is a resource whose cost the review does not know, and why.
type Unpriced struct {
	Address string `json:"address"`
	Side    string `json:"side,omitempty"` // before or after
	Reason  string `json:"reason"`
}

// PriceQuote is one price the review used: its figure, region, date and
// source.
type PriceQuote struct {
	InstanceType string  `json:"instance_type"`
	USDPerHour   float64 `json:"usd_per_hour"`
	Region       string  `json:"region"`
	Estimate     bool    `json:"estimate"` // not a quote for the resource's region
	AsOf         string  `json:"as_of"`
	Source       string  `json:"source"`
}

// GPUDelta is the GPUs the plan adds or removes, by model.
type GPUDelta struct {
	Models []GPUModel `json:"models"`
}

// GPUModel is one GPU model's count and monthly GPU-hours before and after.
type GPUModel struct {
	Model          string   `json:"model"`
	Before         int      `json:"before"`
	After          int      `json:"after"`
	Delta          int      `json:"delta"`
	HoursBefore    float64  `json:"gpu_hours_before_monthly"`
	HoursAfter     float64  `json:"gpu_hours_after_monthly"`
	HoursDelta     float64  `json:"gpu_hours_delta_monthly"`
	UnknownCount   int      `json:"resources_with_unknown_count"` // resources whose GPU count is known only after apply
	ContributingTo []string `json:"resources"`
}

// Verdicts of a location.
const (
	VerdictIn        = "in"        // inside the jurisdiction
	VerdictOutside   = "outside"   // outside the jurisdiction
	VerdictViolation = "violation" // breaks a residency rule other than location (customer managed keys, tags, registry)
	VerdictUnknown   = "unknown"   // not known until apply, or not decidable from the plan
)

// Residency is the verdict of every location in the plan.
type Residency struct {
	Jurisdiction       string         `json:"jurisdiction"`
	JurisdictionSource string         `json:"jurisdiction_source"` // plan (mlplatform provider) or flag
	AllowedRegions     []string       `json:"allowed_regions"`
	Mode               string         `json:"mode"`
	Evaluated          bool           `json:"evaluated"` // false when no jurisdiction is known
	NotEvaluatedReason string         `json:"not_evaluated_reason,omitempty"`
	Counts             map[string]int `json:"counts"`
	Locations          []Location     `json:"locations"`
}

// Location is one referenced location and its verdict.
type Location struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Value   string `json:"value"`
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// Destroy is one delete or replace.
type Destroy struct {
	Address      string   `json:"address"`
	Type         string   `json:"type"`
	Action       Action   `json:"action"`
	Stateful     bool     `json:"stateful"`
	Holds        string   `json:"holds,omitempty"` // the data lost, in words
	ReplacePaths []string `json:"replace_paths"`
	ActionReason string   `json:"action_reason,omitempty"`
}

// Validation is what the hwprobe validation gate will check.
type Validation struct {
	Declared bool             `json:"declared"`
	Gates    []ValidationGate `json:"gates"`
}

// ValidationGate is one resource's validation block.
type ValidationGate struct {
	Address   string `json:"address"`
	Type      string `json:"type"`
	Nodes     *int   `json:"nodes"` // null when known only after apply
	Profile   string `json:"profile"`
	Level     string `json:"level,omitempty"`
	OnFailure string `json:"on_failure,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	Wait      *bool  `json:"wait,omitempty"`
}

// Verdict is the outcome of the --fail-on policy.
type Verdict struct {
	Rules  []string `json:"rules"`
	Passed bool     `json:"passed"`
	Failed []string `json:"failed"` // one line per broken rule, in words
}
