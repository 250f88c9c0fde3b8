package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/mlplatform/mlplatform/internal/indexrange"
)

// JoinConfigPath is where the bootstrap writes a node's JoinConfig, and
// where `hwprobe slurm join` reads it by default.
const JoinConfigPath = "/etc/mlplatform/slurm/join.json"

// Ways a node's Slurm name is made (JoinConfig.NodeName).
const (
	// NameByIndex: PREFIX-INDEX, the node's index in its GPU cluster (its
	// rank slot): the entry at the instance's ami-launch-index of the
	// ranges in its IndexTag. A replacement keeps its node's name.
	NameByIndex = "index"
	// NameByInstance: PREFIX-INSTANCEID, for nodes without an index (a CPU
	// footprint's Auto Scaling group).
	NameByInstance = "instance"
)

// JoinConfig is what a node needs to join a Slurm cluster as a dynamic node
// (slurmd -Z, configless: slurmd fetches slurm.conf and gres.conf from the
// controller). The provider renders it into the node's bootstrap, where the
// plan shows it; `hwprobe slurm join` reads it on the node. It holds no
// secret: the munge key is fetched from Secrets Manager on the node.
type JoinConfig struct {
	// Controllers are slurmctld's addresses, HOST or HOST:PORT, the primary
	// first (slurmd --conf-server).
	Controllers []string `json:"controllers"`
	// MungeKeySecretARN is the Secrets Manager secret that holds the
	// cluster's munge key (binary, or base64 text).
	MungeKeySecretARN string `json:"munge_key_secret_arn"`
	// Region is where the secret is read.
	Region string `json:"region"`
	// NodeNamePrefix and NodeName (NameByIndex, NameByInstance) make the
	// node's Slurm name.
	NodeNamePrefix string `json:"node_name_prefix"`
	NodeName       string `json:"node_name"`
	// IndexTag is the instance tag whose ranges (indexrange) list the
	// indices of the node's launch request; NameByIndex only.
	IndexTag string `json:"index_tag,omitempty"`
	// Conf is slurmd -Z's --conf: Gres, Feature and RealMemory, from the
	// declared profile.
	Conf string `json:"conf"`
}

// slurmName is what Slurm takes as a node name, feature or partition here:
// letters, digits, '_', '.', '-'.
var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// hostLabel is a DNS host name or an IPv4 address.
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

// ValidController checks one controller address, HOST or HOST:PORT.
func ValidController(s string) error {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	}
	if !hostLabel.MatchString(host) {
		return fmt.Errorf("controller %q: not a host name or IPv4 address, with an optional :PORT", s)
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("controller %q: port %q is not 1 to 65535", s, port)
		}
	}
	return nil
}

// ValidName checks a Slurm node name prefix, feature or partition name.
func ValidName(s string) error {
	if len(s) == 0 || len(s) > 64 || !slurmName.MatchString(s) {
		return fmt.Errorf("%q: 1 to 64 letters, digits, '_', '.' or '-'", s)
	}
	return nil
}

// Validate checks c whole.
func (c JoinConfig) Validate() error {
	if len(c.Controllers) == 0 {
		return errors.New("controllers: at least one")
	}
	for _, h := range c.Controllers {
		if err := ValidController(h); err != nil {
			return err
		}
	}
	if !strings.HasPrefix(c.MungeKeySecretARN, "arn:") || strings.Count(c.MungeKeySecretARN, ":") < 6 {
		return fmt.Errorf("munge_key_secret_arn %q: not a Secrets Manager secret ARN", c.MungeKeySecretARN)
	}
	if c.Region == "" {
		return errors.New("region: empty")
	}
	if err := ValidName(c.NodeNamePrefix); err != nil {
		return fmt.Errorf("node_name_prefix %w", err)
	}
	switch c.NodeName {
	case NameByIndex:
		if c.IndexTag == "" {
			return errors.New("index_tag: needed to name nodes by index")
		}
	case NameByInstance:
	default:
		return fmt.Errorf("node_name %q: %q or %q", c.NodeName, NameByIndex, NameByInstance)
	}
	if strings.ContainsAny(c.Conf, "\"'\n\\`$") {
		return fmt.Errorf("conf %q: quotes, backslashes, '$' and newlines are not allowed", c.Conf)
	}
	return nil
}

// ParseJoinConfig reads a JoinConfig (JSON, unknown fields refused) and
// validates it.
func ParseJoinConfig(b []byte) (JoinConfig, error) {
	var c JoinConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return JoinConfig{}, fmt.Errorf("slurm join configuration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return JoinConfig{}, fmt.Errorf("slurm join configuration: %w", err)
	}
	return c, nil
}

// NodeNameOf is the Slurm name of the node with instance id instanceID,
// launch index launchIndex (ami-launch-index), and index tag value
// indexTag (the ranges of its launch request; NameByIndex only).
func (c JoinConfig) NodeNameOf(instanceID string, launchIndex int, indexTag string) (string, error) {
	switch c.NodeName {
	case NameByInstance:
		if !slurmName.MatchString(instanceID) {
			return "", fmt.Errorf("instance id %q", instanceID)
		}
		return c.NodeNamePrefix + "-" + instanceID, nil
	case NameByIndex:
		idx, err := indexrange.Parse(indexTag)
		if err != nil {
			return "", fmt.Errorf("tag %s: %w", c.IndexTag, err)
		}
		if launchIndex < 0 || launchIndex >= len(idx) {
			return "", fmt.Errorf("tag %s = %q has no entry for launch index %d", c.IndexTag, indexTag, launchIndex)
		}
		return c.NodeNamePrefix + "-" + strconv.Itoa(idx[launchIndex]), nil
	}
	return "", fmt.Errorf("node_name %q", c.NodeName)
}

// SlurmdArgs are slurmd's arguments for the node named name: a dynamic
// node, configless, with the declared gres, features and memory.
func (c JoinConfig) SlurmdArgs(name string) []string {
	return []string{"-Z", "--conf-server", strings.Join(c.Controllers, ","), "-N", name, "--conf", c.Conf}
}
