package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
)

// FeatureStoreAPI is the part of the SageMaker API the feature store verbs
// use. SageMakerClient (the handle on *sagemaker.Client) implements it.
type FeatureStoreAPI interface {
	CreateFeatureGroup(ctx context.Context, in *sagemaker.CreateFeatureGroupInput, opts ...func(*sagemaker.Options)) (*sagemaker.CreateFeatureGroupOutput, error)
	DescribeFeatureGroup(ctx context.Context, in *sagemaker.DescribeFeatureGroupInput, opts ...func(*sagemaker.Options)) (*sagemaker.DescribeFeatureGroupOutput, error)
	UpdateFeatureGroup(ctx context.Context, in *sagemaker.UpdateFeatureGroupInput, opts ...func(*sagemaker.Options)) (*sagemaker.UpdateFeatureGroupOutput, error)
	DeleteFeatureGroup(ctx context.Context, in *sagemaker.DeleteFeatureGroupInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteFeatureGroupOutput, error)
	ListTags(ctx context.Context, in *sagemaker.ListTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error)
	AddTags(ctx context.Context, in *sagemaker.AddTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error)
	DeleteTags(ctx context.Context, in *sagemaker.DeleteTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error)
}

// FeatureGroup is a feature group as DescribeFeatureGroup and ListTags give
// it: every page of feature definitions, and the tags.
type FeatureGroup struct {
	*sagemaker.DescribeFeatureGroupOutput
	Tags map[string]string
}

// FeatureStoreUpdate is what UpdateFeatureStore changes in place.
type FeatureStoreUpdate struct {
	Additions  []FeatureDefinition // sent in batches of at most 100
	TTL        *TTLDuration
	Throughput *ThroughputConfig
	// Tags, when not nil, is the complete set of tags the group must carry,
	// except the keys in KeepTags, which are never removed.
	Tags     map[string]string
	KeepTags []string
}

// ErrFeatureGroupExists is wrapped by CreateFeatureStore when a feature group
// of that name exists already (SageMaker's ResourceInUse).
var ErrFeatureGroupExists = errors.New("feature group already exists")

// WaitOptions bound a SageMaker wait (feature groups, endpoints) and
// report its progress.
type WaitOptions struct {
	Timeout time.Duration // 0: no bound beyond ctx
	// Poll is how often the state is read; zero fields take
	// DefaultPolling().SageMaker.
	Poll Poll
	// Progress, when set, is called after each poll with the state seen.
	Progress func(state string, elapsed time.Duration)
}

const fsMaxFeatureAdditions = 100

// isNotFound reports whether err is SageMaker's ResourceNotFound.
func isFeatureStoreNotFound(err error) bool {
	var nf *types.ResourceNotFound
	if errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "ResourceNotFound" || ae.ErrorCode() == "ResourceNotFoundException")
}

// isFeatureStoreInUse reports whether err is SageMaker's ResourceInUse: the
// name is taken, or the group is busy (being created, updated or deleted).
func isFeatureStoreInUse(err error) bool {
	var inUse *types.ResourceInUse
	if errors.As(err, &inUse) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "ResourceInUse" || ae.ErrorCode() == "ResourceInUseException")
}

// FindFeatureStore describes the feature group name (all pages of its
// feature definitions) and lists its tags. A missing group is ErrNotFound.
func FindFeatureStore(ctx context.Context, api FeatureStoreAPI, name string) (*FeatureGroup, error) {
	out, err := api.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String(name)})
	if err != nil {
		if isFeatureStoreNotFound(err) {
			return nil, fmt.Errorf("feature group %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing feature group %s: %w", name, err)
	}
	for tok := aws.ToString(out.NextToken); tok != ""; {
		page, err := api.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String(name), NextToken: aws.String(tok)})
		if err != nil {
			if isFeatureStoreNotFound(err) {
				return nil, fmt.Errorf("feature group %s: %w", name, ErrNotFound)
			}
			return nil, fmt.Errorf("describing feature group %s: %w", name, err)
		}
		out.FeatureDefinitions = append(out.FeatureDefinitions, page.FeatureDefinitions...)
		if next := aws.ToString(page.NextToken); next != tok {
			tok = next
		} else {
			break
		}
	}
	out.NextToken = nil
	fg := &FeatureGroup{DescribeFeatureGroupOutput: out, Tags: map[string]string{}}
	arn := aws.ToString(out.FeatureGroupArn)
	if arn == "" {
		return fg, nil
	}
	var tok *string
	for {
		page, err := api.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: aws.String(arn), NextToken: tok})
		if err != nil {
			if isFeatureStoreNotFound(err) {
				return nil, fmt.Errorf("feature group %s: %w", name, ErrNotFound)
			}
			return nil, fmt.Errorf("listing tags of feature group %s: %w", name, err)
		}
		for _, t := range page.Tags {
			fg.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	return fg, nil
}

// CreateFeatureStore starts creating a feature group and returns its ARN.
// The group is Creating until WaitFeatureStoreCreated sees it Created.
func CreateFeatureStore(ctx context.Context, api FeatureStoreAPI, c FeatureGroupConfig) (string, error) {
	in := createFeatureGroupInput(c)
	out, err := api.CreateFeatureGroup(ctx, in)
	if err != nil {
		if isFeatureStoreInUse(err) {
			return "", fmt.Errorf("creating feature group %s: %w: %w", aws.ToString(in.FeatureGroupName), ErrFeatureGroupExists, err)
		}
		return "", fmt.Errorf("creating feature group %s: %w", aws.ToString(in.FeatureGroupName), err)
	}
	return aws.ToString(out.FeatureGroupArn), nil
}

// UpdateFeatureStore makes the in-place changes, one UpdateFeatureGroup call
// at a time (SageMaker refuses a second update while one is in progress):
// feature additions in batches of 100, then the TTL, then the throughput,
// waiting for each to finish; then the tags.
func UpdateFeatureStore(ctx context.Context, api FeatureStoreAPI, name string, u FeatureStoreUpdate, wait WaitOptions) error {
	var calls []*sagemaker.UpdateFeatureGroupInput
	additions := sdkFeatureDefinitions(u.Additions)
	for i := 0; i < len(additions); i += fsMaxFeatureAdditions {
		end := min(i+fsMaxFeatureAdditions, len(additions))
		calls = append(calls, &sagemaker.UpdateFeatureGroupInput{FeatureGroupName: aws.String(name), FeatureAdditions: additions[i:end]})
	}
	if u.TTL != nil {
		calls = append(calls, &sagemaker.UpdateFeatureGroupInput{FeatureGroupName: aws.String(name), OnlineStoreConfig: &types.OnlineStoreConfigUpdate{TtlDuration: sdkTTL(u.TTL)}})
	}
	if u.Throughput != nil {
		calls = append(calls, &sagemaker.UpdateFeatureGroupInput{FeatureGroupName: aws.String(name), ThroughputConfig: sdkThroughputUpdate(u.Throughput)})
	}
	for _, in := range calls {
		if _, err := api.UpdateFeatureGroup(ctx, in); err != nil {
			if isFeatureStoreNotFound(err) {
				return fmt.Errorf("updating feature group %s: %w", name, ErrNotFound)
			}
			// A call whose answer was lost may have been applied, and the
			// SDK's retry then fails (update in progress, feature exists):
			// the change is done when the group shows it.
			if ctx.Err() != nil || !updateLanded(ctx, api, name, in) {
				return fmt.Errorf("updating feature group %s: %w", name, err)
			}
		}
		if _, err := WaitFeatureStoreUpdated(ctx, api, name, wait); err != nil {
			return err
		}
	}
	if u.Tags != nil {
		return setFeatureStoreTags(ctx, api, name, u.Tags, u.KeepTags)
	}
	return nil
}

// updateLanded reports whether the group already shows the change of in.
func updateLanded(ctx context.Context, api FeatureStoreAPI, name string, in *sagemaker.UpdateFeatureGroupInput) bool {
	fg, err := FindFeatureStore(ctx, api, name)
	if err != nil {
		return false
	}
	have := map[string]bool{}
	for _, f := range fg.FeatureDefinitions {
		have[strings.ToLower(aws.ToString(f.FeatureName))] = true
	}
	for _, f := range in.FeatureAdditions {
		if !have[strings.ToLower(aws.ToString(f.FeatureName))] {
			return false
		}
	}
	if o := in.OnlineStoreConfig; o != nil && o.TtlDuration != nil {
		c := fg.OnlineStoreConfig
		if c == nil || c.TtlDuration == nil || c.TtlDuration.Unit != o.TtlDuration.Unit || aws.ToInt32(c.TtlDuration.Value) != aws.ToInt32(o.TtlDuration.Value) {
			return false
		}
	}
	if t := in.ThroughputConfig; t != nil {
		c := fg.ThroughputConfig
		if c == nil || c.ThroughputMode != t.ThroughputMode ||
			t.ProvisionedReadCapacityUnits != nil && aws.ToInt32(c.ProvisionedReadCapacityUnits) != aws.ToInt32(t.ProvisionedReadCapacityUnits) ||
			t.ProvisionedWriteCapacityUnits != nil && aws.ToInt32(c.ProvisionedWriteCapacityUnits) != aws.ToInt32(t.ProvisionedWriteCapacityUnits) {
			return false
		}
	}
	return true
}

func setFeatureStoreTags(ctx context.Context, api FeatureStoreAPI, name string, want map[string]string, keep []string) error {
	fg, err := FindFeatureStore(ctx, api, name)
	if err != nil {
		return err
	}
	arn := aws.String(aws.ToString(fg.FeatureGroupArn))
	var remove []string
	for k := range fg.Tags {
		if _, wanted := want[k]; !wanted && !slices.Contains(keep, k) {
			remove = append(remove, k)
		}
	}
	sort.Strings(remove)
	if len(remove) > 0 {
		if _, err := api.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: arn, TagKeys: remove}); err != nil {
			return fmt.Errorf("removing tags of feature group %s: %w", name, err)
		}
	}
	var add []types.Tag
	for _, k := range sortedTagKeys(want) {
		if v, ok := fg.Tags[k]; !ok || v != want[k] {
			add = append(add, types.Tag{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	if len(add) > 0 {
		if _, err := api.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: arn, Tags: add}); err != nil {
			return fmt.Errorf("tagging feature group %s: %w", name, err)
		}
	}
	return nil
}

// DeleteFeatureStore starts deleting a feature group. A group already gone, or
// already being deleted (an earlier delete interrupted, or its answer lost),
// is not an error: the wait that follows sees the outcome.
func DeleteFeatureStore(ctx context.Context, api FeatureStoreAPI, name string) error {
	if _, err := api.DeleteFeatureGroup(ctx, &sagemaker.DeleteFeatureGroupInput{FeatureGroupName: aws.String(name)}); err != nil {
		if isFeatureStoreNotFound(err) {
			return nil
		}
		if isFeatureStoreInUse(err) && ctx.Err() == nil {
			fg, ferr := FindFeatureStore(ctx, api, name)
			if errors.Is(ferr, ErrNotFound) || ferr == nil && fg.FeatureGroupStatus == types.FeatureGroupStatusDeleting {
				return nil
			}
		}
		return fmt.Errorf("deleting feature group %s: %w", name, err)
	}
	return nil
}

// WaitFeatureStoreCreated polls until the group is Created. CreateFailed is
// an error carrying SageMaker's failure reason, as is an offline store that
// is Blocked.
func WaitFeatureStoreCreated(ctx context.Context, api FeatureStoreAPI, name string, opts WaitOptions) (*FeatureGroup, error) {
	var fg *FeatureGroup
	err := pollStatus(ctx, opts, "creation of feature group "+name, func(ctx context.Context) (string, bool, error) {
		var err error
		fg, err = FindFeatureStore(ctx, api, name)
		if err != nil {
			return "", false, err
		}
		st := fg.FeatureGroupStatus
		switch st {
		case types.FeatureGroupStatusCreated:
			if s := fg.OfflineStoreStatus; s != nil && s.Status == types.OfflineStoreStatusValueBlocked {
				return string(st), true, fmt.Errorf("feature group %s was created but its offline store is blocked: %s", name, failureReason(aws.ToString(s.BlockedReason)))
			}
			return string(st), true, nil
		case types.FeatureGroupStatusCreateFailed:
			return string(st), true, fmt.Errorf("feature group %s: creation failed: %s", name, failureReason(aws.ToString(fg.FailureReason)))
		case types.FeatureGroupStatusCreating, "":
			return string(st), false, nil
		default:
			return string(st), true, fmt.Errorf("feature group %s is %s while waiting for it to be created: %s", name, st, failureReason(aws.ToString(fg.FailureReason)))
		}
	})
	return fg, err
}

// WaitFeatureStoreUpdated polls until the last update is no longer in
// progress. A failed update is an error carrying SageMaker's reason.
func WaitFeatureStoreUpdated(ctx context.Context, api FeatureStoreAPI, name string, opts WaitOptions) (*FeatureGroup, error) {
	var fg *FeatureGroup
	err := pollStatus(ctx, opts, "update of feature group "+name, func(ctx context.Context) (string, bool, error) {
		var err error
		fg, err = FindFeatureStore(ctx, api, name)
		if err != nil {
			return "", false, err
		}
		lu := fg.LastUpdateStatus
		if lu == nil {
			return "Successful", true, nil
		}
		switch lu.Status {
		case types.LastUpdateStatusValueInProgress:
			return string(lu.Status), false, nil
		case types.LastUpdateStatusValueFailed:
			return string(lu.Status), true, fmt.Errorf("feature group %s: update failed: %s", name, failureReason(aws.ToString(lu.FailureReason)))
		default:
			return string(lu.Status), true, nil
		}
	})
	return fg, err
}

// WaitFeatureStoreDeleted polls until the group is gone. DeleteFailed is an
// error carrying SageMaker's failure reason.
func WaitFeatureStoreDeleted(ctx context.Context, api FeatureStoreAPI, name string, opts WaitOptions) error {
	return pollStatus(ctx, opts, "deletion of feature group "+name, func(ctx context.Context) (string, bool, error) {
		fg, err := FindFeatureStore(ctx, api, name)
		if errors.Is(err, ErrNotFound) {
			return "Deleted", true, nil
		}
		if err != nil {
			return "", false, err
		}
		switch st := fg.FeatureGroupStatus; st {
		case types.FeatureGroupStatusDeleteFailed:
			return string(st), true, fmt.Errorf("feature group %s: deletion failed: %s", name, failureReason(aws.ToString(fg.FailureReason)))
		default:
			return string(st), false, nil
		}
	})
}

// pollStatus calls check at once, then after every interval of opts.Poll,
// until it says done, the timeout passes or ctx ends. check returns the
// state seen, whether to stop, and the outcome when stopping (an error
// while not done ends the wait too).
func pollStatus(ctx context.Context, opts WaitOptions, what string, check func(context.Context) (string, bool, error)) error {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	start := time.Now()
	last := "in an unknown state"
	err := opts.Poll.Or(DefaultPolling().SageMaker).Until(ctx, func(ctx context.Context) (bool, error) {
		state, done, err := check(ctx)
		if state != "" {
			last = state
		}
		if opts.Progress != nil && state != "" {
			opts.Progress(state, time.Since(start))
		}
		return done, err
	})
	if err != nil && ctx.Err() != nil {
		return fsWaitTimeout(ctx, what, last, time.Since(start), opts.Timeout)
	}
	return err
}

func fsWaitTimeout(ctx context.Context, what, last string, elapsed, limit time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && limit > 0 {
		return fmt.Errorf("waiting for %s: still %s after %s (timeout %s): %w", what, last, elapsed.Round(time.Second), limit, ctx.Err())
	}
	return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
}

func failureReason(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

func sortedTagKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
