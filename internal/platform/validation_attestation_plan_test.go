package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TestPlanAttestation: the plan says when evidence will not be
// hardware-attested, refuses nitrotpm on an image without NitroTPM, and
// decides nothing while the image or the mode is known only at apply.
func TestPlanAttestation(t *testing.T) {
	all := func(string) bool { return true }
	tests := []struct {
		name, mode, image, tpm string
		known                  func(string) bool
		attested               bool
		want                   string // "" no problem; "warning: ..." or "error: ..."
	}{
		{name: "auto, image with NitroTPM", mode: "", image: "ami-1", tpm: "v2.0", known: all, attested: true},
		{name: "auto, image without", mode: "auto", image: "ami-1", known: all, want: "warning: Image ami-1 has no NitroTPM"},
		{name: "auto, image known at apply", mode: "auto", known: all},
		{name: "nitrotpm, image with", mode: "nitrotpm", image: "ami-1", tpm: "v2.0", known: all, attested: true},
		{name: "nitrotpm, image without", mode: "nitrotpm", image: "ami-1", known: all, attested: true, want: "error: attestation = \"nitrotpm\" needs an image with NitroTPM: ami-1"},
		{name: "nitrotpm, image known at apply", mode: "nitrotpm", known: all, attested: true},
		{name: "none", mode: "none", image: "ami-1", tpm: "v2.0", known: all, want: "warning: attestation = \"none\""},
		{name: "mode known at apply", mode: "", image: "ami-1", known: func(p string) bool { return p != "validation.attestation" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &ValidationSpec{Wait: true, Attestation: tt.mode}
			attested, ps := planAttestation(v, tt.image, tt.tpm, tt.known)
			if attested != tt.attested {
				t.Errorf("attested = %v, want %v", attested, tt.attested)
			}
			var got string
			if len(ps) > 0 {
				kind := "error: "
				if ps[0].Warning {
					kind = "warning: "
				}
				got = kind + ps[0].Detail
				if ps[0].Path != "validation.attestation" {
					t.Errorf("path = %s", ps[0].Path)
				}
			}
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("problem = %q, want %q", got, tt.want)
			}
		})
	}
	// Without the gate (wait = false) nothing is said.
	if a, ps := planAttestation(&ValidationSpec{Attestation: "none"}, "ami-1", "", all); a || ps != nil {
		t.Errorf("no wait: %v %v", a, ps)
	}
}

type tagRecorder struct {
	calls [][]string
	err   error
}

func (r *tagRecorder) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	if len(in.Tags) != 1 || aws.ToString(in.Tags[0].Key) != ChallengeTag || len(aws.ToString(in.Tags[0].Value)) != 64 {
		return nil, fmt.Errorf("tags %+v", in.Tags)
	}
	r.calls = append(r.calls, in.Resources)
	return &ec2.CreateTagsOutput{}, r.err
}

func (r *tagRecorder) DeleteTags(context.Context, *ec2.DeleteTagsInput, ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
	return nil, errors.New("the challenge removes no tag")
}

// TestIssueChallenge: the challenge goes once to each node, a thousand
// instances a call; a failed call says which nodes did not get it, and
// they get it at the next look.
func TestIssueChallenge(t *testing.T) {
	ch := make([]byte, 32)
	var nodes []ExpectedNode
	for i := range 1004 {
		nodes = append(nodes, ExpectedNode{Index: i, InstanceID: fmt.Sprintf("i-%017x", i)})
	}
	r := &tagRecorder{}
	issued := map[string]bool{}
	if err := issueChallenge(context.Background(), r, ch, nodes[:3], issued); err != nil {
		t.Fatal(err)
	}
	if err := issueChallenge(context.Background(), r, ch, nodes, issued); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 3 || len(r.calls[0]) != 3 || len(r.calls[1]) != 1000 || len(r.calls[2]) != 1 {
		t.Fatalf("calls of %d instances", len(r.calls))
	}
	r = &tagRecorder{err: errors.New("throttled")}
	fresh := map[string]bool{}
	err := issueChallenge(context.Background(), r, ch, nodes[:2], fresh)
	if err == nil || !strings.Contains(err.Error(), "issuing the validation challenge: tagging i-00000000000000000, i-00000000000000001: throttled") || len(fresh) != 0 {
		t.Fatalf("err %v, issued %v", err, fresh)
	}
}
