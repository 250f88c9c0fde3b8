package acctest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// TestLifecycleDouble_hooksOfCreate: a group created with a launch hook
// in its LifecycleHookSpecificationList has the hook at once, and its
// first instance waits in Pending:Wait even for a DescribeAutoScalingGroups
// sent while the create is being served (moto alone ignores the list, and
// an instance first listed without a hook would never wait). The describes
// raced against each create exercise that window; they cannot force it.
// CONTINUE then puts the instance InService.
func TestLifecycleDouble_hooksOfCreate(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	d, remove := RegisterAutoScalingLifecycle(h.Shim)
	t.Cleanup(remove)
	c, err := h.Clients(ctx, Region)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("images: %v", err)
	}
	lt, err := c.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("hooked"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeC7iLarge},
	})
	if err != nil {
		t.Fatal(err)
	}
	subnets, err := c.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("subnets: %v", err)
	}
	create := func(name string) {
		t.Helper()
		_, err := c.AutoScaling.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(0), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(1),
			VPCZoneIdentifier: subnets.Subnets[0].SubnetId,
			LaunchTemplate:    &astypes.LaunchTemplateSpecification{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			LifecycleHookSpecificationList: []astypes.LifecycleHookSpecification{{
				LifecycleHookName: aws.String("gate"), LifecycleTransition: aws.String("autoscaling:EC2_INSTANCE_LAUNCHING"),
				HeartbeatTimeout: aws.Int32(300), DefaultResult: aws.String("ABANDON"),
			}},
		})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	states := func(name string) (map[string]string, error) {
		out, err := c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for _, g := range out.AutoScalingGroups {
			for _, in := range g.Instances {
				m[aws.ToString(in.InstanceId)] = string(in.LifecycleState)
			}
		}
		return m, nil
	}
	waiting := func(name string) string {
		t.Helper()
		s, err := states(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 {
			t.Fatalf("instances of %s: %v, want one", name, s)
		}
		for id, st := range s {
			if st != "Pending:Wait" {
				t.Fatalf("instance %s of %s is %s, want Pending:Wait", id, name, st)
			}
			return id
		}
		return ""
	}

	// Each create is raced by describes of its group sent in a loop.
	for i := range 5 {
		name := fmt.Sprintf("hooked-%d", i)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = states(name)
				}
			}()
		}
		create(name)
		close(stop)
		wg.Wait()
		hooks, err := c.AutoScaling.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if len(hooks.LifecycleHooks) != 1 || aws.ToString(hooks.LifecycleHooks[0].LifecycleHookName) != "gate" ||
			aws.ToInt32(hooks.LifecycleHooks[0].HeartbeatTimeout) != 300 || aws.ToString(hooks.LifecycleHooks[0].DefaultResult) != "ABANDON" {
			t.Fatalf("hooks of %s: %+v, want the one its create named", name, hooks.LifecycleHooks)
		}
		id := waiting(name)
		if !d.Waiting(id) {
			t.Fatalf("the double does not hold %s", id)
		}
		if i == 1 {
			// ABANDON terminates it; terminating it again is Auto
			// Scaling's ValidationError (moto alone answers 500).
			if _, err := c.AutoScaling.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(name),
				LifecycleHookName: aws.String("gate"), InstanceId: aws.String(id), LifecycleActionResult: aws.String("ABANDON")}); err != nil {
				t.Fatal(err)
			}
			_, err := c.AutoScaling.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(id), ShouldDecrementDesiredCapacity: aws.Bool(false)})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationError" {
				t.Fatalf("terminating the abandoned %s again: %v, want ValidationError", id, err)
			}
		}
		if i > 0 {
			continue
		}
		if _, err := c.AutoScaling.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(name),
			LifecycleHookName: aws.String("gate"), InstanceId: aws.String(id), LifecycleActionResult: aws.String("CONTINUE")}); err != nil {
			t.Fatal(err)
		}
		s, err := states(name)
		if err != nil || s[id] != "InService" {
			t.Fatalf("after CONTINUE: %v (%v), want %s InService", s, err, id)
		}
		if got := d.Completions(); len(got) != 1 || got[0] != (LifecycleCompletion{Group: name, Hook: "gate", InstanceID: id, Result: "CONTINUE"}) {
			t.Fatalf("completions %+v", got)
		}
	}
}
