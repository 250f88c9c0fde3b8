package report

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// objectLog is a fake S3 that records every write in order and refuses
// the keys in exists as S3 does a conditional write to an existing key.
type objectLog struct {
	puts   []*s3.PutObjectInput
	bodies [][]byte
	exists map[string]bool
	fail   map[string]error
}

func (o *objectLog) GetBucketLocation(context.Context, *s3.GetBucketLocationInput, ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	return &s3.GetBucketLocationOutput{LocationConstraint: types.BucketLocationConstraint("me-central-1")}, nil
}

func (o *objectLog) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	key := aws.ToString(in.Key)
	if o.exists[key] {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	if err := o.fail[key]; err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(in.Body)
	o.puts = append(o.puts, in)
	o.bodies = append(o.bodies, b)
	return &s3.PutObjectOutput{}, nil
}

func TestPublishBody(t *testing.T) {
	const key = "hw/i-0abc/20260301T100000Z.json"
	target := Target{URI: "s3://reports/hw/", Region: "me-central-1", KMSKeyID: "alias/hwprobe", BucketOwner: "111122223333"}
	r := sampleReport()
	r.Challenge = strings.Repeat("ab", 32)
	body, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte{0x84, 0x44} // any bytes: PublishBody does not read them

	t.Run("attested", func(t *testing.T) {
		o := &objectLog{}
		uri, err := PublishBody(context.Background(), o, target, r, body, doc)
		if err != nil || uri != "s3://reports/"+key {
			t.Fatalf("PublishBody = %q, %v", uri, err)
		}
		if len(o.puts) != 2 {
			t.Fatalf("%d objects written, want 2", len(o.puts))
		}
		for i, want := range []struct{ key, ctype string }{{key + ".nitrotpm", "application/cose"}, {key, "application/json"}} {
			in := o.puts[i]
			if aws.ToString(in.Key) != want.key || aws.ToString(in.ContentType) != want.ctype {
				t.Errorf("write %d: %s (%s), want %s (%s)", i, aws.ToString(in.Key), aws.ToString(in.ContentType), want.key, want.ctype)
			}
			if in.ServerSideEncryption != types.ServerSideEncryptionAwsKms || aws.ToString(in.SSEKMSKeyId) != "alias/hwprobe" ||
				aws.ToString(in.IfNoneMatch) != "*" || aws.ToString(in.ExpectedBucketOwner) != "111122223333" {
				t.Errorf("write %d: sse %q key %v If-None-Match %v owner %v", i, in.ServerSideEncryption, in.SSEKMSKeyId, in.IfNoneMatch, in.ExpectedBucketOwner)
			}
		}
		if !bytes.Equal(o.bodies[0], doc) || !bytes.Equal(o.bodies[1], body) {
			t.Error("the objects are not the bytes given")
		}
	})
	t.Run("unattested", func(t *testing.T) {
		o := &objectLog{}
		if _, err := PublishBody(context.Background(), o, target, r, body, nil); err != nil || len(o.puts) != 1 || aws.ToString(o.puts[0].Key) != key {
			t.Fatalf("err %v, writes %d", err, len(o.puts))
		}
	})
	t.Run("document not written: no report", func(t *testing.T) {
		o := &objectLog{fail: map[string]error{key + ".nitrotpm": errors.New("access denied")}}
		if _, err := PublishBody(context.Background(), o, target, r, body, doc); err == nil || !strings.Contains(err.Error(), "access denied") || len(o.puts) != 0 {
			t.Fatalf("err %v, writes %d", err, len(o.puts))
		}
	})
	t.Run("document exists", func(t *testing.T) {
		o := &objectLog{exists: map[string]bool{key + ".nitrotpm": true}}
		if _, err := PublishBody(context.Background(), o, target, r, body, doc); !errors.Is(err, ErrReportExists) || len(o.puts) != 0 {
			t.Fatalf("err %v, writes %d", err, len(o.puts))
		}
	})
	t.Run("report exists", func(t *testing.T) {
		o := &objectLog{exists: map[string]bool{key: true}}
		if _, err := PublishBody(context.Background(), o, target, r, body, doc); !errors.Is(err, ErrReportExists) || !strings.Contains(err.Error(), key) {
			t.Fatalf("err %v", err)
		}
	})
}

// The challenge is written right after generated_at, and left out of a
// report that answers none.
func TestEncodeChallenge(t *testing.T) {
	r := sampleReport()
	b, _ := Encode(r)
	if strings.Contains(string(b), "challenge") {
		t.Errorf("unchallenged report names a challenge:\n%s", b)
	}
	r.Challenge = strings.Repeat("0f", 32)
	b, _ = Encode(r)
	if !strings.Contains(string(b), "\"generated_at\": \"2026-03-01T10:00:00Z\",\n  \"challenge\": \""+r.Challenge+"\",") {
		t.Errorf("report:\n%s", b)
	}
}
