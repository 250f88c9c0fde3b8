#!/usr/bin/env bash
# `make demo`: build the provider, start the local AWS emulator (moto behind the
# acctest shim), run terraform init/plan/apply/destroy on examples/quickstart,
# then show a plan rejected for residency. No AWS account needed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version=0.1.0

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "demo: $1 not found. $2" >&2; exit 2; }; }
need go "Install Go 1.24 or later."
need terraform "Install Terraform 1.8 or later."
need moto_server "Install the AWS emulator: pip install 'moto[server]'"
need python3 "Python 3 with boto3 (it comes with moto) seeds the demo buckets."

work=$(mktemp -d)
emu_pid=""
cleanup() {
  if [ -n "$emu_pid" ]; then kill "$emu_pid" 2>/dev/null || true; wait "$emu_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

say "building the provider and the emulator"
os_arch="$(go env GOOS)_$(go env GOARCH)"
mirror="$work/mirror/registry.terraform.io/mlplatform/mlplatform/$version/$os_arch"
mkdir -p "$mirror"
go build -o "$mirror/terraform-provider-mlplatform_v$version" -ldflags "-X main.version=$version" .
go build -o "$work/emulator" ./acctest/cmd/emulator

say "starting the AWS emulator"
"$work/emulator" --quiet --ready-file "$work/endpoint" >"$work/emulator.log" 2>&1 &
emu_pid=$!
for _ in $(seq 1 120); do [ -s "$work/endpoint" ] && break; sleep 0.5; done
[ -s "$work/endpoint" ] || { cat "$work/emulator.log"; echo "demo: the emulator did not start" >&2; exit 1; }
endpoint=$(cat "$work/endpoint")
echo "emulator at $endpoint"

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=me-central-1
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
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

say "seeding the emulator: a data bucket in me-central-1, another in eu-west-1"
python3 - "$endpoint" <<'PY'
import sys, boto3
ep = sys.argv[1]
for name, region in (("mlplatform-demo-data", "me-central-1"), ("mlplatform-demo-eu", "eu-west-1")):
    s3 = boto3.client("s3", endpoint_url=ep, region_name=region)
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    print(f"  s3://{name} in {region}")
PY

cp -r examples/quickstart "$work/quickstart"
cd "$work/quickstart"
# Against the emulator: two p5en.48xlarge nodes, and a role for the feature store.
cat >terraform.tfvars <<VARS
gpu_nodes              = 2
feature_store_role_arn = "arn:aws:iam::123456789012:role/sagemaker-feature-store"
VARS

say "terraform init"
terraform init -no-color >/dev/null && echo "initialised with the locally built provider $version"

say "terraform plan"
terraform plan -no-color -out=tfplan | grep -E '^  # |^Plan:|will be created|will be read'


say "terraform apply"
terraform apply -no-color -auto-approve tfplan | sed -n '/Apply complete/,$p'

say "terraform destroy"
terraform destroy -no-color -auto-approve | tail -n 3

say "a plan that breaks residency: the data bucket lives in eu-west-1"
writes() { python3 -c 'import json,sys,urllib.request; print(len(json.load(urllib.request.urlopen(sys.argv[1] + "/shim/log?writes=true")) or []))' "$endpoint"; }
before=$(writes)
set +e
terraform plan -no-color -var data_bucket=mlplatform-demo-eu >"$work/rejected.txt" 2>&1
rc=$?
set -e
sed -n '/Error:/,$p' "$work/rejected.txt"
if [ "$rc" -eq 0 ]; then
  echo "demo: the plan was expected to fail for residency, but it passed" >&2
  exit 1
fi
new_writes=$(( $(writes) - before ))
if [ "$new_writes" -ne 0 ]; then
  echo "demo: the rejected plan made $new_writes AWS write calls" >&2
  exit 1
fi

say "summary"
echo "- quickstart planned, applied and destroyed against the emulator"
echo "- a bucket outside the jurisdiction was rejected at plan time (exit $rc); AWS write calls during that plan: $new_writes (the emulator logged $before writes before it)"
