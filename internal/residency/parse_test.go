package residency

import (
	"errors"
	"strings"
	"testing"
)

func TestParseARN(t *testing.T) {
	tests := []struct {
		in      string
		want    ARN
		wantErr string
	}{
		{in: "arn:aws:kms:me-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
			want: ARN{Partition: "aws", Service: "kms", Region: "me-central-1", Account: "111122223333", Resource: "key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
		{in: "arn:aws:iam::111122223333:role/ml-node",
			want: ARN{Partition: "aws", Service: "iam", Account: "111122223333", Resource: "role/ml-node"}},
		{in: "arn:aws:s3:::my-bucket/prefix/key:with:colons",
			want: ARN{Partition: "aws", Service: "s3", Resource: "my-bucket/prefix/key:with:colons"}},
		{in: "arn:aws:iam::aws:policy/AdministratorAccess",
			want: ARN{Partition: "aws", Service: "iam", Account: "aws", Resource: "policy/AdministratorAccess"}},
		{in: "arn:aws-cn:sagemaker:cn-north-1:111122223333:endpoint/x",
			want: ARN{Partition: "aws-cn", Service: "sagemaker", Region: "cn-north-1", Account: "111122223333", Resource: "endpoint/x"}},
		{in: "arn:aws-us-gov:ec2:us-gov-west-1:111122223333:instance/i-0123",
			want: ARN{Partition: "aws-us-gov", Service: "ec2", Region: "us-gov-west-1", Account: "111122223333", Resource: "instance/i-0123"}},
		{in: "", wantErr: "does not start"},
		{in: "arn:aws:s3", wantErr: "want arn:"},
		{in: "arn::s3:::b", wantErr: "bad partition"},
		{in: "arn:gcp:s3:::b", wantErr: "bad partition"},
		{in: "arn:aws::::b", wantErr: "bad service"},
		{in: "arn:aws:kms:mecentral:111122223333:key/x", wantErr: "bad region"},
		{in: "arn:aws:kms:me-central-1:1234:key/x", wantErr: "bad account"},
		{in: "arn:aws:kms:me-central-1:111122223333:", wantErr: "empty resource"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseARN(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseARN(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseARN(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseARN(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestParseS3URI(t *testing.T) {
	tests := []struct {
		in      string
		want    S3Location
		wantErr string
	}{
		{in: "s3://my-bucket/data/train", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "data/train"}},
		{in: "s3://my-bucket", want: S3Location{Partition: "aws", Bucket: "my-bucket"}},
		{in: "s3://my.dotted.bucket/k", want: S3Location{Partition: "aws", Bucket: "my.dotted.bucket", Key: "k"}},
		{in: "arn:aws:s3:::my-bucket", want: S3Location{Partition: "aws", Bucket: "my-bucket"}},
		{in: "arn:aws:s3:::my-bucket/a/b", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a/b"}},
		{in: "https://my-bucket.s3.me-central-1.amazonaws.com/a/b", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a/b", EndpointRegion: "me-central-1"}},
		{in: "https://my.dotted.bucket.s3.me-central-1.amazonaws.com/a", want: S3Location{Partition: "aws", Bucket: "my.dotted.bucket", Key: "a", EndpointRegion: "me-central-1"}},
		{in: "https://my-bucket.s3.amazonaws.com/a", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a"}},
		{in: "https://my-bucket.s3-eu-west-1.amazonaws.com/a", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a", EndpointRegion: "eu-west-1"}},
		{in: "https://my-bucket.s3.dualstack.me-central-1.amazonaws.com/a", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a", EndpointRegion: "me-central-1"}},
		{in: "https://s3.me-central-1.amazonaws.com/my-bucket/a/b", want: S3Location{Partition: "aws", Bucket: "my-bucket", Key: "a/b", EndpointRegion: "me-central-1"}},
		{in: "https://s3.amazonaws.com/my-bucket", want: S3Location{Partition: "aws", Bucket: "my-bucket"}},
		{in: "https://s3.cn-north-1.amazonaws.com.cn/my-bucket/k", want: S3Location{Partition: "aws-cn", Bucket: "my-bucket", Key: "k", EndpointRegion: "cn-north-1"}},
		{in: "s3://fast--mec1-az1--x-s3/k", want: S3Location{Partition: "aws", Bucket: "fast--mec1-az1--x-s3", Key: "k", ZoneID: "mec1-az1"}},
		{in: "gs://bucket/key", wantErr: "want s3://"},
		{in: "s3://", wantErr: "3 to 63"},
		{in: "s3://ab/k", wantErr: "3 to 63"},
		{in: "s3://" + strings.Repeat("a", 64), wantErr: "3 to 63"},
		{in: "s3://My-Bucket/k", wantErr: "lowercase"},
		{in: "s3://-bucket/k", wantErr: "begin and end"},
		{in: "s3://bucket-/k", wantErr: "begin and end"},
		{in: "s3://my..bucket/k", wantErr: "two adjacent dots"},
		{in: "s3://192.168.5.4/k", wantErr: "IP address"},
		{in: "s3://xn--bucket/k", wantErr: "reserved prefix"},
		{in: "s3://sthree-bucket/k", wantErr: "reserved prefix"},
		{in: "s3://my-ap-abcdefgh-s3alias/k", wantErr: "reserved suffix"},
		{in: "s3://my_bucket/k", wantErr: "lowercase"},
		{in: "arn:aws:s3:me-central-1:111122223333:accesspoint/ap", want: S3Location{Partition: "aws", Access: "ap", EndpointRegion: "me-central-1"}},
		{in: "arn:aws:s3::111122223333:accesspoint/mfzwi23gnjvgw.mrap", want: S3Location{Partition: "aws", Access: "mfzwi23gnjvgw.mrap"}},
		{in: "arn:aws-cn:s3:::name", want: S3Location{Partition: "aws-cn", Bucket: "name"}},
		{in: "https://name.s3.cn-north-1.amazonaws.com.cn/k", want: S3Location{Partition: "aws-cn", Bucket: "name", Key: "k", EndpointRegion: "cn-north-1"}},
		{in: "https://name.s3.me-central-1.amazonaws.com.cn/k", want: S3Location{Partition: "aws-cn", Bucket: "name", Key: "k", EndpointRegion: "me-central-1"}},
		{in: "https://name.s3.us-gov-west-1.amazonaws.com/k", want: S3Location{Partition: "aws-us-gov", Bucket: "name", Key: "k", EndpointRegion: "us-gov-west-1"}},
		{in: "arn:aws:s3:me-central-1:111122223333:accesspoint/", wantErr: "empty access point"},
		{in: "arn:aws:s3:me-central-1:111122223333:job/x", wantErr: "not a bucket ARN"},
		{in: "arn:aws:kms:me-central-1:111122223333:key/x", wantErr: "not a bucket ARN"},
		{in: "https://example.com/bucket/key", wantErr: "not an S3 endpoint"},
		{in: "https://bucket.ec2.me-central-1.amazonaws.com/k", wantErr: "not an S3 endpoint"},
		{in: "https://bucket.s3.me-central-1.extra.amazonaws.com/k", wantErr: "not an S3 endpoint"},
		{in: "https://bucket.s3-eu-west-1.me-central-1.amazonaws.com/k", wantErr: "two regions"},
		{in: "https://bucket.s3.nowhere.amazonaws.com/k", wantErr: "bad region"},
		{in: "https://s3.me-central-1.amazonaws.com/b/k?versionId=1", wantErr: "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseS3URI(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseS3URI(%q) = %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseS3URI(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseS3URI(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseECRImage(t *testing.T) {
	tests := []struct {
		in      string
		want    ECRImage
		wantErr string
	}{
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/ml/serve:1.2.3",
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr.ecr.me-central-1.amazonaws.com", Repository: "ml/serve", Tag: "1.2.3"}},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/serve",
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr.ecr.me-central-1.amazonaws.com", Repository: "serve"}},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/serve@" + digest,
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr.ecr.me-central-1.amazonaws.com", Repository: "serve", Digest: digest}},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/serve:v1@" + digest,
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr.ecr.me-central-1.amazonaws.com", Repository: "serve", Tag: "v1", Digest: digest}},
		{in: "111122223333.dkr.ecr-fips.us-east-1.amazonaws.com/serve:v1",
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "us-east-1", Host: "111122223333.dkr.ecr-fips.us-east-1.amazonaws.com", Repository: "serve", Tag: "v1", FIPS: true}},
		{in: "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/serve:v1",
			want: ECRImage{Partition: "aws-cn", Account: "111122223333", Region: "cn-north-1", Host: "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn", Repository: "serve", Tag: "v1"}},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com.cn/serve:v1",
			want: ECRImage{Partition: "aws-cn", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr.ecr.me-central-1.amazonaws.com.cn", Repository: "serve", Tag: "v1"}},
		{in: "111122223333.dkr.ecr.us-gov-west-1.amazonaws.com/serve:v1",
			want: ECRImage{Partition: "aws-us-gov", Account: "111122223333", Region: "us-gov-west-1", Host: "111122223333.dkr.ecr.us-gov-west-1.amazonaws.com", Repository: "serve", Tag: "v1"}},
		{in: "111122223333.dkr-ecr.me-central-1.on.aws/serve:v1",
			want: ECRImage{Partition: "aws", Account: "111122223333", Region: "me-central-1", Host: "111122223333.dkr-ecr.me-central-1.on.aws", Repository: "serve", Tag: "v1"}},
		{in: "nginx:latest", wantErr: "no registry host"},
		{in: "docker.io/library/nginx:latest", wantErr: "is not ACCOUNT"},
		{in: "public.ecr.aws/nginx/nginx:latest", wantErr: "is not ACCOUNT"},
		{in: "763104351884.dkr.ecr.me-central-1.amazonaws.com.evil.com/x:y", wantErr: "is not ACCOUNT"},
		{in: "1111.dkr.ecr.me-central-1.amazonaws.com/x:y", wantErr: "is not ACCOUNT"},
		{in: "111122223333.dkr.ecr.nowhere.amazonaws.com/x:y", wantErr: "bad region"},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/Serve:v1", wantErr: "bad repository"},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/:v1", wantErr: "bad repository"},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/serve:", wantErr: "bad tag"},
		{in: "111122223333.dkr.ecr.me-central-1.amazonaws.com/serve@sha256:zz", wantErr: "bad digest"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseECRImage(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseECRImage(%q) = %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				if !errors.Is(err, ErrNotECR) {
					t.Errorf("error %v does not wrap ErrNotECR", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseECRImage(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseECRImage(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseZoneID(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "mec1-az1", want: "me-central-1"},
		{in: "mec1-az3", want: "me-central-1"},
		{in: "euw1-az2", want: "eu-west-1"},
		{in: "use1-az6", want: "us-east-1"},
		{in: "usw2-az1", want: "us-west-2"},
		{in: "euc1-az1", want: "eu-central-1"},
		{in: "aps1-az1", want: "ap-south-1"},
		{in: "mes1-az1", want: "me-south-1"},
		{in: "ilc1-az1", want: "il-central-1"},
		{in: "use1-bos1-az1", want: "us-east-1"},
		{in: "zzz9-az1", wantErr: "unknown region prefix"},
		{in: "me-central-1a", wantErr: "want PREFIX-azN"},
		{in: "mec1", wantErr: "want PREFIX-azN"},
		{in: "", wantErr: "want PREFIX-azN"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseZoneID(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseZoneID(%q) = %q, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseZoneID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseZoneName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"me-central-1a", "me-central-1", true},
		{"me-central-1c", "me-central-1", true},
		{"us-gov-west-1b", "us-gov-west-1", true},
		{"us-east-1-bos-1a", "us-east-1", true},
		{"me-central-1", "", false},
		{"mec1-az1", "", false},
		{"me-central-1A", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseZoneName(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseZoneName(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// Every region of a built-in jurisdiction must have a zone id prefix, or its
// zone ids would all be rejected.
func TestJurisdictionRegionsHaveZonePrefixes(t *testing.T) {
	for _, j := range Jurisdictions() {
		for _, r := range j.Regions {
			if _, ok := ZoneIDPrefix(r); !ok {
				t.Errorf("jurisdiction %s: region %s has no zone id prefix", j.Code, r)
			}
		}
	}
	seen := map[string]string{}
	for r, p := range zoneIDPrefixes {
		if other, dup := seen[p]; dup {
			t.Errorf("prefix %s used by %s and %s", p, r, other)
		}
		seen[p] = r
	}
}

func FuzzParseARN(f *testing.F) {
	for _, s := range []string{
		"arn:aws:kms:me-central-1:111122223333:key/abc",
		"arn:aws:iam::111122223333:role/x",
		"arn:aws:s3:::bucket/key",
		"arn:aws-cn:ec2:cn-north-1:111122223333:instance/i-1",
		"arn:", "arn:aws:s3", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseARN(s)
		if err != nil {
			return
		}
		if a.String() != s {
			t.Fatalf("round trip: %q -> %q", s, a.String())
		}
		if a.Region != "" && !ValidRegion(a.Region) {
			t.Fatalf("accepted bad region %q", a.Region)
		}
	})
}

// FuzzParseKMSKeyARN: never panics; what it accepts is a kms ARN naming a
// key or an alias.
func FuzzParseKMSKeyARN(f *testing.F) {
	for _, s := range []string{"arn:aws:kms:me-central-1:123456789012:key/1234abcd", "arn:aws:kms:me-central-1:123456789012:alias/team",
		"arn:aws:kms::123456789012:key/x", "arn:aws:s3:::bucket", "arn:aws:kms:me-central-1:123456789012:grant/x", "key/abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseKMSKeyARN(s)
		if err != nil {
			return
		}
		if a.Service != "kms" || !(strings.HasPrefix(a.Resource, "key/") || strings.HasPrefix(a.Resource, "alias/")) {
			t.Fatalf("accepted %q as %+v", s, a)
		}
	})
}

func FuzzParseS3URI(f *testing.F) {
	for _, s := range []string{
		"s3://my-bucket/key", "s3://b.c.d/k", "arn:aws:s3:::bucket/k",
		"https://bucket.s3.me-central-1.amazonaws.com/k",
		"https://s3.me-central-1.amazonaws.com/bucket/k",
		"https://bucket.s3-eu-west-1.amazonaws.com/k",
		"s3://fast--mec1-az1--x-s3/k", "s3://", "https://",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseS3URI(s)
		if err != nil {
			return
		}
		if err := ValidateBucketName(loc.Bucket); err != nil {
			t.Fatalf("accepted invalid bucket %q from %q: %v", loc.Bucket, s, err)
		}
		if loc.EndpointRegion != "" && !ValidRegion(loc.EndpointRegion) {
			t.Fatalf("accepted bad region %q from %q", loc.EndpointRegion, s)
		}
		if strings.HasPrefix(s, "s3://") {
			again, err := ParseS3URI("s3://" + loc.Bucket + "/" + loc.Key)
			if err != nil || again.Bucket != loc.Bucket || again.Key != loc.Key {
				t.Fatalf("round trip of %q: %+v, %v", s, again, err)
			}
		}
	})
}

func FuzzParseECRImage(f *testing.F) {
	for _, s := range []string{
		"111122223333.dkr.ecr.me-central-1.amazonaws.com/ml/serve:1.2.3",
		"111122223333.dkr.ecr-fips.us-east-1.amazonaws.com/serve@" + digest,
		"111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/a:b",
		"111122223333.dkr-ecr.me-central-1.on.aws/a",
		"nginx", "public.ecr.aws/x/y:z", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		img, err := ParseECRImage(s)
		if err != nil {
			if !errors.Is(err, ErrNotECR) {
				t.Fatalf("error %v does not wrap ErrNotECR", err)
			}
			return
		}
		if !ValidRegion(img.Region) || len(img.Account) != 12 || img.Repository == "" {
			t.Fatalf("accepted %q as %+v", s, img)
		}
		if !strings.HasPrefix(s, img.Host+"/"+img.Repository) {
			t.Fatalf("%q: host and repository %q/%q are not its prefix", s, img.Host, img.Repository)
		}
	})
}

func FuzzParseZone(f *testing.F) {
	for _, s := range []string{"mec1-az1", "use1-bos1-az1", "me-central-1a", "us-east-1-bos-1a", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseZoneID(s); err == nil {
			if p, _ := ZoneIDPrefix(r); !strings.HasPrefix(s, p+"-") {
				t.Fatalf("zone id %q mapped to %s (prefix %s)", s, r, p)
			}
		}
		if r, err := ParseZoneName(s); err == nil {
			if !ValidRegion(r) || !strings.HasPrefix(s, r) || len(s) <= len(r) {
				t.Fatalf("zone name %q mapped to %q", s, r)
			}
		}
	})
}

func TestBucketLocationRegion(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "us-east-1"},
		{"EU", "eu-west-1"},
		{"me-central-1", "me-central-1"},
		{"eu-west-1", "eu-west-1"},
	} {
		if got := BucketLocationRegion(tt.in); got != tt.want {
			t.Errorf("BucketLocationRegion(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
