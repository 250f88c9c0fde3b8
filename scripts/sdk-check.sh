#!/usr/bin/env bash
# The generated Pulumi SDKs and the Pulumi examples build as their users
# build them:
#   - TypeScript: pulumi/sdk/nodejs compiles with tsc under its own
#     tsconfig.json (strict), against the versions below, each checked to
#     satisfy the ranges in the SDK's package.json; then
#     examples/pulumi/typescript compiles (strict) against the built SDK.
#   - Python: every file of pulumi/sdk/python and examples/pulumi/python
#     passes py_compile; every module of pulumi_mlplatform imports, against
#     the real `pulumi` package when `import pulumi` works, else against the
#     stand-in in scripts/sdk-check/python-standin (PyPI is not reachable
#     here); the names and keyword arguments the Python example uses exist.
#   - Go: examples/pulumi/go builds.
# That the committed SDKs are what gen-sdk generates is TestSDKFresh
# (go test ./pulumi/cmd/gen-sdk).
#
# npm packages are installed once into the user's cache directory
# (override with SDK_CHECK_CACHE); reruns only compile.
#
# Usage: scripts/sdk-check.sh [typescript|python|go]...   (default: all)
#        scripts/sdk-check.sh node-deps   # install the npm packages; print their directory
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

pulumi_node=3.200.0     # @pulumi/pulumi
typescript=4.9.5        # the SDK's package.json asks for ^4.3.5
types_node=18.19.99     # and @types/node ^18

cache="${SDK_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlplatform/sdk-check/node-$pulumi_node-ts$typescript-types$types_node}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAILED  $*"; failed=$((failed + 1)); }

node_deps() {
	if [[ -f "$cache/.done" ]]; then return; fi
	echo "installing @pulumi/pulumi@$pulumi_node typescript@$typescript @types/node@$types_node into $cache (once)" >&2
	rm -rf "$cache" && mkdir -p "$cache"
	echo '{"private": true}' >"$cache/package.json"
	(cd "$cache" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
		"@pulumi/pulumi@$pulumi_node" "typescript@$typescript" "@types/node@$types_node" >&2)
	touch "$cache/.done"
}

check_typescript() {
	node_deps
	# The pinned versions must satisfy what the SDK's package.json asks for.
	if ! out=$(cd "$cache" && node -e '
		const semver = require("semver");
		const sdk = require(process.argv[1]);
		const want = {...sdk.dependencies, ...sdk.devDependencies};
		let bad = 0;
		for (const [name, range] of Object.entries(want)) {
			const v = require(name + "/package.json").version;
			if (!semver.satisfies(v, range)) { console.log(`${name} ${v} does not satisfy ${range}`); bad++; }
		}
		process.exit(bad ? 1 : 0);' "$root/pulumi/sdk/nodejs/package.json" 2>&1); then
		fail "TypeScript SDK dependencies: $out"
		return
	fi
	mkdir -p "$work/ts/node_modules/@mlplatform"
	for e in "$cache"/node_modules/* "$cache"/node_modules/.bin; do ln -s "$e" "$work/ts/node_modules/"; done
	cp -r pulumi/sdk/nodejs "$work/ts/sdk"
	local built="$work/ts/node_modules/@mlplatform/pulumi"
	# Build the SDK as it is packaged: tsc into bin/, package.json beside it.
	if out=$(cd "$work/ts/sdk" && "$cache/node_modules/.bin/tsc" -p tsconfig.json --outDir "$built" 2>&1); then
		echo "ok      pulumi/sdk/nodejs (tsc $typescript, strict)"
	else
		fail "pulumi/sdk/nodejs (tsc $typescript)"; echo "$out" | sed 's/^/        /'
		return
	fi
	cp pulumi/sdk/nodejs/package.json "$built/"
	cp -r examples/pulumi/typescript "$work/ts/example"
	if out=$(cd "$work/ts/example" && "$cache/node_modules/.bin/tsc" -p tsconfig.json --noEmit 2>&1); then
		echo "ok      examples/pulumi/typescript (tsc $typescript, strict, against the built SDK)"
	else
		fail "examples/pulumi/typescript"; echo "$out" | sed 's/^/        /'
	fi
}

check_python() {
	local py=python3
	local files
	mapfile -t files < <(find pulumi/sdk/python examples/pulumi/python -name '*.py' -o -name '*.pyi' | sort)
	mkdir -p "$work/pyc"
	if out=$("$py" - "$work/pyc" "${files[@]}" 2>&1 <<'PY'
import os, py_compile, sys
for i, f in enumerate(sys.argv[2:]):
    py_compile.compile(f, cfile=os.path.join(sys.argv[1], f"{i}.pyc"), doraise=True)
PY
	); then
		echo "ok      py_compile: ${#files[@]} files of pulumi/sdk/python and examples/pulumi/python"
	else
		fail "py_compile"; echo "$out" | sed 's/^/        /'
	fi

	# Import every module of the SDK, installed as pip would (its
	# metadata carries setup.py's version, which _utilities reads).
	local site="$work/py/site" which="real pulumi package"
	mkdir -p "$site"
	cp -r pulumi/sdk/python/pulumi_mlplatform "$site/"
	local version
	version=$(sed -n 's/^VERSION = "\(.*\)"$/\1/p' pulumi/sdk/python/setup.py)
	mkdir -p "$site/pulumi_mlplatform-$version.dist-info"
	printf 'Metadata-Version: 2.1\nName: pulumi_mlplatform\nVersion: %s\n' "$version" >"$site/pulumi_mlplatform-$version.dist-info/METADATA"
	local path="$site"
	if ! "$py" -c 'import pulumi, semver, parver' >/dev/null 2>&1; then
		which="stand-in pulumi module (scripts/sdk-check/python-standin; the real package is not installed)"
		path="$site:$root/scripts/sdk-check/python-standin"
	fi
	if out=$(cd "$work" && PYTHONPATH="$path" PYTHONDONTWRITEBYTECODE=1 "$py" - "$site" examples/pulumi/python/__main__.py "$root" 2>&1 <<'PY'
import ast, importlib, inspect, os, pkgutil, sys
site, example, root = sys.argv[1], sys.argv[2], sys.argv[3]
import pulumi_mlplatform as sdk
mods = ["pulumi_mlplatform"] + [m.name for m in pkgutil.walk_packages(sdk.__path__, "pulumi_mlplatform.")]
for m in mods:
    importlib.import_module(m)
assert sdk.config.region is None or isinstance(sdk.config.region, str)
if sdk._utilities.get_version() in ("", "0.0.0"):
    sys.exit("the SDK carries no plugin version")
# The Python example: every mlplatform.X it uses exists, and every keyword it
# passes to an Args class is a parameter of that class.
tree = ast.parse(open(os.path.join(root, example)).read())
for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "mlplatform":
        if not hasattr(sdk, node.attr):
            sys.exit(f"{example}:{node.lineno}: pulumi_mlplatform has no {node.attr}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "mlplatform":
        cls = getattr(sdk, node.func.attr)
        if node.func.attr.endswith("Args"):
            params = inspect.signature(cls.__init__).parameters
            for kw in node.keywords:
                if kw.arg not in params:
                    sys.exit(f"{example}:{node.lineno}: {node.func.attr} has no parameter {kw.arg}")
print(f"{len(mods)} modules")
PY
	); then
		echo "ok      pulumi_mlplatform imports ($out, version $version; $which); examples/pulumi/python uses only what it defines"
	else
		fail "pulumi_mlplatform import ($which)"; echo "$out" | sed 's/^/        /'
	fi
}

check_go() {
	if out=$(go build -o /dev/null ./examples/pulumi/go 2>&1); then
		echo "ok      examples/pulumi/go (go build)"
	else
		fail "examples/pulumi/go"; echo "$out" | sed 's/^/        /'
	fi
}

langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(typescript python go)
for l in "${langs[@]}"; do
	case "$l" in
	typescript) check_typescript ;;
	python) check_python ;;
	go) check_go ;;
	node-deps) node_deps && echo "$cache" ;;
	*) echo "unknown language $l" >&2; exit 2 ;;
	esac
done
[[ $failed -eq 0 ]]
