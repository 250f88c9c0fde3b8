package cloud

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
)

// fakeFeatureStoreAPI answers DescribeFeatureGroup from a script of states,
// one per call (the last repeats), and records the other calls.
type fakeFeatureStoreAPI struct {
	mu        sync.Mutex
	describes []*sagemaker.DescribeFeatureGroupOutput // nil entry: ResourceNotFound
	calls     int
	pages     map[string]*sagemaker.DescribeFeatureGroupOutput // NextToken -> page
	tags      map[string]string
	updates   []*sagemaker.UpdateFeatureGroupInput
	updateErr error
	deleteErr error
	added     []types.Tag
	removed   []string
	creates   int
}

func (f *fakeFeatureStoreAPI) CreateFeatureGroup(_ context.Context, in *sagemaker.CreateFeatureGroupInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateFeatureGroupOutput, error) {
	f.creates++
	return &sagemaker.CreateFeatureGroupOutput{FeatureGroupArn: aws.String("arn:aws:sagemaker:me-central-1:123456789012:feature-group/" + *in.FeatureGroupName)}, nil
}

func (f *fakeFeatureStoreAPI) DescribeFeatureGroup(_ context.Context, in *sagemaker.DescribeFeatureGroupInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeFeatureGroupOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok := aws.ToString(in.NextToken); tok != "" {
		return f.pages[tok], nil
	}
	i := min(f.calls, len(f.describes)-1)
	f.calls++
	d := f.describes[i]
	if d == nil {
		return nil, &types.ResourceNotFound{Message: aws.String("not found")}
	}
	cp := *d
	cp.FeatureDefinitions = append([]types.FeatureDefinition(nil), d.FeatureDefinitions...)
	return &cp, nil
}

func (f *fakeFeatureStoreAPI) UpdateFeatureGroup(_ context.Context, in *sagemaker.UpdateFeatureGroupInput, _ ...func(*sagemaker.Options)) (*sagemaker.UpdateFeatureGroupOutput, error) {
	f.updates = append(f.updates, in)
	return &sagemaker.UpdateFeatureGroupOutput{}, f.updateErr
}

func (f *fakeFeatureStoreAPI) DeleteFeatureGroup(context.Context, *sagemaker.DeleteFeatureGroupInput, ...func(*sagemaker.Options)) (*sagemaker.DeleteFeatureGroupOutput, error) {
	return &sagemaker.DeleteFeatureGroupOutput{}, f.deleteErr
}

func (f *fakeFeatureStoreAPI) ListTags(context.Context, *sagemaker.ListTagsInput, ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
	out := &sagemaker.ListTagsOutput{}
	for k, v := range f.tags {
		out.Tags = append(out.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out, nil
}

func (f *fakeFeatureStoreAPI) AddTags(_ context.Context, in *sagemaker.AddTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error) {
	f.added = append(f.added, in.Tags...)
	return &sagemaker.AddTagsOutput{}, nil
}

func (f *fakeFeatureStoreAPI) DeleteTags(_ context.Context, in *sagemaker.DeleteTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error) {
	f.removed = append(f.removed, in.TagKeys...)
	return &sagemaker.DeleteTagsOutput{}, nil
}

func group(status types.FeatureGroupStatus) *sagemaker.DescribeFeatureGroupOutput {
	return &sagemaker.DescribeFeatureGroupOutput{
		FeatureGroupName:   aws.String("fg"),
		FeatureGroupArn:    aws.String("arn:aws:sagemaker:me-central-1:123456789012:feature-group/fg"),
		FeatureGroupStatus: status,
		FeatureDefinitions: []types.FeatureDefinition{{FeatureName: aws.String("id"), FeatureType: types.FeatureTypeString}},
	}
}

func withFailure(d *sagemaker.DescribeFeatureGroupOutput, reason string) *sagemaker.DescribeFeatureGroupOutput {
	d.FailureReason = aws.String(reason)
	return d
}

func withUpdate(d *sagemaker.DescribeFeatureGroupOutput, st types.LastUpdateStatusValue, reason string) *sagemaker.DescribeFeatureGroupOutput {
	d.LastUpdateStatus = &types.LastUpdateStatus{Status: st}
	if reason != "" {
		d.LastUpdateStatus.FailureReason = aws.String(reason)
	}
	return d
}

var fastWait = WaitOptions{Timeout: 2 * time.Second, Poll: Poll{Interval: time.Millisecond, Max: 5 * time.Millisecond}}

func TestWaitFeatureStoreCreated(t *testing.T) {
	tests := []struct {
		name      string
		script    []*sagemaker.DescribeFeatureGroupOutput
		wait      WaitOptions
		wantErr   string
		wantPolls int
	}{
		{name: "creating then created", script: []*sagemaker.DescribeFeatureGroupOutput{group("Creating"), group("Creating"), group("Created")}, wantPolls: 3},
		{name: "create failed carries the reason", script: []*sagemaker.DescribeFeatureGroupOutput{group("Creating"), withFailure(group("CreateFailed"), "The role cannot write to s3://features")},
			wantErr: "creation failed: The role cannot write to s3://features"},
		{name: "create failed without reason", script: []*sagemaker.DescribeFeatureGroupOutput{group("CreateFailed")}, wantErr: "no reason given"},
		{name: "offline store blocked", script: []*sagemaker.DescribeFeatureGroupOutput{func() *sagemaker.DescribeFeatureGroupOutput {
			d := group("Created")
			d.OfflineStoreStatus = &types.OfflineStoreStatus{Status: types.OfflineStoreStatusValueBlocked, BlockedReason: aws.String("bucket policy denies the role")}
			return d
		}()}, wantErr: "bucket policy denies the role"},
		{name: "timeout says the last state", script: []*sagemaker.DescribeFeatureGroupOutput{group("Creating")},
			wait: WaitOptions{Timeout: 30 * time.Millisecond, Poll: Poll{Interval: time.Millisecond}}, wantErr: "still Creating after"},
		{name: "deleting while creating", script: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting")}, wantErr: "is Deleting while waiting"},
		{name: "vanished", script: []*sagemaker.DescribeFeatureGroupOutput{nil}, wantErr: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeFeatureStoreAPI{describes: tt.script}
			wait := tt.wait
			if wait.Timeout == 0 {
				wait = fastWait
			}
			var seen []string
			wait.Progress = func(state string, _ time.Duration) { seen = append(seen, state) }
			fg, err := WaitFeatureStoreCreated(context.Background(), api, "fg", wait)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fg.FeatureGroupStatus != types.FeatureGroupStatusCreated || api.calls != tt.wantPolls || len(seen) != tt.wantPolls {
				t.Fatalf("status %s after %d polls, progress %v", fg.FeatureGroupStatus, api.calls, seen)
			}
		})
	}
}

func TestWaitFeatureStoreCreatedTimeoutIsDeadline(t *testing.T) {
	api := &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{group("Creating")}}
	_, err := WaitFeatureStoreCreated(context.Background(), api, "fg", WaitOptions{Timeout: 20 * time.Millisecond, Poll: Poll{Interval: time.Millisecond}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitFeatureStoreCreated(ctx, api, "fg", fastWait); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
}

func TestWaitFeatureStoreDeleted(t *testing.T) {
	api := &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting"), group("Deleting"), nil}}
	if err := WaitFeatureStoreDeleted(context.Background(), api, "fg", fastWait); err != nil || api.calls != 3 {
		t.Fatalf("err = %v after %d polls", err, api.calls)
	}
	api = &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting"), withFailure(group("DeleteFailed"), "Glue table is locked")}}
	if err := WaitFeatureStoreDeleted(context.Background(), api, "fg", fastWait); err == nil || !strings.Contains(err.Error(), "deletion failed: Glue table is locked") {
		t.Fatalf("err = %v", err)
	}
	api = &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting")}}
	if err := WaitFeatureStoreDeleted(context.Background(), api, "fg", WaitOptions{Timeout: 20 * time.Millisecond, Poll: Poll{Interval: time.Millisecond}}); err == nil || !strings.Contains(err.Error(), "still Deleting") {
		t.Fatalf("err = %v", err)
	}
}

func TestDeleteFeatureStoreGone(t *testing.T) {
	api := &fakeFeatureStoreAPI{deleteErr: &types.ResourceNotFound{Message: aws.String("gone")}}
	if err := DeleteFeatureStore(context.Background(), api, "fg"); err != nil {
		t.Fatalf("err = %v", err)
	}
	api.deleteErr = errors.New("throttled")
	if err := DeleteFeatureStore(context.Background(), api, "fg"); err == nil || !strings.Contains(err.Error(), "deleting feature group fg: throttled") {
		t.Fatalf("err = %v", err)
	}
}

func TestFindFeatureStore(t *testing.T) {
	first := group("Created")
	first.NextToken = aws.String("p2")
	api := &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{first},
		pages: map[string]*sagemaker.DescribeFeatureGroupOutput{"p2": {FeatureDefinitions: []types.FeatureDefinition{
			{FeatureName: aws.String("score"), FeatureType: types.FeatureTypeFractional},
		}}},
		tags: map[string]string{"team": "risk"},
	}
	fg, err := FindFeatureStore(context.Background(), api, "fg")
	if err != nil {
		t.Fatal(err)
	}
	if len(fg.FeatureDefinitions) != 2 || fg.Tags["team"] != "risk" || fg.NextToken != nil {
		t.Fatalf("group = %+v", fg)
	}
	api = &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{nil}}
	if _, err := FindFeatureStore(context.Background(), api, "fg"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestUpdateFeatureStore(t *testing.T) {
	var adds []FeatureDefinition
	for i := range 250 {
		adds = append(adds, FeatureDefinition{Name: "f" + string(rune('a'+i%26)), Type: "String"})
	}
	api := &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{withUpdate(group("Created"), "InProgress", ""), withUpdate(group("Created"), "Successful", "")},
		tags:      map[string]string{"keep": "1", "drop": "x", "change": "old"},
	}
	err := UpdateFeatureStore(context.Background(), api, "fg", FeatureStoreUpdate{
		Additions:  adds,
		TTL:        &TTLDuration{Unit: "Days", Value: 7},
		Throughput: &ThroughputConfig{Mode: "OnDemand"},
		Tags:       map[string]string{"keep": "1", "change": "new", "add": "2"},
	}, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.updates) != 5 {
		t.Fatalf("%d update calls, want 3 batches of additions, TTL and throughput", len(api.updates))
	}
	for i, n := range []int{100, 100, 50} {
		if len(api.updates[i].FeatureAdditions) != n {
			t.Errorf("batch %d has %d additions, want %d", i, len(api.updates[i].FeatureAdditions), n)
		}
	}
	if api.updates[3].OnlineStoreConfig == nil || api.updates[4].ThroughputConfig == nil {
		t.Errorf("TTL and throughput calls: %+v %+v", api.updates[3], api.updates[4])
	}
	if strings.Join(api.removed, ",") != "drop" || len(api.added) != 2 || *api.added[0].Key != "add" || *api.added[1].Key != "change" {
		t.Errorf("removed %v, added %v", api.removed, api.added)
	}
}

func TestUpdateFeatureStoreFailure(t *testing.T) {
	api := &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{withUpdate(group("Created"), "Failed", "feature limit reached")}}
	err := UpdateFeatureStore(context.Background(), api, "fg", FeatureStoreUpdate{Additions: []FeatureDefinition{{Name: "x"}}}, fastWait)
	if err == nil || !strings.Contains(err.Error(), "update failed: feature limit reached") {
		t.Fatalf("err = %v", err)
	}
	api = &fakeFeatureStoreAPI{updateErr: &types.ResourceNotFound{Message: aws.String("gone")}}
	err = UpdateFeatureStore(context.Background(), api, "fg", FeatureStoreUpdate{TTL: &TTLDuration{}}, fastWait)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestCreateFeatureStoreInUse(t *testing.T) {
	api := &inUseAPI{}
	_, err := CreateFeatureStore(context.Background(), api, FeatureGroupConfig{Name: "fg"})
	if !errors.Is(err, ErrFeatureGroupExists) {
		t.Fatalf("err = %v", err)
	}
}

type inUseAPI struct{ fakeFeatureStoreAPI }

func (*inUseAPI) CreateFeatureGroup(context.Context, *sagemaker.CreateFeatureGroupInput, ...func(*sagemaker.Options)) (*sagemaker.CreateFeatureGroupOutput, error) {
	return nil, &types.ResourceInUse{Message: aws.String("exists")}
}

// An addition whose answer was lost and whose retry was refused (the feature
// exists now) is done, not failed; one that did not land is an error. The
// provider's own tags survive a retag.
func TestUpdateFeatureStoreLanded(t *testing.T) {
	landed := group("Created")
	landed.FeatureDefinitions = append(landed.FeatureDefinitions, types.FeatureDefinition{FeatureName: aws.String("score"), FeatureType: types.FeatureTypeFractional})
	add := FeatureStoreUpdate{
		Additions: []FeatureDefinition{{Name: "score", Type: "Fractional"}},
		Tags:      map[string]string{"team": "risk"}, KeepTags: []string{"mlplatform:creation-token"},
	}
	api := &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{landed},
		updateErr: &smithy.GenericAPIError{Code: "ValidationException", Message: "Feature score already exists"},
		tags:      map[string]string{"mlplatform:creation-token": "t", "old": "x"},
	}
	if err := UpdateFeatureStore(context.Background(), api, "fg", add, fastWait); err != nil {
		t.Fatalf("landed addition: %v", err)
	}
	if strings.Join(api.removed, ",") != "old" {
		t.Errorf("removed tags %v, want only old (the creation token kept)", api.removed)
	}
	api = &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{group("Created")},
		updateErr: &smithy.GenericAPIError{Code: "InternalFailure", Message: "boom"},
	}
	if err := UpdateFeatureStore(context.Background(), api, "fg", add, fastWait); err == nil {
		t.Fatal("an addition that did not land passed")
	}
}

// A delete refused because the group is already being deleted (an earlier
// delete interrupted) is not an error: the wait sees the outcome.
func TestDeleteFeatureStoreAlreadyDeleting(t *testing.T) {
	api := &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting")},
		deleteErr: &types.ResourceInUse{Message: aws.String("being deleted")},
	}
	if err := DeleteFeatureStore(context.Background(), api, "fg"); err != nil {
		t.Fatalf("delete of a group being deleted: %v", err)
	}
	api = &fakeFeatureStoreAPI{
		describes: []*sagemaker.DescribeFeatureGroupOutput{group("Created")},
		deleteErr: &types.ResourceInUse{Message: aws.String("update in progress")},
	}
	if err := DeleteFeatureStore(context.Background(), api, "fg"); err == nil {
		t.Fatal("a refused delete of a Created group passed")
	}
}

func TestCreateFeatureGroupInput(t *testing.T) {
	c := FeatureGroupConfig{
		Name: "customers", RecordIdentifier: "id", EventTime: "t", RoleARN: "arn:aws:iam::123456789012:role/fs",
		Features:   []FeatureDefinition{{Name: "id", Type: "String"}, {Name: "t", Type: "Fractional"}, {Name: "emb", Type: "Fractional", CollectionType: "Vector", VectorDimension: 4}},
		Online:     &OnlineStoreConfig{Enabled: true, StorageType: "InMemory", TTL: &TTLDuration{Unit: "Days", Value: 30}},
		Offline:    &OfflineStoreConfig{S3URI: "s3://b/p", TableFormat: "Glue"},
		Throughput: &ThroughputConfig{Mode: "Provisioned", ReadCapacityUnits: 3, WriteCapacityUnits: 2},
		Tags:       map[string]string{"z": "1", "a": "2"},
	}
	in := createFeatureGroupInput(c)
	if *in.FeatureGroupName != "customers" || len(in.FeatureDefinitions) != 3 || !*in.OnlineStoreConfig.EnableOnlineStore ||
		in.OnlineStoreConfig.StorageType != "InMemory" || *in.OnlineStoreConfig.TtlDuration.Value != 30 ||
		*in.OfflineStoreConfig.S3StorageConfig.S3Uri != "s3://b/p" || in.OfflineStoreConfig.TableFormat != "Glue" ||
		*in.ThroughputConfig.ProvisionedReadCapacityUnits != 3 || *in.Tags[0].Key != "a" || *in.RoleArn != c.RoleARN || in.Description != nil {
		t.Fatalf("input = %+v", in)
	}
	if in.FeatureDefinitions[2].CollectionType != "Vector" || in.FeatureDefinitions[2].CollectionConfig == nil {
		t.Fatalf("vector definition = %+v", in.FeatureDefinitions[2])
	}
	// A disabled online store sends only the switch.
	c.Online = &OnlineStoreConfig{Enabled: false, StorageType: "Standard", KMSKeyID: "k"}
	if in := createFeatureGroupInput(c); in.OnlineStoreConfig.SecurityConfig != nil || in.OnlineStoreConfig.StorageType != "" {
		t.Fatalf("disabled online store = %+v", in.OnlineStoreConfig)
	}
}

func TestFeatureGroupInfo(t *testing.T) {
	d := group("Created")
	d.FeatureDefinitions = append(d.FeatureDefinitions, types.FeatureDefinition{FeatureName: aws.String("emb"), FeatureType: types.FeatureTypeFractional,
		CollectionType: types.CollectionTypeVector, CollectionConfig: &types.CollectionConfigMemberVectorConfig{Value: types.VectorConfig{Dimension: aws.Int32(8)}}})
	d.OnlineStoreConfig = &types.OnlineStoreConfig{EnableOnlineStore: aws.Bool(true), TtlDuration: &types.TtlDuration{Unit: "Hours", Value: aws.Int32(5)}}
	d.OfflineStoreConfig = &types.OfflineStoreConfig{S3StorageConfig: &types.S3StorageConfig{S3Uri: aws.String("s3://b/p"), ResolvedOutputS3Uri: aws.String("s3://b/p/x")},
		DataCatalogConfig: &types.DataCatalogConfig{TableName: aws.String("tbl"), Database: aws.String("db"), Catalog: aws.String("cat")}}
	info := (&FeatureGroup{DescribeFeatureGroupOutput: d, Tags: map[string]string{"a": "b"}}).Info()
	last := info.Features[len(info.Features)-1]
	if info.Status != "Created" || last.VectorDimension != 8 || info.Online.TTL.Value != 5 || info.Online.StorageType != "" ||
		info.Offline.S3URI != "s3://b/p" || info.ResolvedS3URI != "s3://b/p/x" || info.TableName != "tbl" || info.Tags["a"] != "b" {
		t.Fatalf("info = %+v", info)
	}
}
