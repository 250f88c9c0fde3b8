package pulumi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// FeatureStore is a SageMaker feature group: the Pulumi twin of
// mlplatform_feature_store, over the same core verbs.
type FeatureStore struct{}

var (
	_ infer.CustomResource[FeatureStoreArgs, FeatureStoreState] = FeatureStore{}
	_ infer.CustomCheck[FeatureStoreArgs]                       = FeatureStore{}
	_ infer.CustomDiff[FeatureStoreArgs, FeatureStoreState]     = FeatureStore{}
	_ infer.CustomUpdate[FeatureStoreArgs, FeatureStoreState]   = FeatureStore{}
	_ infer.CustomRead[FeatureStoreArgs, FeatureStoreState]     = FeatureStore{}
	_ infer.CustomDelete[FeatureStoreState]                     = FeatureStore{}
	_ infer.Annotated                                           = (*FeatureStore)(nil)
)

// FeatureStoreArgs are the inputs of a feature store.
type FeatureStoreArgs struct {
	Name                        *string             `pulumi:"name,optional"`
	Description                 *string             `pulumi:"description,optional"`
	RecordIdentifierFeatureName string              `pulumi:"recordIdentifierFeatureName"`
	EventTimeFeatureName        string              `pulumi:"eventTimeFeatureName"`
	Features                    []FeatureDefinition `pulumi:"features"`
	OnlineStore                 *OnlineStore        `pulumi:"onlineStore,optional"`
	OfflineStore                *OfflineStore       `pulumi:"offlineStore,optional"`
	Throughput                  *Throughput         `pulumi:"throughput,optional"`
	RoleARN                     *string             `pulumi:"roleArn,optional"`
	Tags                        map[string]string   `pulumi:"tags,optional"`
	AllowDestructiveChanges     *bool               `pulumi:"allowDestructiveChanges,optional"`
}

// FeatureDefinition is one feature.
type FeatureDefinition struct {
	Name            string  `pulumi:"name"`
	Type            string  `pulumi:"type"`
	CollectionType  *string `pulumi:"collectionType,optional"`
	VectorDimension *int    `pulumi:"vectorDimension,optional"`
}

// OnlineStore is the low-latency store. Enabled has no default: it is
// required, as in Terraform (the core's contract, see platform.OnlineStore).
type OnlineStore struct {
	Enabled     bool            `pulumi:"enabled"`
	StorageType *string         `pulumi:"storageType,optional"`
	KMSKeyARN   *string         `pulumi:"kmsKeyArn,optional"`
	TTL         *OnlineStoreTtl `pulumi:"ttl,optional"`
}

// OnlineStoreTtl is the online store's time to live.
type OnlineStoreTtl struct {
	Unit  string `pulumi:"unit"`
	Value int    `pulumi:"value"`
}

// OfflineStore is the historical store in S3.
type OfflineStore struct {
	S3URI                    string  `pulumi:"s3Uri"`
	KMSKeyARN                *string `pulumi:"kmsKeyArn,optional"`
	TableFormat              *string `pulumi:"tableFormat,optional"`
	DisableGlueTableCreation *bool   `pulumi:"disableGlueTableCreation,optional"`
}

// Throughput is the read and write capacity.
type Throughput struct {
	Mode               string `pulumi:"mode"`
	ReadCapacityUnits  *int   `pulumi:"readCapacityUnits,optional"`
	WriteCapacityUnits *int   `pulumi:"writeCapacityUnits,optional"`
}

// FeatureStoreState is the feature store's state: its inputs and what AWS
// says about it.
type FeatureStoreState struct {
	FeatureStoreArgs
	ARN                       *string           `pulumi:"arn,optional"`
	Status                    *string           `pulumi:"status,optional"`
	FailureReason             *string           `pulumi:"failureReason,optional"`
	CreationTime              *string           `pulumi:"creationTime,optional"`
	TagsAll                   map[string]string `pulumi:"tagsAll,optional"`
	OfflineStoreTableName     *string           `pulumi:"offlineStoreTableName,optional"`
	OfflineStoreDatabaseName  *string           `pulumi:"offlineStoreDatabaseName,optional"`
	OfflineStoreResolvedS3URI *string           `pulumi:"offlineStoreResolvedS3Uri,optional"`
}

// Annotate describes the resource.
func (f *FeatureStore) Annotate(a infer.Annotator) {
	a.Describe(f, "A SageMaker feature group: features, record identifier and event time, an online store and an offline store inside the jurisdiction. "+
		"Adding features, and changing the TTL, throughput or tags, are in-place updates. Removing or retyping a feature, or any other change SageMaker "+
		"cannot make in place, fails preview unless `allowDestructiveChanges` is true, and then replaces the group.")
}

// Annotate describes the inputs.
func (f *FeatureStoreArgs) Annotate(a infer.Annotator) {
	a.Describe(&f.Name, "Feature group name. Default: the resource name. Changing it replaces the group.")
	a.Describe(&f.Description, "Description. Changing it replaces the group.")
	a.Describe(&f.RecordIdentifierFeatureName, "Name of the feature that identifies a record (Integral or String).")
	a.Describe(&f.EventTimeFeatureName, "Name of the feature that holds the event time (Fractional or String).")
	a.Describe(&f.Features, fmt.Sprintf("The features, at most %d. Adding features is an in-place update.", platform.MaxFeatures))
	a.Describe(&f.OnlineStore, "The online store.")
	a.Describe(&f.OfflineStore, "The offline store. Its S3 bucket must lie inside the jurisdiction and not replicate outside it.")
	a.Describe(&f.Throughput, "Read and write capacity. Default: on demand.")
	a.Describe(&f.RoleARN, "IAM role the offline store writes with.")
	a.Describe(&f.Tags, "Tags of the feature group.")
	a.Describe(&f.AllowDestructiveChanges, "Allow changes that delete and recreate the group (losing the online store's records). Default `false`: such a preview fails.")
}

// Annotate describes a feature.
func (f *FeatureDefinition) Annotate(a infer.Annotator) {
	a.Describe(&f.Name, "Feature name.")
	a.Describe(&f.Type, "Integral, Fractional or String.")
	a.Describe(&f.CollectionType, "List, Set or Vector; unset for a scalar.")
	a.Describe(&f.VectorDimension, "Dimension of a Vector feature.")
}

// Annotate describes the outputs.
func (s *FeatureStoreState) Annotate(a infer.Annotator) {
	a.Describe(&s.ARN, "ARN of the feature group.")
	a.Describe(&s.Status, "Status of the feature group, e.g. `Created`.")
	a.Describe(&s.FailureReason, "SageMaker's reason when the group's creation or deletion failed.")
	a.Describe(&s.CreationTime, "When the group was created (RFC 3339).")
	a.Describe(&s.TagsAll, "`tags` merged over the provider's `defaultTags`.")
	a.Describe(&s.OfflineStoreTableName, "Glue table of the offline store.")
	a.Describe(&s.OfflineStoreDatabaseName, "Glue database of the offline store.")
	a.Describe(&s.OfflineStoreResolvedS3URI, "Where offline records are written.")
}

// Check validates the feature group and checks its residency, on the values
// known now: a failure fails preview on its property.
func (FeatureStore) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[FeatureStoreArgs], error) {
	args, failures, err := infer.DefaultCheck[FeatureStoreArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[FeatureStoreArgs]{Inputs: args, Failures: failures}, err
	}
	if args.Name == nil || *args.Name == "" {
		args.Name = ptr(req.Name)
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CheckResponse[FeatureStoreArgs]{Inputs: args}, err
	}
	errs, vs, err := env.CheckFeatureStore(ctx, args.spec(), unknownPaths(req.NewInputs))
	if err != nil {
		return infer.CheckResponse[FeatureStoreArgs]{Inputs: args}, err
	}
	for _, e := range errs {
		failures = append(failures, p.CheckFailure{Property: propertyPath(e.Path), Reason: e.Detail})
	}
	return infer.CheckResponse[FeatureStoreArgs]{Inputs: args, Failures: append(failures, reportViolations(ctx, env.Policy, vs)...)}, nil
}

// Diff decides between an in-place update and a replacement with the core's
// planner: a destructive change fails preview unless allowDestructiveChanges
// is true. An input not known yet is a pending change, never an absent one.
func (FeatureStore) Diff(ctx context.Context, req infer.DiffRequest[FeatureStoreArgs, FeatureStoreState]) (infer.DiffResponse, error) {
	prior := platform.FeatureStorePrior{Spec: req.State.FeatureStoreArgs.spec(), Status: deref(req.State.Status), FailureReason: deref(req.State.FailureReason)}
	allow := deref(req.Inputs.AllowDestructiveChanges)
	cs := platform.PlanFeatureStore(prior, req.Inputs.spec(), unknownInputs(ctx), allow)
	if len(cs.Refused) > 0 {
		var b strings.Builder
		for _, r := range cs.Refused {
			fmt.Fprintf(&b, "\n  - %s: %s", r.Summary, pulumiText(r.Detail))
		}
		return infer.DiffResponse{}, fmt.Errorf("feature store (%s): the plan is refused:%s", deref(req.Inputs.Name), b.String())
	}
	for _, w := range cs.Warnings {
		p.GetLogger(ctx).Warning(w.Summary + ": " + pulumiText(w.Detail))
	}
	diff := map[string]p.PropertyDiff{}
	for _, c := range cs.InPlace {
		diff[topProperty(c.Path)] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if cs.StatusChanges {
		diff["status"] = p.PropertyDiff{Kind: p.Update}
	}
	for _, path := range cs.ReplacePaths() {
		if path == "status" {
			path = "name" // a failed group is replaced: shown on its name
		}
		diff[topProperty(path)] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if deref(req.State.AllowDestructiveChanges) != allow {
		diff["allowDestructiveChanges"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	return infer.DiffResponse{HasChanges: len(diff) > 0, DeleteBeforeReplace: cs.Action == platform.FeatureStoreReplace, DetailedDiff: diff}, nil
}

// Create creates the feature group and waits until it is ready. A group
// created but not ready is recorded (failed to initialise), never orphaned.
func (FeatureStore) Create(ctx context.Context, req infer.CreateRequest[FeatureStoreArgs]) (infer.CreateResponse[FeatureStoreState], error) {
	args := req.Inputs
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CreateResponse[FeatureStoreState]{}, err
	}
	if req.DryRun && deref(args.Name) != "" {
		// A group of the name that exists is never replaced by accident.
		warning, err := env.CheckFeatureStoreAbsent(ctx, deref(args.Name), deref(args.AllowDestructiveChanges))
		if err != nil {
			return infer.CreateResponse[FeatureStoreState]{}, fmt.Errorf("creating feature store (%s): %w", deref(args.Name), err)
		}
		if warning != "" {
			p.GetLogger(ctx).Warning(warning)
		}
	}
	if req.DryRun {
		return infer.CreateResponse[FeatureStoreState]{ID: deref(args.Name), Output: FeatureStoreState{FeatureStoreArgs: args}}, nil
	}
	spec := args.spec()
	fs, vs, err := env.CreateFeatureStore(ctx, spec, featureStoreWait(ctx, spec.Name, "creation"))
	reportViolations(ctx, env.Policy, auditOnly(env, vs))
	if fs == nil {
		return infer.CreateResponse[FeatureStoreState]{}, fmt.Errorf("creating feature store (%s): %w", spec.Name, err)
	}
	state := featureStoreState(env, fs, args)
	if err != nil {
		return infer.CreateResponse[FeatureStoreState]{ID: spec.Name, Output: state}, infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("creating feature store (%s): %v", spec.Name, err)}}
	}
	return infer.CreateResponse[FeatureStoreState]{ID: spec.Name, Output: state}, nil
}

// Read refreshes the group from AWS; a group gone is gone from state, a
// deletion under way is waited for (a failed one keeps the group). Values left unset stay unset where AWS reports the default.
func (FeatureStore) Read(ctx context.Context, req infer.ReadRequest[FeatureStoreArgs, FeatureStoreState]) (infer.ReadResponse[FeatureStoreArgs, FeatureStoreState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[FeatureStoreArgs, FeatureStoreState]{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	fs, err := env.ReadFeatureStore(ctx, name, platform.FeatureStoreReadSettle)
	if errors.Is(err, platform.ErrNotFound) {
		return infer.ReadResponse[FeatureStoreArgs, FeatureStoreState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[FeatureStoreArgs, FeatureStoreState]{}, fmt.Errorf("reading feature store (%s): %w", name, err)
	}
	prior := req.State.FeatureStoreArgs
	if prior.RecordIdentifierFeatureName == "" {
		prior = req.Inputs
	}
	state := featureStoreState(env, fs, prior)
	return infer.ReadResponse[FeatureStoreArgs, FeatureStoreState]{ID: name, Inputs: state.FeatureStoreArgs, State: state}, nil
}

// Update makes the in-place changes (feature additions, TTL, throughput,
// tags); a replacement never reaches Update.
func (FeatureStore) Update(ctx context.Context, req infer.UpdateRequest[FeatureStoreArgs, FeatureStoreState]) (infer.UpdateResponse[FeatureStoreState], error) {
	args := req.Inputs
	if req.DryRun {
		st := req.State
		st.FeatureStoreArgs = args
		return infer.UpdateResponse[FeatureStoreState]{Output: st}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.UpdateResponse[FeatureStoreState]{}, err
	}
	old, spec := req.State.FeatureStoreArgs.spec(), args.spec()
	fs, vs, err := env.UpdateFeatureStore(ctx, old, spec, featureStoreWait(ctx, spec.Name, "update"))
	reportViolations(ctx, env.Policy, auditOnly(env, vs))
	if err != nil {
		return infer.UpdateResponse[FeatureStoreState]{}, fmt.Errorf("updating feature store (%s): %w", spec.Name, err)
	}
	return infer.UpdateResponse[FeatureStoreState]{Output: featureStoreState(env, fs, args)}, nil
}

// Delete deletes the group and waits until it is gone.
func (FeatureStore) Delete(ctx context.Context, req infer.DeleteRequest[FeatureStoreState]) (infer.DeleteResponse, error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	if err := env.DeleteFeatureStore(ctx, name, featureStoreWait(ctx, name, "deletion")); err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("deleting feature store (%s): %w", name, err)
	}
	return infer.DeleteResponse{}, nil
}

// spec translates the inputs to the domain spec.
func (f FeatureStoreArgs) spec() platform.FeatureStoreSpec {
	s := platform.FeatureStoreSpec{
		Name:             deref(f.Name),
		Description:      deref(f.Description),
		RecordIdentifier: f.RecordIdentifierFeatureName,
		EventTime:        f.EventTimeFeatureName,
		RoleARN:          deref(f.RoleARN),
		Tags:             f.Tags,
	}
	for _, ft := range f.Features {
		s.Features = append(s.Features, platform.Feature{Name: ft.Name, Type: ft.Type, CollectionType: deref(ft.CollectionType), VectorDimension: int64(deref(ft.VectorDimension))})
	}
	if o := f.OnlineStore; o != nil {
		s.Online = &platform.OnlineStore{Enabled: o.Enabled, StorageType: deref(o.StorageType), KMSKeyARN: deref(o.KMSKeyARN)}
		if o.TTL != nil {
			s.Online.TTL = &platform.TTL{Unit: o.TTL.Unit, Value: int64(o.TTL.Value)}
		}
	}
	if o := f.OfflineStore; o != nil {
		s.Offline = &platform.OfflineStore{S3URI: o.S3URI, KMSKeyARN: deref(o.KMSKeyARN), TableFormat: deref(o.TableFormat), DisableGlueTableCreation: deref(o.DisableGlueTableCreation)}
	}
	if t := f.Throughput; t != nil {
		s.Throughput = &platform.Throughput{Mode: t.Mode, ReadCapacityUnits: int64(deref(t.ReadCapacityUnits)), WriteCapacityUnits: int64(deref(t.WriteCapacityUnits))}
	}
	return s
}

// declared is the spec and the optional inputs left unset.
func (f FeatureStoreArgs) declared() platform.FeatureStoreDeclared {
	d := platform.FeatureStoreDeclared{Spec: f.spec()}
	unset := func(path string, isNil bool) {
		if isNil {
			d.Unset = append(d.Unset, path)
		}
	}
	unset("description", f.Description == nil)
	unset("role_arn", f.RoleARN == nil)
	unset("online_store", f.OnlineStore == nil)
	if o := f.OnlineStore; o == nil || o.StorageType == nil {
		unset("online_store.storage_type", true)
	}
	if o := f.OnlineStore; o == nil || o.KMSKeyARN == nil {
		unset("online_store.kms_key_arn", true)
	}
	o := f.OfflineStore
	unset("offline_store.kms_key_arn", o == nil || o.KMSKeyARN == nil)
	unset("offline_store.table_format", o == nil || o.TableFormat == nil)
	unset("offline_store.disable_glue_table_creation", o == nil || o.DisableGlueTableCreation == nil)
	unset("throughput", f.Throughput == nil)
	unset(platform.FeatureStoreTagsPath, f.Tags == nil)
	return d
}

// featureStoreState is what exists, in the shape prior declared it, by the
// core's read-back rules (platform.FeatureStoreReadBackOf).
func featureStoreState(env *platform.Env, fs *platform.FeatureStore, prior FeatureStoreArgs) FeatureStoreState {
	rb := env.ReadBackFeatureStore(fs, prior.declared())
	s := rb.Spec
	str := func(path, v string) *string {
		if rb.IsUnset(path) {
			return nil
		}
		return &v
	}
	a := FeatureStoreArgs{
		Name:                        ptr(s.Name),
		Description:                 str("description", s.Description),
		RecordIdentifierFeatureName: s.RecordIdentifier,
		EventTimeFeatureName:        s.EventTime,
		RoleARN:                     str("role_arn", s.RoleARN),
		Tags:                        s.Tags,
		AllowDestructiveChanges:     prior.AllowDestructiveChanges,
	}
	for _, f := range s.Features {
		fd := FeatureDefinition{Name: f.Name, Type: f.Type, CollectionType: optional(f.CollectionType)}
		if f.VectorDimension != 0 {
			fd.VectorDimension = ptr(int(f.VectorDimension))
		}
		a.Features = append(a.Features, fd)
	}
	if on := s.Online; on != nil {
		a.OnlineStore = &OnlineStore{Enabled: on.Enabled, StorageType: str("online_store.storage_type", on.StorageType), KMSKeyARN: str("online_store.kms_key_arn", on.KMSKeyARN)}
		if on.TTL != nil {
			a.OnlineStore.TTL = &OnlineStoreTtl{Unit: on.TTL.Unit, Value: int(on.TTL.Value)}
		}
	}
	if off := s.Offline; off != nil {
		a.OfflineStore = &OfflineStore{S3URI: off.S3URI, KMSKeyARN: str("offline_store.kms_key_arn", off.KMSKeyARN), TableFormat: str("offline_store.table_format", off.TableFormat)}
		if !rb.IsUnset("offline_store.disable_glue_table_creation") {
			a.OfflineStore.DisableGlueTableCreation = ptr(off.DisableGlueTableCreation)
		}
	}
	if t := s.Throughput; t != nil {
		a.Throughput = &Throughput{Mode: t.Mode}
		if t.ReadCapacityUnits != 0 {
			a.Throughput.ReadCapacityUnits = ptr(int(t.ReadCapacityUnits))
		}
		if t.WriteCapacityUnits != 0 {
			a.Throughput.WriteCapacityUnits = ptr(int(t.WriteCapacityUnits))
		}
	}
	return FeatureStoreState{
		FeatureStoreArgs:          a,
		ARN:                       ptr(rb.ARN),
		Status:                    ptr(rb.Status),
		FailureReason:             optional(rb.FailureReason),
		CreationTime:              optional(rb.CreationTime),
		TagsAll:                   rb.TagsAll,
		OfflineStoreTableName:     optional(rb.OfflineTableName),
		OfflineStoreDatabaseName:  optional(rb.OfflineDatabaseName),
		OfflineStoreResolvedS3URI: optional(rb.OfflineResolvedS3URI),
	}
}

// featureStoreWait logs the progress of a wait, bounded by the core's
// default timeouts.
func featureStoreWait(ctx context.Context, name, what string) platform.FeatureStoreWait {
	return platform.FeatureStoreWait{Progress: func(state string, elapsed time.Duration) {
		p.GetLogger(ctx).InfoStatusf("waiting for feature store %s %s: %s (%s)", name, what, state, elapsed.Round(time.Second))
	}}
}

// auditOnly returns the violations to show as warnings: in enforce mode
// violations come back as the error instead.
func auditOnly(env *platform.Env, vs []residencyViolation) []residencyViolation {
	if env.Policy.Enforcing() {
		return nil
	}
	return vs
}

// topProperty is the top-level Pulumi property of a core path.
func topProperty(path string) string {
	pp := propertyPath(path)
	if i := strings.IndexAny(pp, ".["); i >= 0 {
		return pp[:i]
	}
	return pp
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// pulumiText names Pulumi's properties in a text of the core, which speaks
// Terraform's attribute names.
func pulumiText(s string) string {
	return strings.ReplaceAll(s, platform.AllowDestructiveAttr, "allowDestructiveChanges")
}
