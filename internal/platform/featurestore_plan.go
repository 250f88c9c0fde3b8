package platform

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ErrDestructiveChange is wrapped by UpdateFeatureStore when the change can
// only be made by deleting and recreating the feature group.
var ErrDestructiveChange = errors.New("change needs the feature group to be replaced")

// FeatureStorePlan says how to go from one spec to another. SageMaker can add
// features, change the online store TTL and the throughput, and retag a group
// in place; anything else deletes and recreates the group, which loses the
// online store's records and starts a new offline store table.
type FeatureStorePlan struct {
	// InPlace lists what UpdateFeatureGroup and the tagging calls change.
	InPlace []Change
	// Destructive lists what needs the group deleted and created anew.
	Destructive []Change

	// What the in-place calls send.
	Additions  []Feature
	TTL        *TTL // new TTL; nil: unchanged
	Throughput *Throughput
	// TagsChanged says the group's own tags differ; the caller merges default
	// tags and compares with what AWS holds.
	TagsChanged bool
}

// IsDestructive reports whether the change needs the group replaced.
func (p FeatureStorePlan) IsDestructive() bool { return len(p.Destructive) > 0 }

// Empty reports whether nothing in AWS changes.
func (p FeatureStorePlan) Empty() bool { return len(p.InPlace) == 0 && len(p.Destructive) == 0 }

// DestructivePaths returns the distinct attribute paths of the destructive
// changes, in order.
func (p FeatureStorePlan) DestructivePaths() []string {
	var out []string
	for _, c := range p.Destructive {
		if !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}

// DestructiveSummary describes the destructive changes and what they lose, in
// words, for a plan to show a reviewer.
func (p FeatureStorePlan) DestructiveSummary(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Feature group %q will be DELETED and created again, because SageMaker cannot make these changes in place:\n", name)
	for _, c := range p.Destructive {
		fmt.Fprintf(&b, "  - %s: %s\n", c.Path, c.Reason)
	}
	b.WriteString("Data will be lost: every record in the online store, and the offline store's table for the old group " +
		"(its data files stay in S3 but are no longer part of the feature group; columns of removed features are gone from the new table). " +
		"Ingestion into the group fails while it is being replaced.")
	return b.String()
}

// featureStoreChange compares the current spec with the desired one.
// Features are compared by name, not position: reordering is no change.
func featureStoreChange(old, new FeatureStoreSpec) FeatureStorePlan {
	var p FeatureStorePlan
	destroy := func(path, format string, args ...any) {
		p.Destructive = append(p.Destructive, Change{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	inPlace := func(path, format string, args ...any) {
		p.InPlace = append(p.InPlace, Change{Path: path, Reason: fmt.Sprintf(format, args...)})
	}

	if old.Name != new.Name {
		destroy("name", "renaming %q to %q creates a different feature group; the old one is deleted", old.Name, new.Name)
	}
	if old.Description != new.Description {
		destroy("description", "the description cannot be changed after creation (%q to %q)", old.Description, new.Description)
	}
	if !strings.EqualFold(old.RecordIdentifier, new.RecordIdentifier) {
		destroy("record_identifier_feature_name", "the record identifier changes from %q to %q", old.RecordIdentifier, new.RecordIdentifier)
	}
	if !strings.EqualFold(old.EventTime, new.EventTime) {
		destroy("event_time_feature_name", "the event time feature changes from %q to %q", old.EventTime, new.EventTime)
	}
	if old.RoleARN != new.RoleARN {
		destroy("role_arn", "the role cannot be changed after creation (%q to %q)", old.RoleARN, new.RoleARN)
	}

	planFSFeatures(&p, old, new, destroy, inPlace)
	planFSOnline(&p, old.Online, new.Online, destroy, inPlace)
	planFSOffline(old.Offline, new.Offline, destroy)

	if !fsThroughputEqual(old.Throughput, new.Throughput) && new.Throughput != nil {
		p.Throughput = new.Throughput
		inPlace("throughput", "throughput changes from %s to %s", fsDescribeThroughput(old.Throughput), fsDescribeThroughput(new.Throughput))
	}
	// A throughput block removed leaves the group as it is: nothing to send.

	if !maps.Equal(old.Tags, new.Tags) && !(len(old.Tags) == 0 && len(new.Tags) == 0) {
		p.TagsChanged = true
		inPlace("tags", "tags change")
	}
	return p
}

func planFSFeatures(p *FeatureStorePlan, old, new FeatureStoreSpec, destroy, inPlace func(string, string, ...any)) {
	for _, of := range old.Features {
		nf, ok := new.Feature(of.Name)
		if !ok {
			destroy("features", "feature %q (%s) is removed: SageMaker cannot drop a feature, and the data in the offline store table for %q will be lost", of.Name, describeFeature(of), of.Name)
			continue
		}
		if of.Name != nf.Name {
			destroy("features", "feature %q is renamed to %q (names are case-insensitive in the offline store)", of.Name, nf.Name)
		}
		if !sameFeatureDefinition(of, nf) {
			destroy("features", "feature %q changes type from %s to %s: SageMaker cannot retype a feature, and the data in the offline store table for %q will be lost", of.Name, describeFeature(of), describeFeature(nf), of.Name)
		}
	}
	for _, nf := range new.Features {
		if _, ok := old.Feature(nf.Name); !ok {
			p.Additions = append(p.Additions, nf)
		}
	}
	if len(p.Additions) > 0 {
		names := make([]string, len(p.Additions))
		for i, f := range p.Additions {
			names[i] = fmt.Sprintf("%s (%s)", f.Name, describeFeature(f))
		}
		inPlace("features", "features are added in place: %s", strings.Join(names, ", "))
	}
}

func planFSOnline(p *FeatureStorePlan, old, new *OnlineStore, destroy, inPlace func(string, string, ...any)) {
	oe, ne := old != nil && old.Enabled, new != nil && new.Enabled
	switch {
	case oe != ne:
		destroy("online_store.enabled", "the online store is %s; SageMaker cannot turn it on or off after creation", map[bool]string{true: "turned on", false: "turned off"}[ne])
		return
	case !ne:
		return // off before and after: the other settings mean nothing
	}
	if old.storageType() != new.storageType() {
		destroy("online_store.storage_type", "the online store's storage type changes from %s to %s", old.storageType(), new.storageType())
	}
	if old.KMSKeyARN != new.KMSKeyARN {
		destroy("online_store.kms_key_arn", "the online store's KMS key changes from %q to %q", old.KMSKeyARN, new.KMSKeyARN)
	}
	switch {
	case fsTTLEqual(old.TTL, new.TTL):
	case new.TTL == nil:
		destroy("online_store.ttl", "the TTL (%s) is removed; SageMaker can change a TTL but not remove it (set a longer TTL instead to keep the group)", fsDescribeTTL(old.TTL))
	default:
		p.TTL = new.TTL
		inPlace("online_store.ttl", "the online store TTL changes from %s to %s", fsDescribeTTL(old.TTL), fsDescribeTTL(new.TTL))
	}
}

func planFSOffline(old, new *OfflineStore, destroy func(string, string, ...any)) {
	switch {
	case old == nil && new == nil:
		return
	case old == nil:
		destroy("offline_store", "an offline store is added; SageMaker cannot add one to an existing group")
		return
	case new == nil:
		destroy("offline_store", "the offline store is removed, and with it the group's offline table")
		return
	}
	if old.S3URI != new.S3URI {
		destroy("offline_store.s3_uri", "the offline store moves from %q to %q", old.S3URI, new.S3URI)
	}
	if old.KMSKeyARN != new.KMSKeyARN {
		destroy("offline_store.kms_key_arn", "the offline store's KMS key changes from %q to %q", old.KMSKeyARN, new.KMSKeyARN)
	}
	if old.tableFormat() != new.tableFormat() {
		destroy("offline_store.table_format", "the offline store's table format changes from %s to %s", old.tableFormat(), new.tableFormat())
	}
	if old.DisableGlueTableCreation != new.DisableGlueTableCreation {
		destroy("offline_store.disable_glue_table_creation", "Glue table creation changes from %s to %s",
			map[bool]string{true: "disabled", false: "enabled"}[old.DisableGlueTableCreation], map[bool]string{true: "disabled", false: "enabled"}[new.DisableGlueTableCreation])
	}
}

func sameFeatureDefinition(a, b Feature) bool {
	return a.Type == b.Type && a.CollectionType == b.CollectionType && a.VectorDimension == b.VectorDimension
}

func describeFeature(f Feature) string {
	switch f.CollectionType {
	case "":
		return f.Type
	case CollectionVector:
		return fmt.Sprintf("Vector of %d %s", f.VectorDimension, f.Type)
	default:
		return f.CollectionType + " of " + f.Type
	}
}

func fsTTLEqual(a, b *TTL) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fsDescribeTTL(t *TTL) string {
	if t == nil {
		return "none"
	}
	return fmt.Sprintf("%d %s", t.Value, t.Unit)
}

func fsThroughputEqual(a, b *Throughput) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fsDescribeThroughput(t *Throughput) string {
	switch {
	case t == nil:
		return "the default"
	case t.Mode == ThroughputProvisioned:
		return fmt.Sprintf("provisioned (%d read, %d write units)", t.ReadCapacityUnits, t.WriteCapacityUnits)
	default:
		return "on demand"
	}
}

// SortFeaturesLike orders observed features as they are in want (features
// unknown to want last, in their observed order), so that reading a group
// back does not show a reordering as a change.
func SortFeaturesLike(observed, want []Feature) []Feature {
	pos := map[string]int{}
	for i, f := range want {
		pos[strings.ToLower(f.Name)] = i
	}
	out := slices.Clone(observed)
	sort.SliceStable(out, func(i, j int) bool {
		pi, iok := pos[strings.ToLower(out[i].Name)]
		pj, jok := pos[strings.ToLower(out[j].Name)]
		switch {
		case iok && jok:
			return pi < pj
		case iok:
			return true
		default:
			return false
		}
	})
	return out
}

// fsInPlacePaths are the paths whose change, whatever the new value, is
// an in-place update.
var fsInPlacePaths = []string{"tags", "throughput", "online_store.ttl"}

// featureStoreChangeUnknown is featureStoreChange at plan time, when
// some values of new are not known yet (see ValidateOptions.Unknown). A value
// not known until apply may differ from the current one: where that would be
// destructive, the plan counts it as destructive (fail closed) with a reason
// that says so; TTL, throughput and tag values are in-place either way.
func featureStoreChangeUnknown(old, new FeatureStoreSpec, unknown []string) FeatureStorePlan {
	p := featureStoreChange(old, new)
	if len(unknown) == 0 {
		return p
	}
	opts := unknownPaths(unknown)
	inPlace := func(path string) bool {
		for _, ip := range fsInPlacePaths {
			if path == ip || strings.HasPrefix(path, ip+".") {
				return true
			}
		}
		return false
	}
	var kept, keptInPlace []Change
	for _, c := range p.Destructive {
		if opts.known(c.Path) {
			kept = append(kept, c)
		}
	}
	for _, c := range p.InPlace {
		if opts.known(c.Path) {
			keptInPlace = append(keptInPlace, c)
		}
	}
	seen := map[string]bool{}
	for _, u := range unknown {
		if inPlace(u) {
			// Unknown is not absent: a value not known yet is a pending
			// change, made in place at apply when it differs.
			at := u
			for _, ip := range fsInPlacePaths {
				if u == ip || strings.HasPrefix(u, ip+".") {
					at = ip
				}
			}
			if !seen[at] {
				seen[at] = true
				keptInPlace = append(keptInPlace, Change{Path: at, Reason: fmt.Sprintf("%s is not known until apply; a new value is applied in place", u)})
			}
			continue
		}
		at := u
		if strings.HasPrefix(u, "features") {
			at = "features"
		}
		if seen[at] {
			continue
		}
		seen[at] = true
		kept = append(kept, Change{Path: at, Reason: fmt.Sprintf("%s is not known until apply; if its new value differs from the current one, SageMaker cannot apply it in place", u)})
	}
	p.Destructive, p.InPlace = kept, keptInPlace
	return p
}

// FeatureStorePrior is what a front end recorded of an existing feature
// group: the spec it declared and the status last seen.
type FeatureStorePrior struct {
	Spec          FeatureStoreSpec
	Status        string
	FailureReason string
}

// FeatureStoreAction is what a plan does to an existing feature group.
type FeatureStoreAction string

// The actions of a feature store plan.
const (
	FeatureStoreNoChange FeatureStoreAction = "no-change"
	FeatureStoreInPlace  FeatureStoreAction = "in-place"
	FeatureStoreReplace  FeatureStoreAction = "replace"
	FeatureStoreRefused  FeatureStoreAction = "refused"
)

// FeatureStoreChangeSet is the verdict of PlanFeatureStore: what changes in
// place, what forces a replacement, and what is refused, each on its
// attribute path with the reason in words. Front ends only translate it:
// Refused to errors, Warnings to warnings, Replace to their replacement
// markers.
type FeatureStoreChangeSet struct {
	Action  FeatureStoreAction
	InPlace []Change
	// Replace lists the attributes that force the replacement; "status" when
	// the group is replaced because its creation failed.
	Replace []Change
	// Refused are the plan's errors: a destructive change without
	// allowDestructive, or a recorded group in a state no plan can repair.
	Refused []Problem
	// Warnings go with the plan: what a replacement loses.
	Warnings []Problem
	// StatusChanges says the recorded status will change (a group still
	// being created is finished, or a failed one replaced).
	StatusChanges bool
	// Plan is the detail UpdateFeatureStore sends.
	Plan FeatureStorePlan
}

// AllowDestructiveAttr is the attribute that allows a destructive change, as
// the core's texts name it (snake_case; Pulumi spells it
// allowDestructiveChanges).
const AllowDestructiveAttr = "allow_destructive_changes"

// destructiveRefusal is the one text that refuses a destructive change.
func destructiveRefusal(c Change) string {
	return fmt.Sprintf("%s: %s.\n\nSageMaker cannot make this change in place, so the feature group would have to be deleted and created again. "+
		"That loses every record in the online store, and the data in the offline store table for removed or retyped features will be lost "+
		"(a new table is started). If that is intended, set %s = true and plan again; otherwise revert this change "+
		"(adding features, and changing the TTL, throughput or tags, are in-place updates).", c.Path, c.Reason, AllowDestructiveAttr)
}

// PlanFeatureStore decides how to go from what is recorded (prior) to what
// is declared (desired), at plan time: values at the paths in unknown are not
// known until apply (see featureStoreChangeUnknown: an unknown value that
// SageMaker could not change in place counts as destructive). A recorded
// group that is not healthy is finished, replaced or refused first
// (FeatureStoreRepair). A destructive change is refused unless
// allowDestructive, and then it is a replacement whose warning says what is
// lost.
func PlanFeatureStore(prior FeatureStorePrior, desired FeatureStoreSpec, unknown []string, allowDestructive bool) FeatureStoreChangeSet {
	name := desired.Name
	cs := FeatureStoreChangeSet{Action: FeatureStoreNoChange}
	repair := FeatureStoreRepair(prior.Status, prior.FailureReason, allowDestructive)
	switch {
	case repair.Blocked != "":
		cs.Action = FeatureStoreRefused
		cs.Refused = append(cs.Refused, Problem{Path: "status", Summary: fmt.Sprintf("Feature store (%s) is %s", name, prior.Status), Detail: repair.Blocked})
		return cs
	case repair.Replace:
		cs.Action, cs.StatusChanges = FeatureStoreReplace, true
		cs.Replace = append(cs.Replace, Change{Path: "status", Reason: repair.Reason})
		cs.Warnings = append(cs.Warnings, Problem{Path: "status", Summary: fmt.Sprintf("Feature store %s will be replaced", name), Detail: repair.Reason, Warning: true})
		return cs
	case repair.Finish:
		cs.StatusChanges = true
	}
	p := featureStoreChangeUnknown(prior.Spec, desired, unknown)
	cs.Plan, cs.InPlace = p, p.InPlace
	switch {
	case p.IsDestructive() && !allowDestructive:
		cs.Action = FeatureStoreRefused
		for _, c := range p.Destructive {
			cs.Refused = append(cs.Refused, Problem{Path: c.Path, Summary: fmt.Sprintf("Destructive change to feature store (%s)", name), Detail: destructiveRefusal(c)})
		}
	case p.IsDestructive():
		cs.Action = FeatureStoreReplace
		cs.Replace = p.Destructive
		cs.Warnings = append(cs.Warnings, Problem{Summary: fmt.Sprintf("Feature store %s will be replaced: data will be lost", name), Detail: p.DestructiveSummary(name), Warning: true})
	case len(p.InPlace) > 0 || cs.StatusChanges:
		cs.Action = FeatureStoreInPlace
	}
	return cs
}

// ReplacePaths returns the distinct attribute paths that force the
// replacement, in order.
func (cs FeatureStoreChangeSet) ReplacePaths() []string {
	var out []string
	for _, c := range cs.Replace {
		if !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}
