package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// ErrFeatureStoreResidency is wrapped when a feature store write is refused
// because the residency policy (enforce mode) is broken. The violations come
// back beside the error, each on its attribute path.
var ErrFeatureStoreResidency = errors.New("feature store breaks the residency policy")

// FieldErrors is a spec that failed validation.
type FieldErrors []FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return "invalid feature store: " + strings.Join(msgs, "; ")
}

// FeatureStoreWait bounds and reports a feature store wait.
type FeatureStoreWait = cloud.WaitOptions

// CheckFeatureStoreResidency runs the residency engine on the locations of
// s (the offline store bucket and its replication, the KMS keys, the role)
// and the required-tag rule on its tags merged with the default tags. Paths
// in unknown are skipped (plan time); at apply pass none, so that everything
// is checked before any write.
func (e *Env) CheckFeatureStoreResidency(ctx context.Context, s FeatureStoreSpec, unknown []string) ([]residency.Violation, error) {
	tagsPath := FeatureStoreTagsPath
	if slices.Contains(unknown, FeatureStoreTagsPath) {
		tagsPath = ""
	}
	return e.CheckResidency(ctx, FeatureStoreResidencyRefs(s, unknown), s.Tags, tagsPath)
}

// guardFeatureStore validates s and checks its residency, all values known.
// The violations are returned in both modes; in enforce mode they are an
// error too.
func (e *Env) guardFeatureStore(ctx context.Context, s FeatureStoreSpec) ([]residency.Violation, error) {
	if errs := ValidateFeatureStore(s, ValidateOptions{}); len(errs) > 0 {
		return nil, FieldErrors(errs)
	}
	vs, err := e.CheckFeatureStoreResidency(ctx, s, nil)
	if err != nil {
		return nil, fmt.Errorf("checking residency of feature store %s: %w", s.Name, err)
	}
	if len(vs) > 0 && e.Policy.Enforcing() {
		return vs, fmt.Errorf("%w: %s", ErrFeatureStoreResidency, residency.Summarize(vs))
	}
	return vs, nil
}

// FindFeatureStore reads a feature group. A missing group is cloud.ErrNotFound.
func (e *Env) FindFeatureStore(ctx context.Context, name string) (*FeatureStore, error) {
	fg, err := cloud.FindFeatureStore(ctx, e.Clients.SageMaker, name)
	if err != nil {
		return nil, err
	}
	return featureStoreFrom(fg), nil
}

// CreateFeatureStore validates s, checks its residency (fail closed: every
// location is known now), creates the feature group with the default tags
// merged in, and waits until it is Created.
//
// The violations are returned for the caller to show (warnings in audit
// mode). When the group was created but did not become ready (CreateFailed,
// a timeout), the returned FeatureStore is not nil: the group exists and the
// caller should record it (and so have it deleted or replaced later).
func (e *Env) CreateFeatureStore(ctx context.Context, s FeatureStoreSpec, wait FeatureStoreWait) (*FeatureStore, []residency.Violation, error) {
	vs, err := e.guardFeatureStore(ctx, s)
	if err != nil {
		return nil, vs, err
	}
	api := e.Clients.SageMaker
	arn, err := cloud.CreateFeatureStore(ctx, api, createFeatureGroupInput(s, e.MergeTags(s.Tags)))
	if err != nil {
		return nil, vs, err
	}
	fg, err := cloud.WaitFeatureStoreCreated(ctx, api, s.Name, wait)
	if err != nil {
		if fg != nil {
			return featureStoreFrom(fg), vs, err
		}
		return &FeatureStore{Spec: s, ARN: arn, Status: "Unknown"}, vs,
			fmt.Errorf("feature group %s was created (%s) but did not become ready; it is recorded so that it is replaced on the next apply: %w", s.Name, arn, err)
	}
	return featureStoreFrom(fg), vs, nil
}

// UpdateFeatureStore changes a feature group from old to new in place:
// feature additions, online store TTL, throughput and tags. A destructive
// change (see PlanFeatureStoreChange) is refused with ErrDestructiveChange:
// the caller replaces the group instead (DeleteFeatureStore, then
// CreateFeatureStore), and only when the user allowed it.
func (e *Env) UpdateFeatureStore(ctx context.Context, old, new FeatureStoreSpec, wait FeatureStoreWait) (*FeatureStore, []residency.Violation, error) {
	vs, err := e.guardFeatureStore(ctx, new)
	if err != nil {
		return nil, vs, err
	}
	plan := PlanFeatureStoreChange(old, new)
	if plan.IsDestructive() {
		return nil, vs, fmt.Errorf("updating feature store %s: %w:\n%s", new.Name, ErrDestructiveChange, plan.DestructiveSummary(new.Name))
	}
	api := e.Clients.SageMaker
	if err := cloud.UpdateFeatureStore(ctx, api, new.Name, featureStoreUpdate(plan, e.MergeTags(new.Tags)), wait); err != nil {
		return nil, vs, err
	}
	fs, err := e.FindFeatureStore(ctx, new.Name)
	if err != nil {
		return nil, vs, fmt.Errorf("reading feature store %s after update: %w", new.Name, err)
	}
	return fs, vs, nil
}

// DeleteFeatureStore deletes a feature group and waits until it is gone. A
// group already gone is not an error.
func (e *Env) DeleteFeatureStore(ctx context.Context, name string, wait FeatureStoreWait) error {
	api := e.Clients.SageMaker
	if err := cloud.DeleteFeatureStore(ctx, api, name); err != nil {
		return err
	}
	return cloud.WaitFeatureStoreDeleted(ctx, api, name, wait)
}
