package slurm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Munge key sizes munged accepts.
const (
	MinMungeKey = 32
	MaxMungeKey = 1024
)

// MetadataAPI is the part of the instance metadata (IMDSv2) client the
// join uses.
type MetadataAPI interface {
	GetMetadata(ctx context.Context, in *imds.GetMetadataInput, optFns ...func(*imds.Options)) (*imds.GetMetadataOutput, error)
}

// SecretsAPI is the part of the Secrets Manager client the join uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// NewSecretsClient returns a Secrets Manager client for region from the
// standard AWS configuration (AWS_ENDPOINT_URL_SECRETS_MANAGER or
// AWS_ENDPOINT_URL override the endpoint).
func NewSecretsClient(ctx context.Context, region string) (*secretsmanager.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return secretsmanager.NewFromConfig(cfg), nil
}

// NodeIdentity is what the instance metadata service says about the node,
// and the Slurm name made from it.
type NodeIdentity struct {
	InstanceID  string
	LaunchIndex int    // ami-launch-index; NameByIndex only
	IndexTag    string // the value of JoinConfig.IndexTag; NameByIndex only
	Name        string // JoinConfig.NodeNameOf
}

// tagKey is an instance tag key the metadata service can serve: no '/'
// and no spaces (EC2 refuses to expose other keys in instance metadata).
var tagKey = regexp.MustCompile(`^[A-Za-z0-9+\-=._:@]{1,128}$`)

// ReadNode reads the node's identity from the instance metadata service
// and makes its Slurm name.
func ReadNode(ctx context.Context, c MetadataAPI, cfg JoinConfig) (NodeIdentity, error) {
	var n NodeIdentity
	var err error
	if n.InstanceID, err = metadataValue(ctx, c, "instance-id"); err != nil {
		return n, err
	}
	if cfg.NodeName == NameByIndex {
		s, err := metadataValue(ctx, c, "ami-launch-index")
		if err != nil {
			return n, err
		}
		if n.LaunchIndex, err = strconv.Atoi(s); err != nil || n.LaunchIndex < 0 {
			return n, fmt.Errorf("instance metadata ami-launch-index %q: not a launch index", s)
		}
		if !tagKey.MatchString(cfg.IndexTag) {
			return n, fmt.Errorf("index tag %q: instance metadata serves only tag keys of letters, digits and + - = . _ : @", cfg.IndexTag)
		}
		n.IndexTag, err = metadataValue(ctx, c, "tags/instance/"+cfg.IndexTag)
		if isNotFound(err) {
			return n, fmt.Errorf("instance tag %s: not in the instance metadata (the instance lacks the tag, or its launch template does not enable instance metadata tags)", cfg.IndexTag)
		}
		if err != nil {
			return n, err
		}
	}
	if n.Name, err = cfg.NodeNameOf(n.InstanceID, n.LaunchIndex, n.IndexTag); err != nil {
		return n, fmt.Errorf("node name: %w", err)
	}
	return n, nil
}

func metadataValue(ctx context.Context, c MetadataAPI, p string) (string, error) {
	out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: p})
	if err != nil {
		return "", fmt.Errorf("instance metadata %s: %w", p, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 4096))
	if err != nil {
		return "", fmt.Errorf("instance metadata %s: %w", p, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func isNotFound(err error) bool {
	var h interface{ HTTPStatusCode() int }
	return err != nil && errors.As(err, &h) && h.HTTPStatusCode() == 404
}

// MungeKey is the munge key a secret holds: its SecretBinary, or its
// SecretString read as base64. It is 32 to 1024 bytes. Errors name the
// secret, never the key.
func MungeKey(secretARN string, binary []byte, text *string) ([]byte, error) {
	key := binary
	if key == nil {
		if text == nil {
			return nil, fmt.Errorf("munge key secret %s: no value", secretARN)
		}
		s := strings.Join(strings.Fields(*text), "")
		var err error
		if key, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("munge key secret %s: its SecretString is not base64 (store the key as SecretBinary, or as base64 text)", secretARN)
		}
	}
	if len(key) < MinMungeKey || len(key) > MaxMungeKey {
		return nil, fmt.Errorf("munge key secret %s: the key is %d bytes; a munge key is %d to %d bytes", secretARN, len(key), MinMungeKey, MaxMungeKey)
	}
	return key, nil
}

// FetchMungeKey reads the munge key from the secret (its current version).
func FetchMungeKey(ctx context.Context, api SecretsAPI, secretARN string) ([]byte, error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
	if err != nil {
		return nil, fmt.Errorf("munge key secret %s: %w", secretARN, err)
	}
	return MungeKey(secretARN, out.SecretBinary, out.SecretString)
}

// Owner is a file's owner, by id.
type Owner struct{ UID, GID int }

// WriteFileAtomic replaces path with data: a temporary file in the same
// directory, with mode perm (and owner, when not nil) before any byte is
// written, synced, then renamed over path, and the directory synced. A
// reader sees the old file or the new one, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode, owner *Owner) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if owner != nil {
		if err = f.Chown(owner.UID, owner.GID); err != nil {
			return err
		}
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// SymlinkAtomic makes path a symbolic link to target, replacing what is
// there.
func SymlinkAtomic(target, path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp"+strconv.Itoa(os.Getpid()))
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link %s: %w", path, err)
	}
	return nil
}

// plainWord needs no quotes in a systemd command line.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:,=@+%-]+$`)

// QuoteArgs writes args as one systemd command-line fragment: systemd
// splits an unbraced $VAR at whitespace and removes quotes, so an
// argument with spaces is single-quoted. Arguments with quotes,
// backslashes, '$', '`', control characters or invalid UTF-8 (which
// systemd's environment files drop) are refused rather than escaped: the
// environment file and the command line would each take an escape.
func QuoteArgs(args []string) (string, error) {
	words := make([]string, len(args))
	for i, a := range args {
		switch {
		case plainWord.MatchString(a):
			words[i] = a
		case a == "" || !utf8.ValidString(a) || strings.ContainsAny(a, "'\"\\$`") || strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			return "", fmt.Errorf("argument %q: empty, not UTF-8, or has quotes, backslashes, '$', '`' or control characters", a)
		default:
			words[i] = "'" + a + "'"
		}
	}
	return strings.Join(words, " "), nil
}

// SlurmdOptionsVar is the variable slurmd's systemd unit passes to slurmd
// (ExecStart=... $SLURMD_OPTIONS), from /etc/sysconfig/slurmd (RHEL,
// Amazon Linux) or /etc/default/slurmd (Debian, Ubuntu).
const SlurmdOptionsVar = "SLURMD_OPTIONS"

// SetSlurmdOptions returns the environment file old with SLURMD_OPTIONS
// set to args: earlier assignments of it are removed, the other lines
// (comments, other variables) kept, and the new assignment appended.
func SetSlurmdOptions(old []byte, args []string) ([]byte, error) {
	q, err := QuoteArgs(args)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		t := strings.TrimSpace(line)
		t = strings.TrimSpace(strings.TrimPrefix(t, "export "))
		if strings.HasPrefix(t, SlurmdOptionsVar+"=") || t == joinMarker || (line == "" && b.Len() == 0) {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s\n%s=\"%s\"\n", joinMarker, SlurmdOptionsVar, q)
	return b.Bytes(), nil
}

const joinMarker = "# Written by hwprobe slurm join"

// SlurmdDropIn is a systemd drop-in for slurmd.service: Debian's unit
// starts slurmd only when /etc/slurm/slurm.conf exists, which a configless
// node has not (slurmd fetches slurm.conf from the controller), so the
// condition is reset.
const SlurmdDropIn = `# Written by hwprobe slurm join: slurmd runs configless (it fetches
# slurm.conf from the controller), so no local slurm.conf is needed.
[Unit]
ConditionPathExists=
`

// SlurmdDropInName is the drop-in's path under the systemd unit directory.
const SlurmdDropInName = "slurmd.service.d/mlplatform-slurm-join.conf"

// LeaveUnitName is the systemd unit that takes the node out of Slurm when
// the instance shuts down.
const LeaveUnitName = "mlplatform-slurm-leave.service"

// LeaveUnit is the unit LeaveUnitName: started at boot after slurmd, it
// does nothing until it is stopped; at shutdown systemd stops units in the
// reverse order of their start, so its ExecStop, `hwprobe slurm leave`,
// runs while the network, munge and slurmd still run. hwprobe and config
// are absolute paths: this hwprobe and the join configuration.
func LeaveUnit(hwprobe, config string) (string, error) {
	if !filepath.IsAbs(hwprobe) || !filepath.IsAbs(config) {
		return "", fmt.Errorf("leave unit: hwprobe %q and the join configuration %q must be absolute paths", hwprobe, config)
	}
	cmd, err := QuoteArgs([]string{hwprobe, "slurm", "leave", "--config", config})
	if err != nil {
		return "", fmt.Errorf("leave unit: %w", err)
	}
	return `# Written by hwprobe slurm join: the node leaves Slurm (drained, then
# deleted) when the instance shuts down, before slurmd and munge stop.
[Unit]
Description=Leave the Slurm cluster at shutdown (hwprobe slurm leave)
Wants=network-online.target
After=network-online.target munge.service slurmd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=` + cmd + `
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
`, nil
}

// WatchUnitName is the systemd unit that takes the node out of Slurm when
// the provider asks, before it terminates the instance.
const WatchUnitName = "mlplatform-slurm-watch.service"

// WatchUnit is the unit WatchUnitName: `hwprobe slurm watch` as a daemon,
// started after slurmd, restarted when it exits. hwprobe, config and
// profile are absolute paths: this hwprobe, the join configuration and
// the node's profile (the marker's destination).
func WatchUnit(hwprobe, config, profile string) (string, error) {
	if !filepath.IsAbs(hwprobe) || !filepath.IsAbs(config) || !filepath.IsAbs(profile) {
		return "", fmt.Errorf("watch unit: hwprobe %q, the join configuration %q and the profile %q must be absolute paths", hwprobe, config, profile)
	}
	cmd, err := QuoteArgs([]string{hwprobe, "slurm", "watch", "--profile", profile, "--config", config})
	if err != nil {
		return "", fmt.Errorf("watch unit: %w", err)
	}
	return `# Written by hwprobe slurm join: when mlplatform asks (instance tag
# ` + LeaveRequestTag + `), the node drains, lets its jobs end,
# stops slurmd, leaves Slurm and says so, before its instance is terminated.
[Unit]
Description=Leave Slurm when mlplatform asks (hwprobe slurm watch)
Wants=network-online.target
After=network-online.target munge.service slurmd.service

[Service]
ExecStart=` + cmd + `
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
`, nil
}
