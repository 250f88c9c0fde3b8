#!/usr/bin/env bash
# `make demo`: the whole story on the local AWS emulator (moto behind the
# acctest shim), with no AWS account:
#   1. review: plan a UAE platform (examples/demo) and show the review CLI's
#      pull-request comment: cost, GPUs, residency, the validation gate;
#   2. residency: a plan that puts data outside the UAE fails, naming the
#      attribute, the rule and the fix, and makes no AWS write call;
#   3. apply with progress: the GPU cluster's validation gate waits for every
#      node's hwprobe report; hwprobe runs here as each node;
#   4. the validation reports: per node pass/fail, checks, attested location;
#   5. destroy, and show that nothing the platform owned is left.
# The emulator stands in for the nodes (--play-nodes, test code): it runs the
# real hwprobe here against the profile from each node's launch template and
# signs the node's identity with a test key the configuration is told to
# trust. hwprobe (its test build) probes a fixed machine description of the
# node's CPU (--machine zen5: a 2-vCPU AMD EPYC Zen 5), never this
# machine's, so the demo's outcome is the same on every machine. Without a
# GPU the nodes prove the host and the CPU features: examples/demo's
# validation_checks leaves the GPU section out of the profile rather than
# fake it, and the demo says so.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.1.0
start=$(date +%s)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "demo: $1 not found. $2" >&2; exit 2; }; }
fail() { echo "demo: $*" >&2; exit 1; }
need go "Install Go 1.24 or later."
need terraform "Install Terraform 1.8 or later."
need moto_server "Install the AWS emulator: pip install 'moto[server]'"
need python3 "Python 3 with boto3 (it comes with moto) seeds the emulator."

work=$(mktemp -d)
pids=()
cleanup() {
  for f in "$work"/follow*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

say "building the provider, the review CLI, hwprobe and the emulator"
os_arch="$(go env GOOS)_$(go env GOARCH)"
mirror="$work/mirror/registry.terraform.io/mlplatform/mlplatform/$version/$os_arch"
mkdir -p "$mirror" "$work/bin"
# make test built them already (MLPLATFORM_BIN): take those. Else two
# builds side by side (their links overlap); the compiler's output (go-nvml's
# cgo deprecation warnings on a first build) is shown only when a build
# fails.
if [ -n "${MLPLATFORM_BIN:-}" ] && [ -x "$MLPLATFORM_BIN/terraform-provider-mlplatform" ] && [ -x "$MLPLATFORM_BIN/test/emulator" ]; then
  cp "$MLPLATFORM_BIN/terraform-provider-mlplatform" "$mirror/terraform-provider-mlplatform_v$version"
  cp "$MLPLATFORM_BIN/mlplatform" "$MLPLATFORM_BIN/test/hwprobe" "$MLPLATFORM_BIN/test/emulator" "$work/bin/"
else
  go build -o "$mirror/terraform-provider-mlplatform_v$version" -ldflags "-X main.version=$version" . >"$work/build1.log" 2>&1 &
  b1=$!
  { go build -o "$work/bin/" ./cmd/mlplatform ./acctest/cmd/emulator && go build -tags hwprobe_nvmlmock -o "$work/bin/hwprobe" ./hwprobe/cmd/hwprobe; } >"$work/build2.log" 2>&1 &
  b2=$!
  wait "$b1" || { cat "$work/build1.log"; fail "building the provider failed"; }
  wait "$b2" || { cat "$work/build2.log"; fail "building the tools failed"; }
fi
echo "built in $(($(date +%s) - start))s"

say "starting the AWS emulator and the node stand-in"
"$work/bin/emulator" --quiet --ready-file "$work/endpoint" \
  --play-nodes demo-train --hwprobe "$work/bin/hwprobe" --machine zen5 --signer-cert "$work/node-signer.pem" \
  >"$work/emulator.log" 2>"$work/nodes.log" &
pids+=($!)
for _ in $(seq 1 120); do [ -s "$work/endpoint" ] && break; sleep 0.5; done
[ -s "$work/endpoint" ] || { cat "$work/emulator.log" "$work/nodes.log"; fail "the emulator did not start"; }
endpoint=$(cat "$work/endpoint")
echo "emulator at $endpoint: moto behind the test shim, which logs every call"
echo "node stand-in (test code): runs hwprobe here for each node of demo-train, probing a fixed 2-vCPU Zen 5, signs with a test key"

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=me-central-1
export AWS_EC2_METADATA_DISABLED=true CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
# The emulator has everything ready at once: waits poll it every 500 ms,
# not at the intervals meant for AWS (make emulator prints this too).
export MLPLATFORM_POLL_INTERVAL=500ms
cat >"$work/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["mlplatform/mlplatform"]
  }
  direct {
    exclude = ["mlplatform/mlplatform"]
  }
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc"

# writes: the AWS write calls the shim logged (it records every request).
writes() { python3 -c 'import json,sys,urllib.request; print(len(json.load(urllib.request.urlopen(sys.argv[1] + "/shim/log?writes=true")) or []))' "$endpoint"; }

say "seeding: a KMS key and two buckets in me-central-1, one bucket in eu-west-1"
python3 - "$endpoint" >"$work/seed.txt" <<'PY'
import sys, boto3
ep = sys.argv[1]
for name, region in (("mlplatform-demo-data", "me-central-1"), ("mlplatform-demo-reports", "me-central-1"), ("mlplatform-demo-eu", "eu-west-1")):
    boto3.client("s3", endpoint_url=ep, region_name=region).create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    print(f"bucket s3://{name} in {region}")
key = boto3.client("kms", endpoint_url=ep, region_name="me-central-1").create_key(Description="mlplatform demo")["KeyMetadata"]["Arn"]
print("key", key)
PY
sed 's/^/  /' "$work/seed.txt"
key_arn=$(sed -n 's/^key //p' "$work/seed.txt")

cp -r examples/demo "$work/demo"
cd "$work/demo"
cat >terraform.tfvars <<VARS
kms_key_arn            = "$key_arn"
feature_store_role_arn = "arn:aws:iam::123456789012:role/sagemaker-feature-store"
VARS
# The stand-in's test certificate: against AWS this is AWS's own certificate.
export TF_VAR_trusted_certificates="$(cat "$work/node-signer.pem")"
terraform init -no-color >/dev/null || fail "terraform init failed"

say "1. review: plan the UAE platform and read it as a reviewer would"
terraform plan -no-color -out=tfplan >"$work/plan.txt" 2>&1 || { cat "$work/plan.txt"; fail "plan failed"; }
grep -E '^  # .* will be (created|read)|^Plan:' "$work/plan.txt"
terraform show -json tfplan >"$work/plan.json"
echo
echo "\$ terraform show -json tfplan > plan.json && mlplatform review plan.json"
"$work/bin/mlplatform" review --output "$work/review.md" "$work/plan.json" || fail "review failed"
"$work/bin/mlplatform" review --format json --output "$work/review.json" "$work/plan.json"
# The comment's summary table, then the GPU and validation-gate details.
sed -n '/^\*\*Plan\*\*/,/^<details>/p' "$work/review.md" | grep -v '^<details>'
python3 - "$work/review.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
money = lambda v: "unknown" if v is None else f"${v:,.2f}"
print("\nCost per resource (monthly, after):")
for c in r["cost"]["resources"]:
    print(f"  {c['address']}: {money(c['after_monthly'])} ({c['basis']})")
for u in r["cost"]["unknown"]:
    print(f"  unknown, not counted: {json.dumps(u)}")
unknown = {}
for l in r["residency"]["locations"]:
    if l["verdict"] == "unknown":
        unknown[l["kind"]] = unknown.get(l["kind"], 0) + 1
if unknown:
    print("Residency unknown at review: " + ", ".join(f"{n} {k}" for k, n in sorted(unknown.items())) +
          " (not created by this plan or known only after apply: the provider checks them with AWS before any write, and fails closed)")
print("Validation gate:")
for g in r["validation"]["gates"]:
    print(f"  {g['address']}: {g['nodes']} node(s), on_failure {g.get('on_failure')}, timeout {g.get('timeout')}: {g['profile']}")
PY

say "2. residency: the data bucket moved to eu-west-1 is rejected at plan, with zero writes"
before=$(writes)
echo "AWS write calls in the test shim's request log before the plan: $before"
set +e
terraform plan -no-color -var data_bucket=mlplatform-demo-eu >"$work/rejected.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "the plan was expected to fail for residency, but it passed"
# The first violation in full: attribute, value, rule, fix.
awk '/Error:/ && n++ {exit} n' "$work/rejected.txt" | sed 's/^/  /'
echo "  ... $(grep -c 'Error:' "$work/rejected.txt") violation(s) in all; terraform plan exit $rc"
after=$(writes)
echo "AWS write calls after the plan: $after ($((after - before)) during it)"
[ "$after" -eq "$before" ] || fail "the rejected plan made $((after - before)) AWS write calls"

say "3. apply the reviewed plan: the GPU cluster waits for every node's hwprobe report"
echo "The profile the provider rendered from the declaration (in the plan; every node must prove it):"
python3 - "$work/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for r in plan["planned_values"]["root_module"]["resources"]:
    if r["address"] == "mlplatform_gpu_cluster.train":
        for line in r["values"]["validation_profile"].splitlines():
            if line.strip():
                print("  | " + line)
PY
echo "Not checked here: the gpu section (model, count, memory) and the cpu section (vCPUs, memory):"
echo "the played nodes have no GPU and 2 vCPUs, so validation_checks leaves them out rather than fake them."
echo
: >"$work/provider.log"
set +e
TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/provider.log" terraform apply -no-color tfplan >"$work/apply.txt" 2>&1 &
apply_pid=$!
pids+=($apply_pid)
# Progress while it runs: terraform's own lines, the provider's progress
# (its INFO log) and what hwprobe printed on each played node. Each follower
# is a tail stopped once the apply has ended.
follow() { tail -n +1 -F "$1" 2>/dev/null & echo $! >"$2"; wait; }
progress() {
  local l m
  while IFS= read -r l; do
    [[ $l =~ (GPU\ cluster|CPU\ footprint)\ [^\ ]+:\ [^@]* ]] || continue
    m=${BASH_REMATCH[0]}
    m=${m%%tf_*}
    m=${m%"${m##*[![:space:]]}"}
    m=${m%:}
    [ ${#m} -le 150 ] || m="${m:0:147}..."
    echo "  provider: $m"
  done
}
# The first node's hwprobe table in full, then each further node's verdict.
nodes() {
  local l n=0
  while IFS= read -r l; do
    case $l in "node player: standing in"*) continue ;; *"hwprobe validate exit"*) n=$((n + 1)) ;; esac
    if [ "$n" -le 1 ] || [[ $l =~ ^(node\ player:|PASS:|FAIL:|ERROR:) ]]; then echo "  $l"; fi
  done
}
steps() {
  local l
  while IFS= read -r l; do
    if [[ $l =~ :\ (Creating|Creation\ complete|Still\ creating)|^Apply\ complete|Error ]]; then echo "  $l"; fi
  done
}
follow "$work/provider.log" "$work/follow1.pid" | progress &
f1=$!
follow "$work/nodes.log" "$work/follow2.pid" | nodes &
f2=$!
follow "$work/apply.txt" "$work/follow3.pid" | steps &
f3=$!
wait "$apply_pid"
rc=$?
sleep 1 # the last lines reach the followers
for f in "$work"/follow1.pid "$work"/follow2.pid "$work"/follow3.pid; do
  for _ in $(seq 1 50); do [ -s "$f" ] && break; sleep 0.1; done
  kill "$(cat "$f")" 2>/dev/null || true
done
wait "$f1" "$f2" "$f3"
set -e
[ "$rc" -eq 0 ] || { cat "$work/apply.txt"; fail "apply failed (exit $rc)"; }

say "4. the validation reports, read back in-region and verified"
echo "mlplatform_validation_reports: each report's signed identity verified against trusted_certificates,"
echo "instance, account, region and zone matched, every check judged:"
terraform output -json validation >"$work/validation.json"
python3 - "$work/validation.json" <<'PY'
import json, sys
reports = json.load(open(sys.argv[1]))
for node, r in sorted(reports.items()):
    print(f"  {node}: {r['status']}, attested {r['attested']}")
    for c in r["checks"]:
        print(f"    {c}")
if len(reports) < 2 or any(r["status"] != "pass" for r in reports.values()):
    sys.exit("demo: expected a passing report from each of the 2 nodes")
PY

say "5. destroy, and check nothing the platform owned is left"
terraform destroy -no-color -auto-approve >"$work/destroy.txt" 2>&1 || { cat "$work/destroy.txt"; fail "destroy failed"; }
grep -E '^Destroy complete' "$work/destroy.txt" | sed 's/^/  /'
python3 - "$endpoint" <<'PY'
import sys, boto3, botocore
ep, region = sys.argv[1], "me-central-1"
ec2 = boto3.client("ec2", endpoint_url=ep, region_name=region)
left = []
for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])["Reservations"]:
    left += [i["InstanceId"] for i in r["Instances"]]
lts = [lt["LaunchTemplateName"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]]
asgs = [g["AutoScalingGroupName"] for g in boto3.client("autoscaling", endpoint_url=ep, region_name=region).describe_auto_scaling_groups()["AutoScalingGroups"]]
sm = boto3.client("sagemaker", endpoint_url=ep, region_name=region)
try:
    sm.describe_feature_group(FeatureGroupName="customers")
    groups = ["customers"]
except botocore.exceptions.ClientError:
    groups = []
print(f"  instances not terminated: {len(left)}; launch templates: {len(lts)}; Auto Scaling groups: {len(asgs)}; feature groups: {len(groups)}")
if left or lts or asgs or groups:
    print("  left behind:", left, lts, asgs, groups)
    sys.exit(1)
PY

say "done in $(($(date +%s) - start))s"
