package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// The Pulumi front end under the same faults as mlplatform_feature_store:
// the behaviour is the core's, these check that the front end passes it on.

// A TTL that does not fit SageMaker's 32-bit integer fails Check on its
// property. Before, it was sent truncated.
func TestFeatureStore_ttlOutOfRange(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))
	in := featureStoreInputs("uae-feature-store", baseFeatures...)
	in = in.Set("onlineStore", property.New(property.NewMap(map[string]property.Value{
		"enabled": property.New(true),
		"ttl":     property.New(property.NewMap(map[string]property.Value{"unit": property.New("Days"), "value": property.New(4294967297.0)})),
	})))
	check, err := s.Check(p.CheckRequest{Urn: urn("FeatureStore", "customers"), Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Failures) != 1 || check.Failures[0].Property != "onlineStore.ttl.value" || !strings.Contains(check.Failures[0].Reason, "4294967297") {
		t.Fatalf("failures = %+v, want one on onlineStore.ttl.value", check.Failures)
	}
}

// A create whose answer is lost is adopted (it carries this create's token);
// a group of the name made elsewhere fails preview with "import it".
func TestFeatureStore_createLostResponseAndForeign(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("FeatureStore", "customers")
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: featureStoreInputs("uae-feature-store", baseFeatures...)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "CreateFeatureGroup", LoseResponse: true, Times: 1}))
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create with its answer lost: %v", err)
	}
	if got := created.Properties.Get("status").AsString(); got != "Created" {
		t.Fatalf("status %q", got)
	}
	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.CreateFeatureGroup(ctx, &sagemaker.CreateFeatureGroupInput{
		FeatureGroupName: aws.String("customers"), RecordIdentifierFeatureName: aws.String("id"), EventTimeFeatureName: aws.String("ts"),
		FeatureDefinitions: []smtypes.FeatureDefinition{
			{FeatureName: aws.String("id"), FeatureType: smtypes.FeatureTypeString},
			{FeatureName: aws.String("ts"), FeatureType: smtypes.FeatureTypeFractional},
		},
		OnlineStoreConfig: &smtypes.OnlineStoreConfig{EnableOnlineStore: aws.Bool(true)},
	}); err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()
	_, err = s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), "import") {
		t.Fatalf("preview over another group of the name: err = %v, want already exists: import it", err)
	}
	assertNoWrites(t, h)
}

// CreateFailed fails the diff saying what to do, and is replaced only with
// allowDestructiveChanges; DeleteFailed is kept on refresh and reported.
func TestFeatureStore_unhealthyStatus(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("FeatureStore", "customers")
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: featureStoreInputs("uae-feature-store", baseFeatures...)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		statuses []string
		want     string
	}{
		{[]string{"CreateFailed"}, "allowDestructiveChanges = true"},
		{[]string{"Deleting", "DeleteFailed"}, "deletion failed"},
	} {
		remove := acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "DescribeFeatureGroup", Statuses: tc.statuses, FailureReason: "injected"})
		read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
		if err != nil || read.ID != "customers" {
			t.Fatalf("%v: refresh dropped the group (id %q, %v)", tc.statuses, read.ID, err)
		}
		last := tc.statuses[len(tc.statuses)-1]
		if got := read.Properties.Get("status").AsString(); got != last {
			t.Fatalf("status after refresh %q, want %q", got, last)
		}
		_, err = s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check.Inputs})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("%s: diff err = %v, want %q and SageMaker's failure reason", last, err, tc.want)
		}
		if last == "CreateFailed" {
			diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs,
				Inputs: check.Inputs.Set("allowDestructiveChanges", property.New(true))})
			if err != nil || !diff.DeleteBeforeReplace || diff.DetailedDiff["name"].Kind != p.UpdateReplace {
				t.Fatalf("CreateFailed with allowDestructiveChanges: %v %+v, want a replacement", err, diff)
			}
		}
		remove()
	}
	// A group read back still Creating (an update after an interrupted
	// create) is finished in place.
	remove := acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "DescribeFeatureGroup", Times: 2, Statuses: []string{"Creating"}})
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil || read.Properties.Get("status").AsString() != "Creating" {
		t.Fatalf("read: %v %v", err, read.Properties.Get("status"))
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check.Inputs})
	if err != nil || !diff.HasChanges || diff.DeleteBeforeReplace {
		t.Fatalf("diff of a group still Creating: %v %+v, want an in-place update", err, diff)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check.Inputs})
	if err != nil || updated.Properties.Get("status").AsString() != "Created" {
		t.Fatalf("update finishing the group: %v %v", err, updated.Properties.Get("status"))
	}
	remove()

	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Shim.Calls("sagemaker", "DeleteFeatureGroup")); n != 1 {
		t.Fatalf("%d deletes, want 1", n)
	}
}
