package acctest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

func liveInstances(t *testing.T, c *ec2.Client) int {
	t.Helper()
	out, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range out.Reservations {
		n += len(r.Instances)
	}
	return n
}

func runOne(ctx context.Context, c *ec2.Client, token string) (*ec2.RunInstancesOutput, error) {
	return c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-12c6146b"), InstanceType: "g5.xlarge",
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String(token)})
}

// The fault layer: a lost answer reaches moto, a delayed call reaches it
// after the client gave up, and token replay makes a retry idempotent.
func TestFaults_lostDelayReplay(t *testing.T) {
	h := SetupEmulator(t)
	c := ec2Client(h)

	// Lost answer: the client sees a 500, moto launched.
	h.Shim.LoseResponses("ec2", "RunInstances", 1)
	_, err := runOne(testContext(t), c, "a")
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InternalError" {
		t.Fatalf("lost answer: %v", err)
	}
	if n := liveInstances(t, c); n != 1 {
		t.Fatalf("after a lost answer: %d instances, want 1", n)
	}

	// Delay: the client gives up, moto still launches.
	h.Shim.Delay("ec2", "RunInstances", 1500*time.Millisecond, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := runOne(ctx, c, "b"); err == nil {
		t.Fatal("a delayed call beat the client's deadline")
	}
	deadline := time.Now().Add(10 * time.Second)
	for liveInstances(t, c) != 2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if n := liveInstances(t, c); n != 2 {
		t.Fatalf("after a delayed call: %d instances, want 2", n)
	}

	// Without replay moto launches again for the same token (it ignores
	// tokens); with it, the first answer comes back.
	h.Shim.ReplayClientTokens()
	h.Shim.LoseResponses("ec2", "RunInstances", 1)
	if _, err := runOne(testContext(t), c, "c"); err == nil {
		t.Fatal("lost answer not injected")
	}
	out, err := runOne(testContext(t), c, "c")
	if err != nil {
		t.Fatal(err)
	}
	again, err := runOne(testContext(t), c, "c")
	if err != nil || aws.ToString(again.Instances[0].InstanceId) != aws.ToString(out.Instances[0].InstanceId) {
		t.Fatalf("replay: %v, %v", again, err)
	}
	if n := liveInstances(t, c); n != 3 {
		t.Fatalf("after 3 calls with one token: %d instances, want 3 (one new)", n)
	}

	// Hooks run on arrival, for calls the shim serves itself too.
	seen := 0
	h.Shim.OnCall("ec2", "DescribePlacementGroups", func(*Request) { seen++ })
	_, _ = c.DescribePlacementGroups(testContext(t), &ec2.DescribePlacementGroupsInput{})
	if seen != 1 {
		t.Errorf("hook ran %d times, want 1", seen)
	}
	h.Shim.ClearRules()
	_, _ = c.DescribePlacementGroups(testContext(t), &ec2.DescribePlacementGroupsInput{})
	if seen != 1 {
		t.Errorf("hook ran after ClearRules")
	}
}
