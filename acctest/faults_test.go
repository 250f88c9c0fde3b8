package acctest

import (
	"context"
	"errors"
	"sync/atomic"
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

// Holds: a held call waits until the test releases it and lands after its
// client gave up; the hold reports its arrival and its answer; a hold until
// the client is gone lets the call go exactly then; ClearRules releases.
func TestFaults_hold(t *testing.T) {
	h := SetupEmulator(t)
	c := ec2Client(h)

	// Held until released; the client gives up meanwhile; the call lands
	// after the release.
	hold := NewHold(t)
	h.Shim.AddRule(FaultRule{Service: "ec2", Action: "RunInstances", Times: 1, Hold: hold})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := runOne(ctx, c, "held"); done <- err }()
	if err := hold.WaitArrived(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the client of a held call had its answer")
	}
	if n := liveInstances(t, c); n != 0 {
		t.Fatalf("a held call landed before its release: %d instances", n)
	}
	if hold.Released() {
		t.Fatal("released before Release")
	}
	hold.Release()
	if err := hold.WaitAnswered(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if n := liveInstances(t, c); n != 1 {
		t.Fatalf("after the release: %d instances, want 1", n)
	}
	// The rule is used up: the next call passes.
	if _, err := runOne(testContext(t), c, "after"); err != nil {
		t.Fatal(err)
	}

	// Held until the client is gone: still held while the client waits,
	// on its way as soon as the client gives up.
	gone := HoldUntilClientGone(t)
	h.Shim.AddRule(FaultRule{Service: "ec2", Action: "RunInstances", Times: 1, Hold: gone})
	ctx, cancel = context.WithCancel(context.Background())
	go func() { _, err := runOne(ctx, c, "gone"); done <- err }()
	if err := gone.WaitArrived(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if n := liveInstances(t, c); n != 2 {
		t.Fatalf("a call held until its client is gone landed while the client waited: %d instances, want 2", n)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the client of a held call had its answer")
	}
	if err := gone.WaitAnswered(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if n := liveInstances(t, c); n != 3 {
		t.Fatalf("after the client gave up: %d instances, want 3", n)
	}

	// ClearRules releases what the rules hold.
	cleared := NewHold(t)
	h.Shim.AddRule(FaultRule{Service: "ec2", Action: "RunInstances", Hold: cleared})
	go func() { _, err := runOne(testContext(t), c, "cleared"); done <- err }()
	if err := cleared.WaitArrived(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	h.Shim.ClearRules()
	if err := <-done; err != nil {
		t.Fatalf("a call released by ClearRules: %v", err)
	}
	if !cleared.Released() {
		t.Fatal("ClearRules left the hold closed")
	}
}

// A served rule holds a call of an operation the shim serves itself (the
// placement group double), only the calls it matches and only Times of
// them; Match may read the shim; ClearRules ends it.
func TestFaults_servedRule(t *testing.T) {
	h := SetupEmulator(t)
	c := ec2Client(h)
	describe := func(ctx context.Context) error {
		_, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{})
		return err
	}
	if err := describe(testContext(t)); err != nil { // before the rule: not held
		t.Fatal(err)
	}
	hold := NewHold(t)
	var before atomic.Int32
	t.Cleanup(h.Shim.AddServedRule(FaultRule{Service: "ec2", Action: "DescribePlacementGroups", Times: 1, Hold: hold,
		Match:  func(*Request) bool { return len(h.Shim.Calls("ec2", "DescribePlacementGroups")) >= 1 },
		Before: func(*Request) { before.Add(1) }}))
	done := make(chan error, 1)
	go func() { done <- describe(testContext(t)) }()
	if err := hold.WaitArrived(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Shim.Calls("ec2", "DescribePlacementGroups")); n != 1 {
		t.Fatalf("%d calls answered while one is held, want 1", n)
	}
	hold.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := hold.WaitAnswered(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := h.Shim.WaitCalls(testContext(t), func(cs []Call) bool { return len(cs) >= 2 }); err != nil {
		t.Fatal(err)
	}
	// Used up: the next call passes untouched.
	if err := describe(testContext(t)); err != nil || before.Load() != 1 || hold.Arrived() != 1 {
		t.Fatalf("after Times: %v, Before ran %d times, %d held", err, before.Load(), hold.Arrived())
	}
	// ClearRules ends a served rule.
	again := NewHold(t)
	t.Cleanup(h.Shim.AddServedRule(FaultRule{Service: "ec2", Action: "DescribePlacementGroups", Hold: again}))
	h.Shim.ClearRules()
	if err := describe(testContext(t)); err != nil || again.Arrived() != 0 {
		t.Fatalf("after ClearRules: %v, %d held", err, again.Arrived())
	}
}
