package acctest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The IAM policies of the validation guide ("Who may write the reports"),
// read from the guide's template itself, between the markers
// <!-- NAME --> and <!-- /NAME -->, so that the tests and the guide cannot
// drift apart. TestIAMPolicies_guideStatements checks what moto cannot
// evaluate (conditions, non-S3 resources) as written; the rest is enforced
// by moto in TestIAMPolicies_enforcedByMoto (iam_policies_moto_test.go).

// validationGuide is the validation guide's template (docs/guides/validation.md
// is generated from it).
const validationGuide = "../templates/guides/validation.md"

// The guide's names: its reports bucket, the GPU cluster whose nodes it
// gives a policy, the footprint whose approver it gives one.
const (
	guideBucket    = "uae-hwprobe-reports"
	guideCluster   = "train-a"
	guideFootprint = "smb-inference"
)

// guidePolicies are the guide's IAM policy blocks as written.
type guidePolicies struct {
	// Node is the nodes' role policy (a whole document).
	Node string
	// NodeDeny is the statement a footprint's nodes' role adds.
	NodeDeny string
	// BucketDeny is the statement of the reports bucket's policy.
	BucketDeny string
	// Approver is the approver's role policy (a whole document).
	Approver string

	node, approver       iamPolicy
	nodeDeny, bucketDeny iamStatement
}

// NodeDenyPolicy is NodeDeny as a document of its own.
func (g *guidePolicies) NodeDenyPolicy() string {
	return `{"Version": "2012-10-17", "Statement": [` + g.NodeDeny + `]}`
}

// BucketPolicy is BucketDeny as the bucket's policy document.
func (g *guidePolicies) BucketPolicy() string {
	return `{"Version": "2012-10-17", "Statement": [` + g.BucketDeny + `]}`
}

// readGuidePolicies reads and parses the four policy blocks of the guide.
func readGuidePolicies(path string) (*guidePolicies, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := string(b)
	g := &guidePolicies{}
	for _, f := range []struct {
		name      string
		raw       *string
		doc       *iamPolicy
		statement *iamStatement
	}{
		{"iam-node-policy", &g.Node, &g.node, nil},
		{"iam-node-deny", &g.NodeDeny, nil, &g.nodeDeny},
		{"iam-bucket-deny", &g.BucketDeny, nil, &g.bucketDeny},
		{"iam-approver-policy", &g.Approver, &g.approver, nil},
	} {
		block, err := markedJSONBlock(text, f.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		*f.raw = block
		if f.doc != nil {
			err = decodeStrict(block, f.doc)
			if err == nil {
				err = f.doc.check()
			}
		} else {
			err = decodeStrict(block, f.statement)
			if err == nil {
				err = f.statement.check()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: the block marked %s: %w", path, f.name, err)
		}
	}
	return g, nil
}

// markedJSONBlock is the body of the json block between <!-- name --> and
// <!-- /name -->.
func markedJSONBlock(text, name string) (string, error) {
	begin, end := "<!-- "+name+" -->\n```json\n", "```\n<!-- /"+name+" -->"
	i := strings.Index(text, begin)
	if i < 0 {
		return "", fmt.Errorf("no json block marked <!-- %s --> (the marker, then the fence, on the next line)", name)
	}
	rest := text[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", fmt.Errorf("the json block marked <!-- %s --> does not end with its fence and <!-- /%s -->", name, name)
	}
	return rest[:j], nil
}

// decodeStrict decodes one JSON value, refusing unknown fields (a
// misspelt "Actions" is not an empty statement) and trailing text.
func decodeStrict(text string, v any) error {
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("not the policy JSON expected: %w", err)
	}
	if d.More() {
		return errors.New("text after the JSON value")
	}
	return nil
}

// iamPolicy is an IAM policy document.
type iamPolicy struct {
	Version   string
	Statement []iamStatement
}

func (p iamPolicy) check() error {
	if p.Version != "2012-10-17" {
		return fmt.Errorf("Version %q, want 2012-10-17", p.Version)
	}
	if len(p.Statement) == 0 {
		return errors.New("no Statement")
	}
	for i, s := range p.Statement {
		if err := s.check(); err != nil {
			return fmt.Errorf("statement %d: %w", i, err)
		}
	}
	return nil
}

// statements returns the statements of effect that name action.
func (p iamPolicy) statements(effect, action string) []iamStatement {
	var out []iamStatement
	for _, s := range p.Statement {
		if s.Effect == effect && slices.Contains(s.Action, action) {
			out = append(out, s)
		}
	}
	return out
}

// iamStatement is one statement; Action and Resource are lists whether
// written as one string or a list.
type iamStatement struct {
	Sid       string
	Effect    string
	Principal json.RawMessage
	Action    iamStrings
	Resource  iamStrings
	Condition map[string]map[string]iamStrings
}

func (s iamStatement) check() error {
	switch {
	case s.Effect != "Allow" && s.Effect != "Deny":
		return fmt.Errorf("Effect %q, want Allow or Deny", s.Effect)
	case len(s.Action) == 0:
		return errors.New("no Action")
	case len(s.Resource) == 0:
		return errors.New("no Resource")
	}
	return nil
}

// iamStrings is a policy value written as one string or a list of them.
type iamStrings []string

func (v *iamStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = iamStrings{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*v = l
	return nil
}

// loadGuidePolicies is readGuidePolicies failing t.
func loadGuidePolicies(t testing.TB) *guidePolicies {
	t.Helper()
	g, err := readGuidePolicies(validationGuide)
	if err != nil {
		t.Fatalf("the validation guide's IAM policies: %v", err)
	}
	return g
}

// TestIAMPolicies_guideStatements checks, as the guide writes them, the
// parts of its IAM policies that moto cannot evaluate (see
// TestIAMPolicies_enforcedByMoto): conditions, and resources other than
// S3's (moto hands every EC2, Auto Scaling and KMS call the resource "*",
// so an Allow on one key, group or instance never matches there). Every
// other statement must be one moto evaluates, so that each line of each
// policy is checked by one test or the other.
func TestIAMPolicies_guideStatements(t *testing.T) {
	g := loadGuidePolicies(t)
	group := platform.CPUFootprintResourceName(guideFootprint)
	footprintPrefix := s3Key(platform.ValidationSpec{ReportsS3URI: "s3://" + guideBucket + "/footprints/"}.ReportsPrefix(guideFootprint))
	keyARN := regexp.MustCompile(`^arn:aws:kms:` + Region + `:[0-9]{12}:key/[A-Za-z0-9-]+$`)

	t.Run("node", func(t *testing.T) {
		allowed := []string{"s3:GetBucketLocation", "s3:PutObject", "kms:GenerateDataKey"}
		for i, s := range g.node.Statement {
			if s.Effect != "Allow" {
				t.Errorf("statement %d: %s; the node policy only allows (its deny is the block of its own)", i, s.Effect)
			}
			for _, a := range s.Action {
				if !slices.Contains(allowed, a) {
					t.Errorf("statement %d allows %s: a node needs only %s", i, a, strings.Join(allowed, ", "))
				}
			}
		}
		// S3 encrypts the report with the key on the node's behalf: moto
		// does not ask KMS, so only this test sees the line.
		checkOnly(t, g.node, "Allow", "kms:GenerateDataKey", func(s iamStatement) error {
			if len(s.Resource) != 1 || !keyARN.MatchString(s.Resource[0]) {
				return fmt.Errorf("resource %q, want the reports key's ARN", s.Resource)
			}
			return noCondition(s)
		})
		checkEvaluated(t, g.node, "kms:GenerateDataKey")
	})

	t.Run("node deny", func(t *testing.T) {
		s := g.nodeDeny
		if s.Effect != "Deny" || !slices.Equal(s.Resource, []string{"*"}) || len(s.Condition) > 0 || len(s.Principal) > 0 {
			t.Errorf("the nodes' deny is %s on %q with condition %v: want a Deny on \"*\", unconditional", s.Effect, s.Resource, s.Condition)
		}
		// Its actions are each called by TestIAMPolicies_enforcedByMoto.
		for _, a := range s.Action {
			if _, ok := nodeDenyProbes[a]; !ok {
				t.Errorf("the nodes' deny names %s, which TestIAMPolicies_enforcedByMoto does not call: add it to nodeDenyProbes", a)
			}
		}
	})

	t.Run("bucket deny", func(t *testing.T) {
		// Conditions: moto does not evaluate them (it would refuse every
		// write, If-None-Match or not).
		s := g.bucketDeny
		want := iamStatement{Effect: "Deny", Principal: json.RawMessage(`"*"`), Action: iamStrings{"s3:PutObject"},
			Resource: iamStrings{"arn:aws:s3:::" + guideBucket + "/*"}, Condition: map[string]map[string]iamStrings{"Null": {"s3:if-none-match": {"true"}}}}
		if s.Effect != want.Effect || string(s.Principal) != string(want.Principal) || !slices.Equal(s.Action, want.Action) ||
			!slices.Equal(s.Resource, want.Resource) || !reflect.DeepEqual(s.Condition, want.Condition) {
			t.Errorf("the bucket's deny:\n%s\nwant a Deny of s3:PutObject on every key, to every principal, when the request has no If-None-Match (Null s3:if-none-match true)", g.BucketDeny)
		}
	})

	t.Run("approver", func(t *testing.T) {
		// sts:GetCallerIdentity: moto allows it to anyone, whatever the
		// policy; the gate asks it for the account.
		checkOnly(t, g.approver, "Allow", "sts:GetCallerIdentity", func(s iamStatement) error {
			if !slices.Equal(s.Resource, []string{"*"}) {
				return fmt.Errorf("resource %q, want \"*\"", s.Resource)
			}
			return noCondition(s)
		})
		checkOnly(t, g.approver, "Allow", "autoscaling:CompleteLifecycleAction", func(s iamStatement) error {
			want := regexp.MustCompile(`^arn:aws:autoscaling:` + Region + `:[0-9]{12}:autoScalingGroup:\*:autoScalingGroupName/` + regexp.QuoteMeta(group) + `$`)
			if len(s.Resource) != 1 || !want.MatchString(s.Resource[0]) {
				return fmt.Errorf("resource %q, want the footprint's group %s", s.Resource, group)
			}
			if len(s.Action) != 1 {
				return fmt.Errorf("actions %q with it: want it alone on the group", s.Action)
			}
			return noCondition(s)
		})
		checkOnly(t, g.approver, "Allow", "ec2:CreateTags", func(s iamStatement) error {
			want := regexp.MustCompile(`^arn:aws:ec2:` + Region + `:[0-9]{12}:instance/\*$`)
			if len(s.Resource) != 1 || !want.MatchString(s.Resource[0]) || len(s.Action) != 1 {
				return fmt.Errorf("%q on %q, want ec2:CreateTags alone on the region's instances", s.Action, s.Resource)
			}
			cond := map[string]map[string]iamStrings{
				"StringEquals":              {"aws:ResourceTag/aws:autoscaling:groupName": {group}},
				"ForAllValues:StringEquals": {"aws:TagKeys": {platform.ChallengeTag}},
			}
			if !reflect.DeepEqual(s.Condition, cond) {
				return fmt.Errorf("condition %v, want only the instances of group %s (aws:ResourceTag/aws:autoscaling:groupName), only the tag %s (ForAllValues:StringEquals aws:TagKeys)", s.Condition, group, platform.ChallengeTag)
			}
			return nil
		})
		checkOnly(t, g.approver, "Allow", "s3:ListBucket", func(s iamStatement) error {
			if !slices.Equal(s.Resource, []string{"arn:aws:s3:::" + guideBucket}) || len(s.Action) != 1 {
				return fmt.Errorf("%q on %q, want s3:ListBucket alone on the bucket", s.Action, s.Resource)
			}
			cond := map[string]map[string]iamStrings{"StringLike": {"s3:prefix": {footprintPrefix + "*"}}}
			if !reflect.DeepEqual(s.Condition, cond) {
				return fmt.Errorf("condition %v, want the footprint's prefix only (StringLike s3:prefix %s*)", s.Condition, footprintPrefix)
			}
			return nil
		})
		// S3 decrypts the reports with the key on the approver's behalf.
		checkOnly(t, g.approver, "Allow", "kms:Decrypt", func(s iamStatement) error {
			if len(s.Resource) != 1 || !keyARN.MatchString(s.Resource[0]) || len(s.Action) != 1 {
				return fmt.Errorf("%q on %q, want kms:Decrypt alone on the reports key's ARN", s.Action, s.Resource)
			}
			return noCondition(s)
		})
		for _, s := range g.approver.Statement {
			if s.Effect != "Allow" {
				t.Errorf("the approver's policy has a %s: only its allows are checked", s.Effect)
			}
		}
		checkEvaluated(t, g.approver, "sts:GetCallerIdentity", "autoscaling:CompleteLifecycleAction", "ec2:CreateTags", "s3:ListBucket", "kms:Decrypt")
	})
}

// checkOnly runs check on the one statement of p with effect that names
// action, failing when there is none or more than one.
func checkOnly(t *testing.T, p iamPolicy, effect, action string, check func(iamStatement) error) {
	t.Helper()
	ss := p.statements(effect, action)
	if len(ss) != 1 {
		t.Errorf("%d statements %s %s, want 1", len(ss), effect, action)
		return
	}
	if err := check(ss[0]); err != nil {
		t.Errorf("%s %s: %v", effect, action, err)
	}
}

// checkEvaluated fails for each statement of p that moto cannot evaluate
// and that names none of the actions checked here as written (checked).
func checkEvaluated(t *testing.T, p iamPolicy, checked ...string) {
	t.Helper()
	for i, s := range p.Statement {
		if motoEvaluates(s) || slices.ContainsFunc(s.Action, func(a string) bool { return slices.Contains(checked, a) }) {
			continue
		}
		t.Errorf("statement %d (%s %q on %q, condition %v) is one moto cannot evaluate (a condition, or a resource other than S3's), and no check of TestIAMPolicies_guideStatements reads it: add one", i, s.Effect, s.Action, s.Resource, s.Condition)
	}
}

// motoEvaluates reports whether moto 5.2.1 evaluates s as AWS would: no
// condition, and S3 resources (moto hands S3 calls their bucket or object
// ARN) or "*" alone (moto hands every other call "*").
func motoEvaluates(s iamStatement) bool {
	if len(s.Condition) > 0 || len(s.Principal) > 0 {
		return false
	}
	if slices.Equal(s.Resource, []string{"*"}) {
		return true
	}
	for _, r := range s.Resource {
		if !strings.HasPrefix(r, "arn:aws:s3:::") {
			return false
		}
	}
	return true
}

func noCondition(s iamStatement) error {
	if len(s.Condition) > 0 {
		return fmt.Errorf("condition %v: none expected", s.Condition)
	}
	return nil
}

// s3Key is the key part of s3://bucket/key.
func s3Key(uri string) string {
	_, key, _ := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	return key
}
