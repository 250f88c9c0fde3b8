package platform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// The bootstrap is cloud-init user data, MIME multipart so that a user's
// own user data still runs: the user's part first, then a cloud-config part
// that writes the profile, then a shell script that gets hwprobe, runs
// `hwprobe validate` and publishes the report. It works on any image with
// cloud-init, a POSIX shell, sha256sum and the AWS CLI (Amazon Linux 2023,
// the Ubuntu deep learning AMIs).

// Paths on the node.
const (
	BootstrapProfilePath = "/etc/mlplatform/hwprobe/profile.hcl"
	bootstrapReportPath  = "/var/lib/mlplatform/hwprobe/report.json"
	bootstrapBinaryPath  = "/var/lib/mlplatform/hwprobe/hwprobe"
	// bootstrapBoundary separates the parts; it cannot occur in them (the
	// profile is base64, the script is ours, the user's part is checked).
	bootstrapBoundary = "MLPLATFORM-HWPROBE-BOUNDARY-7c1f"
	// challengeUnit is the systemd service that answers the gate's
	// challenges (hwprobe report serve).
	challengeUnit     = "mlplatform-hwprobe-challenge.service"
	challengeUnitPath = "/etc/systemd/system/" + challengeUnit
	// BootstrapScriptMarker begins the bootstrap's script part.
	BootstrapScriptMarker = "# mlplatform validation bootstrap"
)

// BootstrapInput is what the bootstrap needs.
type BootstrapInput struct {
	Profile  string // HCL text, as RenderProfile made it
	Region   string // where hwprobe is fetched and the report published
	UserData string // the user's own user data; "" for none
	// HwprobeS3URI and HwprobeSHA256: where the binary is and its
	// checksum; an empty URI uses DefaultHwprobePath on the image.
	HwprobeS3URI  string
	HwprobeSHA256 string
	// GPU is false for a node without GPUs: hwprobe does not load NVML.
	// No node completes its own launch lifecycle action: the gate or the
	// approver does (cpufootprint_approve.go).
	GPU bool
	// Slurm, when set, joins the node to a Slurm cluster after it
	// published its report: the configuration is written beside the
	// profile, and `hwprobe slurm join` acts on it.
	Slurm *slurm.JoinConfig
	// EKSNodeConfig, when set, is nodeadm's NodeConfig (orchestrator.eks):
	// a part of its own, application/node.eks.aws, which nodeadm reads
	// to register the node tainted; after the report, `hwprobe kube
	// publish` labels the Node and sets its condition.
	EKSNodeConfig string
	// Kubeadm, when set, joins the node to a self-managed Kubernetes
	// cluster (orchestrator.kubernetes) before hwprobe validates it: its
	// JoinConfiguration is written beside the profile, and the script
	// reads the bootstrap token from its secret and runs kubeadm join.
	Kubeadm *KubeadmBootstrap
}

// KubeadmBootstrap is a node's kubeadm join: the rendered
// JoinConfiguration (no token in it) and the secret holding the token.
type KubeadmBootstrap struct {
	JoinConfig     string
	TokenSecretARN string
}

// eksNodeConfigPart names the NodeConfig part; kubeUnit is the systemd
// service that checks the node every 5 minutes and keeps its Node's
// condition and labels current (hwprobe kube check --interval).
const (
	eksNodeConfigPart = "mlplatform-eks-nodeconfig"
	kubeUnit          = "mlplatform-hwprobe-kube.service"
	kubeUnitPath      = "/etc/systemd/system/" + kubeUnit
)

// cloudConfig is the cloud-config part (JSON is YAML, so cloud-init reads
// it): the profile, written before the scripts run, merged with the user's
// own cloud-config without replacing its lists.
type cloudConfig struct {
	MergeHow   []mergeRule `json:"merge_how"`
	WriteFiles []writeFile `json:"write_files"`
}

type mergeRule struct {
	Name     string   `json:"name"`
	Settings []string `json:"settings"`
}

type writeFile struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Encoding    string `json:"encoding,omitempty"`
	Content     string `json:"content"`
}

// userDataType is the MIME type cloud-init gives a part from its first
// line.
func userDataType(ud string) (string, error) {
	first, _, _ := strings.Cut(ud, "\n")
	first = strings.TrimSpace(first)
	switch {
	case strings.HasPrefix(first, "#!"):
		return "text/x-shellscript", nil
	case strings.HasPrefix(first, "#cloud-config"):
		return "text/cloud-config", nil
	case strings.HasPrefix(first, "#cloud-boothook"):
		return "text/cloud-boothook", nil
	case strings.HasPrefix(first, "#include"):
		return "text/x-include-url", nil
	}
	return "", errors.New("user_data must begin with #! (a script), #cloud-config, #cloud-boothook or #include so that it can run beside the validation bootstrap")
}

// Bootstrap renders the node's user data.
func Bootstrap(in BootstrapInput) (string, error) {
	var b bytes.Buffer
	b.WriteString("Content-Type: multipart/mixed; boundary=\"" + bootstrapBoundary + "\"\nMIME-Version: 1.0\n\n")
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(bootstrapBoundary); err != nil {
		return "", err
	}
	part := func(ctype, name, body string) error {
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", ctype+`; charset="utf-8"`)
		h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
		h.Set("MIME-Version", "1.0")
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = io.WriteString(pw, body)
		return err
	}
	if in.UserData != "" {
		ctype, err := userDataType(in.UserData)
		if err != nil {
			return "", err
		}
		if strings.Contains(in.UserData, bootstrapBoundary) {
			return "", errors.New("user_data contains the bootstrap's MIME boundary")
		}
		if err := part(ctype, "user-data", in.UserData); err != nil {
			return "", err
		}
	}
	cc := cloudConfig{
		MergeHow: []mergeRule{{Name: "list", Settings: []string{"append"}}, {Name: "dict", Settings: []string{"no_replace", "recurse_list"}}},
		WriteFiles: []writeFile{{Path: BootstrapProfilePath, Permissions: "0644", Encoding: "b64",
			Content: base64.StdEncoding.EncodeToString([]byte(in.Profile))}},
	}
	if in.Slurm != nil {
		if err := in.Slurm.Validate(); err != nil {
			return "", err
		}
		raw, err := json.MarshalIndent(in.Slurm, "", "  ")
		if err != nil {
			return "", err
		}
		// Plain text, so that the plan shows it.
		cc.WriteFiles = append(cc.WriteFiles, writeFile{Path: slurm.JoinConfigPath, Permissions: "0644", Content: string(raw) + "\n"})
	}
	if in.Kubeadm != nil {
		if !strings.HasPrefix(in.Kubeadm.TokenSecretARN, "arn:") || strings.ContainsAny(in.Kubeadm.TokenSecretARN, "'\\\n") {
			return "", errors.New("the kubeadm join token's secret is not an ARN")
		}
		// Plain text, so that the plan shows it.
		cc.WriteFiles = append(cc.WriteFiles, writeFile{Path: KubeadmJoinConfigPath, Permissions: "0644", Content: in.Kubeadm.JoinConfig},
			writeFile{Path: KubeadmTokenSecretPath, Permissions: "0644", Content: in.Kubeadm.TokenSecretARN + "\n"})
	}
	ccJSON, err := json.Marshal(cc)
	if err != nil {
		return "", err
	}
	if err := part("text/cloud-config", "mlplatform-hwprobe-profile", "#cloud-config\n"+string(ccJSON)+"\n"); err != nil {
		return "", err
	}
	if in.EKSNodeConfig != "" {
		if strings.Contains(in.EKSNodeConfig, bootstrapBoundary) {
			return "", errors.New("the EKS NodeConfig contains the bootstrap's MIME boundary")
		}
		if err := part("application/node.eks.aws", eksNodeConfigPart, in.EKSNodeConfig); err != nil {
			return "", err
		}
	}
	if err := part("text/x-shellscript", "mlplatform-hwprobe.sh", bootstrapScript(in)); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// bootstrapScript gets hwprobe, validates and publishes. A failed check
// still publishes (the report says what failed); hwprobe that cannot run
// writes why to the console, which the gate reads when a node never
// reports.
func bootstrapScript(in BootstrapInput) string {
	var s strings.Builder
	s.WriteString("#!/bin/sh\n" + BootstrapScriptMarker + ": get hwprobe, validate the node against its profile, publish the report.\n")
	s.WriteString("set -u\nlog() { echo \"mlplatform-hwprobe: $*\" | tee /dev/console >&2 || true; }\n")
	fmt.Fprintf(&s, "export AWS_REGION=%s\n", shellQuote(in.Region))
	fmt.Fprintf(&s, "profile=%s\nreport=%s\n", BootstrapProfilePath, bootstrapReportPath)
	s.WriteString("mkdir -p \"$(dirname \"$report\")\" && rm -f \"$report\"\n")
	if in.HwprobeS3URI != "" {
		fmt.Fprintf(&s, "hwprobe=%s\n", bootstrapBinaryPath)
		fmt.Fprintf(&s, "if ! aws s3 cp --only-show-errors --region %s %s \"$hwprobe\"; then log 'cannot fetch hwprobe from %s'; exit 2; fi\n",
			shellQuote(in.Region), shellQuote(in.HwprobeS3URI), strings.ReplaceAll(in.HwprobeS3URI, "'", ""))
		fmt.Fprintf(&s, "if ! echo %s | sha256sum -c -; then log 'hwprobe checksum mismatch: not running it'; exit 2; fi\n",
			shellQuote(in.HwprobeSHA256+"  "+bootstrapBinaryPath))
		s.WriteString("chmod 0755 \"$hwprobe\"\n")
	} else {
		fmt.Fprintf(&s, "hwprobe=%s\n", DefaultHwprobePath)
		s.WriteString("if [ ! -x \"$hwprobe\" ]; then log \"hwprobe not found at $hwprobe on this image\"; exit 2; fi\n")
	}
	if in.Kubeadm != nil {
		// The node joins first, tainted, and is validated meanwhile (as
		// nodeadm's join on EKS). The token is read with the node's role
		// and put in a copy of the configuration only root reads, removed
		// after the join; the provider ID comes from the instance
		// metadata.
		s.WriteString(kubeadmJoinScript(in.Region))
	}
	gpu := ""
	if !in.GPU {
		gpu = " --no-gpu"
	}
	s.WriteString("\"$hwprobe\" validate --profile \"$profile\" --format table --report \"$report\"" + gpu + "\nrc=$?\n")
	s.WriteString("log \"validate exit code $rc\"\n")
	s.WriteString("if [ ! -s \"$report\" ]; then log 'hwprobe wrote no report'; exit 2; fi\n")
	s.WriteString("if ! \"$hwprobe\" report publish --profile \"$profile\" --report \"$report\"; then log 'cannot publish the report'; exit 2; fi\n")
	s.WriteString("log 'report published'\n")
	// From now on hwprobe answers the challenge each gate issues (an
	// instance tag), from the report validated above: a service that
	// outlives this script and a reboot.
	s.WriteString("serve=\"$hwprobe report serve --profile $profile --report $report\"\n")
	s.WriteString("if command -v systemctl >/dev/null 2>&1 && [ -d /etc/systemd/system ]; then\n")
	s.WriteString("  printf '[Unit]\\nDescription=mlplatform hwprobe: answers the validation gate'\\''s challenges\\nAfter=network-online.target\\n[Service]\\nExecStart=%s\\nRestart=always\\nRestartSec=5\\n[Install]\\nWantedBy=multi-user.target\\n' \"$serve\" >" + challengeUnitPath + "\n")
	s.WriteString("  systemctl daemon-reload && systemctl enable --now " + challengeUnit + " || log 'cannot start the challenge service'\n")
	s.WriteString("else\n  nohup $serve >>/var/log/" + challengeUnit + ".log 2>&1 &\nfi\n")
	s.WriteString("log 'answering validation challenges'\n")
	if in.Slurm != nil {
		// After the report: slurmd's first health check (before the node
		// registers) reads the boot report, so a node that failed joins
		// drained.
		fmt.Fprintf(&s, "if \"$hwprobe\" slurm join --config %s; then log 'joined Slurm'; else log \"cannot join Slurm (exit $?)\"; exit 2; fi\n", slurm.JoinConfigPath)
	}
	if in.EKSNodeConfig != "" || in.Kubeadm != nil {
		kubeconfig := ""
		if in.Kubeadm != nil {
			kubeconfig = " --kubeconfig " + KubeadmKubeletKubeconfig
		}
		// The kubelet registers the node (tainted) on its own; once it
		// has, hwprobe labels it and sets its condition with the kubelet's
		// credentials: tried for 10 minutes.
		s.WriteString("i=0\nuntil \"$hwprobe\" kube publish" + kubeconfig + " --report \"$report\"; do\n  i=$((i + 1)); if [ \"$i\" -ge 60 ]; then log 'cannot publish to the Kubernetes Node'; exit 2; fi; sleep 10\ndone\nlog 'published to the Kubernetes Node'\n")
		// From now on hwprobe checks the node every 5 minutes (no
		// benchmarks) and keeps the Node's condition and labels current.
		s.WriteString("check=\"$hwprobe kube check" + kubeconfig + " --profile $profile --boot-report $report --interval 5m\"\n")
		s.WriteString("if command -v systemctl >/dev/null 2>&1 && [ -d /etc/systemd/system ]; then\n")
		s.WriteString("  printf '[Unit]\\nDescription=mlplatform hwprobe: the Kubernetes Node'\\''s health check\\nAfter=kubelet.service\\n[Service]\\nExecStart=%s\\nRestart=always\\nRestartSec=30\\n[Install]\\nWantedBy=multi-user.target\\n' \"$check\" >" + kubeUnitPath + "\n")
		s.WriteString("  systemctl daemon-reload && systemctl enable --now " + kubeUnit + " || log 'cannot start the Kubernetes health check'\n")
		s.WriteString("else\n  nohup $check >>/var/log/" + kubeUnit + ".log 2>&1 &\nfi\n")
	}
	return s.String()
}

// BootstrapParts are the parts of a bootstrap's user data.
type BootstrapParts struct {
	UserData string // the user's own part, "" when none
	Profile  string // the profile's HCL text
	Script   string // the bootstrap script
	// Slurm is the node's Slurm join configuration; nil when it joins none.
	Slurm *slurm.JoinConfig
	// EKSNodeConfig is nodeadm's NodeConfig; "" when the node joins no
	// EKS cluster.
	EKSNodeConfig string
	// KubeadmJoinConfig is the kubeadm JoinConfiguration; "" when the
	// node joins no self-managed Kubernetes cluster. KubeadmTokenSecretARN
	// is the secret the node reads its bootstrap token from.
	KubeadmJoinConfig, KubeadmTokenSecretARN string
}

// ParseBootstrap reads user data that Bootstrap rendered back into its
// parts (what a node, or a test playing one, finds in the launch template).
func ParseBootstrap(userData string) (BootstrapParts, error) {
	head, body, ok := strings.Cut(userData, "\n\n")
	if !ok {
		return BootstrapParts{}, errors.New("user data: no MIME header")
	}
	var ctype string
	for _, line := range strings.Split(head, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Type") {
			ctype = strings.TrimSpace(v)
		}
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		return BootstrapParts{}, fmt.Errorf("user data is not MIME multipart (Content-Type %q)", ctype)
	}
	r := multipart.NewReader(strings.NewReader(body), params["boundary"])
	var out BootstrapParts
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return BootstrapParts{}, fmt.Errorf("user data part: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(p, 64<<10))
		if err != nil {
			return BootstrapParts{}, fmt.Errorf("user data part: %w", err)
		}
		switch name := p.FileName(); name {
		case "user-data":
			out.UserData = string(b)
		case "mlplatform-hwprobe-profile":
			var cc cloudConfig
			if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("#cloud-config\n")), &cc); err != nil {
				return BootstrapParts{}, fmt.Errorf("profile part: %w", err)
			}
			for _, f := range cc.WriteFiles {
				if f.Path == slurm.JoinConfigPath {
					c, err := slurm.ParseJoinConfig([]byte(f.Content))
					if err != nil {
						return BootstrapParts{}, err
					}
					out.Slurm = &c
				}
				if f.Path == KubeadmJoinConfigPath {
					if _, err := ParseKubeadmJoinConfig(f.Content); err != nil {
						return BootstrapParts{}, err
					}
					out.KubeadmJoinConfig = f.Content
				}
				if f.Path == KubeadmTokenSecretPath {
					out.KubeadmTokenSecretARN = strings.TrimSpace(f.Content)
				}
				if f.Path == BootstrapProfilePath {
					raw, err := base64.StdEncoding.DecodeString(f.Content)
					if err != nil {
						return BootstrapParts{}, fmt.Errorf("profile part: %w", err)
					}
					out.Profile = string(raw)
				}
			}
		case "mlplatform-hwprobe.sh":
			out.Script = string(b)
		case eksNodeConfigPart:
			out.EKSNodeConfig = string(b)
		}
	}
	if out.Profile == "" || out.Script == "" {
		return BootstrapParts{}, errors.New("user data carries no validation bootstrap (profile and script)")
	}
	return out, nil
}

// kubeadmJoinScript is the bootstrap's kubeadm join: the token from its
// secret (checked for form, never logged), the provider ID from IMDSv2,
// then kubeadm join with a private copy of the configuration.
func kubeadmJoinScript(region string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "if ! command -v kubeadm >/dev/null 2>&1; then log 'kubeadm not found on this image: cannot join Kubernetes'; exit 2; fi\n")
	fmt.Fprintf(&s, "token=$(aws secretsmanager get-secret-value --region %s --secret-id \"$(cat %s)\" --query SecretString --output text) || { log 'cannot read the kubeadm join token'; exit 2; }\n", shellQuote(region), KubeadmTokenSecretPath)
	s.WriteString("if [ \"${#token}\" -ne 23 ] || ! printf '%s' \"$token\" | grep -Eqx '[a-z0-9]{6}\\.[a-z0-9]{16}'; then log 'the join token secret holds no kubeadm bootstrap token'; exit 2; fi\n")
	s.WriteString("imds=$(curl -sf -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' http://169.254.169.254/latest/api/token) || { log 'no instance metadata token'; exit 2; }\n")
	s.WriteString("md() { curl -sf -H \"X-aws-ec2-metadata-token: $imds\" \"http://169.254.169.254/latest/meta-data/$1\"; }\n")
	s.WriteString("zone=$(md placement/availability-zone) && iid=$(md instance-id) || { log 'cannot read the instance metadata'; exit 2; }\n")
	s.WriteString("join=$(mktemp /run/mlplatform-kubeadm-join.XXXXXX) && chmod 0600 \"$join\" || exit 2\n")
	fmt.Fprintf(&s, "sed -e \"s|%s|aws:///$zone/$iid|\" -e \"s|^  bootstrapToken:\\$|&\\n    token: \\\"$token\\\"|\" -e \"s|^discovery:\\$|&\\n  tlsBootstrapToken: \\\"$token\\\"|\" %s >\"$join\"\n", KubeadmProviderID, KubeadmJoinConfigPath)
	s.WriteString("unset token\n")
	s.WriteString("if kubeadm join --config \"$join\"; then rm -f \"$join\"; log 'joined Kubernetes (kubeadm)'; else rc=$?; rm -f \"$join\"; log \"kubeadm join failed (exit $rc)\"; exit 2; fi\n")
	return s.String()
}
