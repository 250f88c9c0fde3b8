package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// ErrFeatureStoreResidency is wrapped when a feature store write is refused
// because the residency policy (enforce mode) is broken. The violations come
// back beside the error, each on its attribute path.
var ErrFeatureStoreResidency = errors.New("feature store breaks the residency policy")

// FeatureStoreWait bounds and reports a feature store wait.
type FeatureStoreWait = WaitOptions

// Default bounds of the feature store's waits: a wait whose Timeout is 0
// gets these, whichever front end asked.
const (
	FeatureStoreCreateTimeout = 30 * time.Minute
	FeatureStoreUpdateTimeout = 30 * time.Minute
	FeatureStoreDeleteTimeout = 30 * time.Minute
	// FeatureStoreReadSettle is how long a refresh waits for the outcome of
	// a deletion under way.
	FeatureStoreReadSettle = 2 * time.Minute
)

// withDefault is w bounded by d when it names no timeout.
func withDefault(w FeatureStoreWait, d time.Duration) FeatureStoreWait {
	if w.Timeout <= 0 {
		w.Timeout = d
	}
	return w
}

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

// CheckFeatureStore is the plan-time check of a feature store, the same for
// both front ends: the spec is validated, and when it is valid its residency
// is checked (the offline store's bucket and its replication, the KMS keys,
// the role, the required tags over the default tags). Values at the paths in
// unknown are skipped: the create and update check them again, all known,
// before any write. Problems and violations come back for the front end to
// report on their attribute paths; the error says the checks could not run.
func (e *Env) CheckFeatureStore(ctx context.Context, s FeatureStoreSpec, unknown []string) ([]Problem, []residency.Violation, error) {
	if errs := ValidateFeatureStore(s, unknownPaths(unknown)); len(errs) > 0 {
		return errs, nil, nil
	}
	vs, err := e.CheckFeatureStoreResidency(ctx, s, unknown)
	if err != nil {
		return nil, nil, fmt.Errorf("checking residency of feature store %s: %w", s.Name, err)
	}
	return nil, vs, nil
}

// guardFeatureStore validates s and checks its residency, all values known.
// The violations are returned in both modes; in enforce mode they are an
// error too.
func (e *Env) guardFeatureStore(ctx context.Context, s FeatureStoreSpec) ([]residency.Violation, error) {
	if errs := ValidateFeatureStore(s, nil); len(errs) > 0 {
		return nil, &RefusedError{Kind: "feature store", Problems: errs}
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

// FindFeatureStore reads a feature group. A missing group is ErrNotFound.
func (e *Env) FindFeatureStore(ctx context.Context, name string) (*FeatureStore, error) {
	fg, err := cloud.FindFeatureStore(ctx, e.Clients.SageMaker, name)
	if err != nil {
		return nil, err
	}
	return featureStoreFrom(fg), nil
}

// FeatureStoreTokenTag is the tag in which CreateFeatureStore writes a fresh
// random token with every group it creates: a group that carries the token
// of this create is provably the one this create made (its answer lost, or
// the call retried), and is adopted; any other group of the name is refused.
const FeatureStoreTokenTag = FeatureStoreTagPrefix + "creation-token"

// ErrFeatureStoreExists is wrapped when a feature group of the name exists
// that this resource cannot prove it created.
var ErrFeatureStoreExists = errors.New("a feature group of that name already exists")

// fsRecordTimeout bounds the lookups that record what exists after a failure:
// they run on a fresh context, since the caller's may be cancelled or past
// its deadline.
const fsRecordTimeout = 20 * time.Second

// findAfterFailure looks the group up on a fresh, short, bounded context
// (ctx's values kept, its cancellation not).
func (e *Env) findAfterFailure(ctx context.Context, name string) (*FeatureStore, error) {
	ctx, cancel := recordContext(ctx, fsRecordTimeout)
	defer cancel()
	return e.FindFeatureStore(ctx, name)
}

// CreateFeatureStore validates s, checks its residency (fail closed: every
// location is known now), creates the feature group with the default tags
// and a fresh creation token merged in, and waits until it is Created.
//
// The violations are returned for the caller to show (warnings in audit
// mode). Whenever the group exists after a failure (the create's answer was
// lost, the wait was interrupted, timed out or saw CreateFailed), the
// returned FeatureStore is not nil: the caller records it, so that it is
// never orphaned; the next apply finishes it (UpdateFeatureStore waits for a
// group still being created) rather than replacing it.
//
// A group of the name that exists already is adopted only when it carries
// this create's token (the call succeeded but its answer was lost, and the
// SDK's retry was told the name is taken); any other is refused with
// ErrFeatureStoreExists.
func (e *Env) CreateFeatureStore(ctx context.Context, s FeatureStoreSpec, wait FeatureStoreWait) (*FeatureStore, []residency.Violation, error) {
	wait = e.withPolling(withDefault(wait, FeatureStoreCreateTimeout))
	vs, err := e.guardFeatureStore(ctx, s)
	if err != nil {
		return nil, vs, err
	}
	token := NewCreationToken()
	tags := e.MergeTags(s.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[FeatureStoreTokenTag] = token
	api := e.Clients.SageMaker
	arn, err := cloud.CreateFeatureStore(ctx, api, featureGroupConfig(s, tags))
	if err != nil {
		fs, ferr := e.findAfterFailure(ctx, s.Name)
		if errors.Is(ferr, cloud.ErrNotFound) && !errors.Is(err, cloud.ErrFeatureGroupExists) {
			// The call may still land (a request in flight when the client
			// gave up): look again a few times before saying nothing exists.
			w := landingRecheck().Start()
			for range 2 {
				if w.Next(context.WithoutCancel(ctx)) != nil {
					break
				}
				if fs, ferr = e.findAfterFailure(ctx, s.Name); !errors.Is(ferr, cloud.ErrNotFound) {
					break
				}
			}
		}
		ours := ferr == nil && fs.CreationToken == token
		switch {
		case errors.Is(err, cloud.ErrFeatureGroupExists) && !ours:
			if ferr == nil {
				return nil, vs, fmt.Errorf("creating feature store %s: %w (%s, %s) and this resource did not create it (its %s tag does not match): "+
					"import it to manage it here, or choose another name", s.Name, ErrFeatureStoreExists, fs.ARN, fs.Status, FeatureStoreTokenTag)
			}
			return nil, vs, fmt.Errorf("creating feature store %s: %w; it could not be read to check who created it (%w): import it to manage it here, or choose another name", s.Name, ErrFeatureStoreExists, ferr)
		case ours && ctx.Err() == nil:
			// The create went through; only its answer was lost. Go on.
			arn = fs.ARN
		case ours:
			return fs, vs, fmt.Errorf("feature group %s was created (%s), but the create was interrupted before it was ready: %w", s.Name, fs.ARN, err)
		case errors.Is(ferr, cloud.ErrNotFound):
			return nil, vs, fmt.Errorf("%w; feature group %s was not found afterwards. Should it appear later, it carries the tag %s = %s: import it", err, s.Name, FeatureStoreTokenTag, token)
		default:
			return nil, vs, fmt.Errorf("%w; whether feature group %s was created could not be checked (%w). Should it exist, it carries the tag %s = %s: import it", err, s.Name, ferr, FeatureStoreTokenTag, token)
		}
	}
	fg, err := cloud.WaitFeatureStoreCreated(ctx, api, s.Name, wait.cloud())
	if err != nil {
		fs := (*FeatureStore)(nil)
		if fg != nil && ctx.Err() == nil {
			fs = featureStoreFrom(fg)
		} else if found, ferr := e.findAfterFailure(ctx, s.Name); ferr == nil {
			fs = found
		} else {
			fs = &FeatureStore{Spec: s, ARN: arn, Status: "Unknown", CreationToken: token}
		}
		return fs, vs, fmt.Errorf("feature group %s was created (%s) but was not seen ready: %w", s.Name, arn, err)
	}
	return featureStoreFrom(fg), vs, nil
}

// ReadFeatureStore reads a feature group for a refresh. A group being deleted
// is waited for, at most settle: gone is ErrNotFound; a failed
// deletion (DeleteFailed), or one still under way when settle runs out, is
// returned as it is, so that the group stays recorded and is never orphaned.
func (e *Env) ReadFeatureStore(ctx context.Context, name string, settle time.Duration) (*FeatureStore, error) {
	if settle <= 0 {
		settle = FeatureStoreReadSettle
	}
	fs, err := e.FindFeatureStore(ctx, name)
	if err != nil || fs.Status != FeatureStoreDeleting {
		return fs, err
	}
	err = cloud.WaitFeatureStoreDeleted(ctx, e.Clients.SageMaker, name, cloud.WaitOptions{Timeout: settle, Poll: e.polling().Settle})
	if err == nil {
		return nil, fmt.Errorf("feature group %s was deleted: %w", name, cloud.ErrNotFound)
	}
	if ctx.Err() != nil {
		return nil, err
	}
	// Deletion failed, or is still under way: keep what is there.
	return e.FindFeatureStore(ctx, name)
}

// UpdateFeatureStore changes a feature group from old to new in place:
// feature additions, online store TTL, throughput and tags. A destructive
// change (see featureStoreChange) is refused with ErrDestructiveChange:
// the caller replaces the group instead (DeleteFeatureStore, then
// CreateFeatureStore), and only when the user allowed it.
//
// It first finishes what an earlier apply left: a group still being created
// is waited for, and an update still in progress too. Additions are what
// the group lacks now, so an update interrupted part way (or whose answer
// was lost) completes on the next apply instead of failing.
func (e *Env) UpdateFeatureStore(ctx context.Context, old, new FeatureStoreSpec, wait FeatureStoreWait) (*FeatureStore, []residency.Violation, error) {
	wait = e.withPolling(withDefault(wait, FeatureStoreUpdateTimeout))
	vs, err := e.guardFeatureStore(ctx, new)
	if err != nil {
		return nil, vs, err
	}
	plan := featureStoreChange(old, new)
	if plan.IsDestructive() {
		return nil, vs, fmt.Errorf("updating feature store %s: %w:\n%s", new.Name, ErrDestructiveChange, plan.DestructiveSummary(new.Name))
	}
	api := e.Clients.SageMaker
	cur, err := e.FindFeatureStore(ctx, new.Name)
	if err != nil {
		return nil, vs, fmt.Errorf("reading feature store %s before update: %w", new.Name, err)
	}
	if p := FeatureStoreRepair(cur.Status, cur.FailureReason, false); p.Blocked != "" {
		return nil, vs, fmt.Errorf("updating feature store %s: %s", new.Name, p.Blocked)
	}
	if cur.Status == FeatureStoreCreating {
		if _, err := cloud.WaitFeatureStoreCreated(ctx, api, new.Name, wait.cloud()); err != nil {
			return nil, vs, err
		}
	}
	if cur.LastUpdateStatus == "InProgress" {
		if _, err := cloud.WaitFeatureStoreUpdated(ctx, api, new.Name, wait.cloud()); err != nil {
			return nil, vs, err
		}
		if cur, err = e.FindFeatureStore(ctx, new.Name); err != nil {
			return nil, vs, fmt.Errorf("reading feature store %s before update: %w", new.Name, err)
		}
	}
	plan.Additions = slices.DeleteFunc(plan.Additions, func(f Feature) bool { _, has := cur.Spec.Feature(f.Name); return has })
	u := featureStoreUpdate(plan, e.MergeTags(new.Tags))
	if u.Tags == nil {
		u.Tags = map[string]string{}
	}
	u.KeepTags = []string{FeatureStoreTokenTag}
	if err := cloud.UpdateFeatureStore(ctx, api, new.Name, u, wait.cloud()); err != nil {
		return nil, vs, err
	}
	fs, err := e.FindFeatureStore(ctx, new.Name)
	if err != nil {
		return nil, vs, fmt.Errorf("reading feature store %s after update: %w", new.Name, err)
	}
	return fs, vs, nil
}

// DeleteFeatureStore deletes a feature group and waits until it is gone. A
// group already gone is not an error, nor is one already being deleted (an
// earlier delete interrupted): its deletion is waited for.
func (e *Env) DeleteFeatureStore(ctx context.Context, name string, wait FeatureStoreWait) error {
	wait = e.withPolling(withDefault(wait, FeatureStoreDeleteTimeout))
	api := e.Clients.SageMaker
	if err := cloud.DeleteFeatureStore(ctx, api, name); err != nil {
		return err
	}
	return cloud.WaitFeatureStoreDeleted(ctx, api, name, wait.cloud())
}
