package slurm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Test double of the metadata service: paths to values; others are 404.
type fakeMetadata map[string]string

func (f fakeMetadata) GetMetadata(_ context.Context, in *imds.GetMetadataInput, _ ...func(*imds.Options)) (*imds.GetMetadataOutput, error) {
	v, ok := f[in.Path]
	if !ok {
		return nil, &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 404}}, Err: errors.New("request to EC2 IMDS failed")}
	}
	return &imds.GetMetadataOutput{Content: io.NopCloser(strings.NewReader(v))}, nil
}

func TestReadNode(t *testing.T) {
	byIndex := JoinConfig{NodeNamePrefix: "train", NodeName: NameByIndex, IndexTag: "mlplatform:node-indices"}
	byInstance := JoinConfig{NodeNamePrefix: "cpu", NodeName: NameByInstance}
	md := func(launch, tag string) fakeMetadata {
		m := fakeMetadata{"instance-id": "i-0abc\n", "ami-launch-index": launch}
		if tag != "" {
			m["tags/instance/mlplatform:node-indices"] = tag
		}
		return m
	}
	for _, tt := range []struct {
		name    string
		cfg     JoinConfig
		md      fakeMetadata
		want    string
		wantErr string
	}{
		{"index: first of its request", byIndex, md("0", "4-6,9"), "train-4", ""},
		{"index: past a gap", byIndex, md("3", "4-6,9"), "train-9", ""},
		{"instance", byInstance, fakeMetadata{"instance-id": "i-0abc"}, "cpu-i-0abc", ""},
		{"no tag", byIndex, md("0", ""), "", "instance tag mlplatform:node-indices: not in the instance metadata"},
		{"launch index past the ranges", byIndex, md("4", "4-6,9"), "", `tag mlplatform:node-indices = "4-6,9" has no entry for launch index 4`},
		{"bad ranges", byIndex, md("0", "x"), "", "node name: tag mlplatform:node-indices: node indices"},
		{"bad launch index", byIndex, md("-1", "1"), "", `ami-launch-index "-1"`},
		{"no instance id", byInstance, fakeMetadata{}, "", "instance metadata instance-id:"},
		{"tag key with a slash", JoinConfig{NodeNamePrefix: "t", NodeName: NameByIndex, IndexTag: "a/b"}, md("0", "1"), "", `index tag "a/b"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ReadNode(context.Background(), tt.md, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || n.Name != tt.want || n.InstanceID != "i-0abc" {
				t.Fatalf("%+v, %v; want %s", n, err, tt.want)
			}
		})
	}
}

func TestMungeKey(t *testing.T) {
	const arn = "arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf"
	key := bytes.Repeat([]byte{0xA5, 0x00, 'k'}, 43) // 129 bytes, with NULs
	b64 := base64.StdEncoding.EncodeToString(key)
	wrapped := b64[:60] + "\n" + b64[60:] + "\n"
	for _, tt := range []struct {
		name    string
		bin     []byte
		text    *string
		want    []byte
		wantErr string
	}{
		{"binary", key, nil, key, ""},
		{"base64 text", nil, aws.String(b64), key, ""},
		{"base64 text, wrapped", nil, aws.String(wrapped), key, ""},
		{"binary wins", key, aws.String("ignored"), key, ""},
		{"shortest", key[:32], nil, key[:32], ""},
		{"too short", key[:31], nil, nil, "the key is 31 bytes; a munge key is 32 to 1024 bytes"},
		{"too long", bytes.Repeat(key, 8), nil, nil, "the key is 1032 bytes"},
		{"too short, as text", nil, aws.String(base64.StdEncoding.EncodeToString(key[:8])), nil, "the key is 8 bytes"},
		{"not base64", nil, aws.String("not a key!"), nil, "SecretString is not base64"},
		{"no value", nil, nil, nil, "no value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MungeKey(arn, tt.bin, tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), arn) {
					t.Fatalf("error %v, want %q naming the secret", err, tt.wantErr)
				}
				if tt.text != nil && strings.Contains(err.Error(), *tt.text) {
					t.Fatalf("error %v shows the secret's value", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("%x, %v", got, err)
			}
		})
	}
}

type fakeSecrets struct {
	out *secretsmanager.GetSecretValueOutput
	err error
	ids []string
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.ids = append(f.ids, aws.ToString(in.SecretId))
	return f.out, f.err
}

func TestFetchMungeKey(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 64)
	f := &fakeSecrets{out: &secretsmanager.GetSecretValueOutput{SecretBinary: key}}
	got, err := FetchMungeKey(context.Background(), f, "arn:s")
	if err != nil || !bytes.Equal(got, key) || !reflect.DeepEqual(f.ids, []string{"arn:s"}) {
		t.Fatalf("%q %v %v", got, err, f.ids)
	}
	f = &fakeSecrets{err: errors.New("AccessDeniedException")}
	if _, err := FetchMungeKey(context.Background(), f, "arn:s"); err == nil || err.Error() != "munge key secret arn:s: AccessDeniedException" {
		t.Fatalf("error %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "munge.key")
	if err := os.WriteFile(p, []byte("old key"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, _ := os.Open(p) // a reader of the old file keeps it whole
	defer old.Close()
	if err := WriteFileAtomic(p, []byte("new key"), 0o400, &Owner{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new key" {
		t.Errorf("content %q", b)
	}
	if b, _ := io.ReadAll(old); string(b) != "old key" {
		t.Errorf("the old file's reader read %q", b)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o400 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	// A failed write leaves the old file and no temporary file.
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "k"), []byte("x"), 0o400, nil); err == nil || !strings.Contains(err.Error(), "write ") {
		t.Errorf("error %v", err)
	}
	if err := WriteFileAtomic(p, []byte("x"), 0o400, &Owner{UID: -2, GID: -2}); err == nil && os.Geteuid() != 0 {
		t.Error("chown to another user succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "new key" && os.Geteuid() != 0 {
		t.Errorf("a failed write changed the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestSymlinkAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hwprobe-slurm-health-check")
	for _, target := range []string{"/usr/bin/hwprobe", "/opt/hwprobe"} {
		if err := SymlinkAtomic(target, p); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.Readlink(p); got != target {
			t.Errorf("link to %q, want %q", got, target)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// splitSystemd splits as systemd splits an unbraced $VAR in ExecStart
// (whitespace, single and double quotes removed); enough for QuoteArgs'
// output.
func splitSystemd(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func TestQuoteArgs(t *testing.T) {
	c := JoinConfig{Controllers: []string{"ctl-a", "10.0.0.2:6817"}, Conf: "Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000"}
	args := c.SlurmdArgs("train-3")
	q, err := QuoteArgs(args)
	want := "-Z --conf-server ctl-a,10.0.0.2:6817 -N train-3 --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'"
	if err != nil || q != want {
		t.Fatalf("%s, %v\nwant %s", q, err, want)
	}
	if got := splitSystemd(q); !reflect.DeepEqual(got, args) {
		t.Errorf("systemd reads %q", got)
	}
	for _, bad := range []string{"", "a'b", `a"b`, `a\b`, "$HOME", "`id`", "a\nb"} {
		if _, err := QuoteArgs([]string{"-N", bad}); err == nil {
			t.Errorf("%q quoted", bad)
		}
	}
}

func TestSetSlurmdOptions(t *testing.T) {
	args := []string{"-Z", "--conf", "Gres=gpu:2 Feature=a"}
	line := `SLURMD_OPTIONS="-Z --conf 'Gres=gpu:2 Feature=a'"` + "\n"
	for _, tt := range []struct{ name, old, want string }{
		{"new file", "", joinMarker + "\n" + line},
		{"Debian's, commented", "# Additional options that are passed to the slurmd daemon\n#SLURMD_OPTIONS=\"\"\n",
			"# Additional options that are passed to the slurmd daemon\n#SLURMD_OPTIONS=\"\"\n" + joinMarker + "\n" + line},
		{"replaced, others kept", "OTHER=1\nSLURMD_OPTIONS=\"-v\"\nexport SLURMD_OPTIONS=x\nLAST=2", "OTHER=1\nLAST=2\n" + joinMarker + "\n" + line},
		{"again", joinMarker + "\n" + line, joinMarker + "\n" + line},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetSlurmdOptions([]byte(tt.old), args)
			if err != nil || string(got) != tt.want {
				t.Errorf("got\n%s(%v)\nwant\n%s", got, err, tt.want)
			}
		})
	}
	if _, err := SetSlurmdOptions(nil, []string{"-N", "a'b"}); err == nil {
		t.Error("a quote was written")
	}
}
