#!/usr/bin/env bash
# device-gpu-check.sh: run hwprobe's GPU paths on a real NVIDIA GPU once and
# compare them with PyTorch at its best in the same run.
#
#   scripts/device-gpu-check.sh [HWPROBE] [OUTDIR]
#
# HWPROBE defaults to bin/hwprobe (a release build: make build-hwprobe),
# OUTDIR to $OUT or ./gpu-check-out. Steps, each under its own timeout and
# each run whether the one before it failed or not:
#   1. nvidia-smi
#   2. hwprobe probe --no-imds                      -> probe.json
#   3. hwprobe bench --quick --only 'gpu_*'         -> bench-quick.json
#   4. the PyTorch reference (bf16/fp16/fp8 GEMM n=8192 and 16384, device
#      and host copies)                              -> torch-ref.json
#   5. hwprobe bench --only 'gpu_*' (full sizes), the GPU's clocks and
#      power sampled once a second meanwhile         -> bench-full.json
#   6. the PyTorch reference again                   -> torch-ref2.json
#   7. hwprobe validate against a one-GPU profile   -> validate.json
# Everything printed goes to log.txt too; a summary table comes last.
# CUDA libraries are found under the Python environment's nvidia packages
# (the ones PyTorch loads) first, then the CUDA toolkit, and put on
# LD_LIBRARY_PATH. The GPU model of the profile is GPU_MODEL (default H200).
set -u

HW=${1:-bin/hwprobe}
O=${2:-${OUT:-./gpu-check-out}}
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
GPU_MODEL=${GPU_MODEL:-H200}
mkdir -p "$O"
if [ -z "${GPU_CHECK_LOGGED:-}" ]; then
  # Once more, with everything printed copied into log.txt.
  GPU_CHECK_LOGGED=1 bash "$0" "$HW" "$O" 2>&1 | tee "$O/log.txt"
  exit "${PIPESTATUS[0]}"
fi

step() { printf '\n===== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
rc() { printf -- '----- %s: exit %s after %ss\n' "$1" "$2" "$3"; }

step "environment"
uname -a
date -u
echo "hwprobe: $HW ($("$HW" version 2>/dev/null || echo '?'))"
echo "python: $PY"

# Library directories: the Python environment's nvidia packages first (so
# hwprobe loads the cuBLAS PyTorch uses), then the toolkit, then the driver.
libdirs=""
for lib in 'libcudart.so.1[0-9]*' 'libcublasLt.so.1[0-9]*' 'libnccl.so.2*'; do
  for root in /opt/torch/.venv /usr/local/cuda /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
    [ -d "$root" ] || continue
    d=$(find "$root" -name "$lib" -not -path '*/stubs/*' 2>/dev/null | head -1)
    if [ -n "$d" ]; then
      d=$(dirname "$d")
      case ":$libdirs:" in *":$d:"*) ;; *) libdirs="$libdirs${libdirs:+:}$d" ;; esac
      break
    fi
  done
done
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -d "$d" ] && libdirs="$libdirs${libdirs:+:}$d"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
for so in libcudart.so.13 libcudart.so.12 libcublasLt.so.13 libcublasLt.so.12 libnccl.so.2 libnvidia-ml.so.1; do
  IFS=: read -ra ds <<<"$LD_LIBRARY_PATH"
  for d in "${ds[@]}"; do
    if [ -e "$d/$so" ]; then echo "  $so -> $(readlink -f "$d/$so")"; break; fi
  done
done

step "nvidia-smi"
t0=$SECONDS
timeout 30 nvidia-smi >"$O/nvidia-smi.txt" 2>&1
r=$?
timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max,clocks.sm,clocks.max.sm,power.limit,ecc.mode.current --format=csv >>"$O/nvidia-smi.txt" 2>&1
cat "$O/nvidia-smi.txt"
rc nvidia-smi $r $((SECONDS - t0))

step "hwprobe probe --no-imds"
t0=$SECONDS
timeout 60 "$HW" probe --no-imds --timeout 45s >"$O/probe.json"
r=$?
head -c 6000 "$O/probe.json"
rc probe $r $((SECONDS - t0))

step "hwprobe bench --quick --only gpu_*"
t0=$SECONDS
timeout 120 "$HW" bench --quick --only 'gpu_*' --format json >"$O/bench-quick.json"
r=$?
rc bench-quick $r $((SECONDS - t0))

torch_ref() {
timeout 120 env PYTHONUNBUFFERED=1 "$PY" - "$O/$1" <<'EOF'
import ctypes, json, os, statistics, sys
out = {}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    out["device"] = torch.cuda.get_device_name(0)
    dev = torch.device("cuda")

    def timed(f, reps, warm=5):
        for _ in range(warm):
            f()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); f(); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b) / 1e3)
        return ts

    for n in (8192, 16384):
      for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        x = torch.randn(n, n, device=dev, dtype=dt)
        y = torch.randn(n, n, device=dev, dtype=dt)
        ts = timed(lambda: torch.matmul(x, y), 30)
        r = [2 * n**3 / t / 1e12 for t in ts]
        # the product checked against fp32 on a sample of rows
        z = torch.matmul(x, y)
        ref = torch.matmul(x[:64].float(), y.float())
        err = ((z[:64].float() - ref).norm() / ref.norm()).item()
        out["gemm_%s_%d" % (name, n)] = {"n": n, "median_tflops": statistics.median(r), "best_tflops": max(r), "reps": len(r), "rel_err": err}
        del x, y, z
      try:
        x = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        y = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.tensor(1.0, device=dev)
        f = lambda: torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        ts = timed(f, 30)
        r = [2 * n**3 / t / 1e12 for t in ts]
        out["gemm_fp8_%d" % n] = {"n": n, "median_tflops": statistics.median(r), "best_tflops": max(r), "reps": len(r), "api": "torch._scaled_mm"}
        del x, y
      except Exception as e:
        out["gemm_fp8_%d" % n] = {"error": repr(e)}
    for size in (256 << 20, 1 << 30):
        src = torch.randint(0, 255, (size,), device=dev, dtype=torch.uint8)
        dst = torch.empty_like(src)
        ts = timed(lambda: dst.copy_(src), 30)
        r = [2 * size / t / 1e9 for t in ts]
        out["d2d_%d" % size] = {"bytes": size, "median_gbps": statistics.median(r), "best_gbps": max(r), "reps": len(r), "counted": "read+write"}
        del src, dst
    size = 256 << 20
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    devb = torch.empty(size, dtype=torch.uint8, device=dev)
    for name, f in (("h2d", lambda: devb.copy_(host, non_blocking=True)), ("d2h", lambda: host.copy_(devb, non_blocking=True))):
        ts = timed(f, 20)
        r = [size / t / 1e9 for t in ts]
        out[name + "_%d" % size] = {"bytes": size, "median_gbps": statistics.median(r), "best_gbps": max(r), "reps": len(r), "counted": "pinned host memory"}
    del host, devb
    torch.cuda.synchronize()
    # versions of the libraries this process loaded
    libs = {}
    for line in open("/proc/self/maps"):
        p = line.split()[-1]
        for key in ("libcublasLt.so", "libcublas.so", "libcudart.so", "libnccl.so"):
            if os.path.basename(p).startswith(key):
                libs[key] = p
    out["libraries"] = libs
    if "libcublasLt.so" in libs:
        lt = ctypes.CDLL(libs["libcublasLt.so"])
        lt.cublasLtGetVersion.restype = ctypes.c_size_t
        out["cublasLt_version"] = lt.cublasLtGetVersion()
    try:
        v = ctypes.c_int()
        rt = ctypes.CDLL(libs.get("libcudart.so", "libcudart.so.13"))
        rt.cudaRuntimeGetVersion(ctypes.byref(v)); out["cudart_version"] = v.value
        rt.cudaDriverGetVersion(ctypes.byref(v)); out["driver_cuda_version"] = v.value
    except OSError as e:
        out["cudart_version"] = repr(e)
except Exception as e:
    out["error"] = repr(e)
json.dump(out, open(sys.argv[1], "w"), indent=2)
print(json.dumps(out, indent=2))
EOF
}

step "PyTorch reference, 1 of 2 (after the quick run)"
t0=$SECONDS
torch_ref torch-ref.json
r=$?
rc torch-ref $r $((SECONDS - t0))

# The cuBLASLt hwprobe loads (first on LD_LIBRARY_PATH), with its version.
timeout 30 "$PY" - <<'EOF'
import ctypes
for so in ("libcublasLt.so.13", "libcublasLt.so.12"):
    try:
        lt = ctypes.CDLL(so)
    except OSError:
        continue
    lt.cublasLtGetVersion.restype = ctypes.c_size_t
    print("hwprobe's", so, "version", lt.cublasLtGetVersion())
    break
for so in ("libnccl.so.2",):
    try:
        n = ctypes.CDLL(so); v = ctypes.c_int(); n.ncclGetVersion(ctypes.byref(v)); print("libnccl.so.2 version", v.value)
    except OSError as e:
        print(so, e)
EOF

step "hwprobe bench --only gpu_* (full sizes)"
t0=$SECONDS
mon=$(mktemp)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 1000 >"$mon" 2>&1 &
monpid=$!
timeout 150 "$HW" bench --only 'gpu_*' --format json >"$O/bench-full.json"
r=$?
kill "$monpid" 2>/dev/null
rc bench-full $r $((SECONDS - t0))
echo "GPU clocks, power, temperature and clock-event reasons, once a second during the full run:"
cat "$mon"

step "PyTorch reference, 2 of 2 (after the full run)"
t0=$SECONDS
torch_ref torch-ref2.json
r=$?
rc torch-ref2 $r $((SECONDS - t0))

step "hwprobe validate (one-GPU profile)"
prof=$(mktemp -d)/gpu1.hcl
cat >"$prof" <<EOF
# One $GPU_MODEL, as a single-GPU node would declare it.
name = "one-gpu-check"

gpu {
  model              = "$GPU_MODEL"
  count              = 1
  min_memory_gib     = 139
  mig_enabled        = false
  max_temperature_c  = 85
  xid_seconds        = 2
}

benchmark "gpu_gemm_bf16" {
  min_efficiency = 0.6
}

benchmark "gpu_hbm_d2d" {
  min_efficiency = 0.6
}

benchmark "gpu_mlp_infer_p99" {
  max      = 25
  optional = true
}
EOF
cat "$prof"
t0=$SECONDS
timeout 120 "$HW" validate --no-imds --profile "$prof" --format json >"$O/validate.json"
r=$?
cat "$O/validate.json"
rc validate $r $((SECONDS - t0))

step "summary"
timeout 30 "$PY" - "$O" <<'EOF'
import json, os, sys
o = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(o, name)))
    except Exception as e:
        return {"_error": repr(e)}
refs = {"bench-quick.json": load("torch-ref.json"), "bench-full.json": load("torch-ref2.json")}
ref = refs["bench-quick.json"]
print("reference: torch %s, CUDA %s, cuBLASLt %s, %s (%s)" % (ref.get("torch"), ref.get("cuda"), ref.get("cublasLt_version"), ref.get("device"), ref.get("libraries", {}).get("libcublasLt.so")))
libs = set()
rows = []
for run in ("bench-quick.json", "bench-full.json"):
    b = load(run)
    ref = refs[run]
    for r in b.get("results", []):
        p = r.get("params", {})
        if p.get("library_path"):
            libs.add("%s %s" % (p["library_path"], p.get("library_version", "")))
    for r in b.get("results", []):
        p = r.get("params", {})
        size = p.get("n") or p.get("bytes") or p.get("batch") or ""
        if not r.get("ran"):
            rows.append((run[6:-5], r["name"], r.get("device", ""), "NOT RUN", "", "", "", r.get("reason", "")[:160]))
            continue
        eff = "%.1f%%" % (100 * r["efficiency"]) if r.get("peak") else "-"
        refv, ratio = "", ""
        key = {"gpu_gemm_bf16": "gemm_bf16_", "gpu_gemm_fp16": "gemm_fp16_", "gpu_gemm_fp8": "gemm_fp8_"}.get(r["name"], "-") + p.get("n", "")
        if "median_tflops" in ref.get(key, {}):
            refv = "%.1f" % ref[key]["median_tflops"]
            ratio = "%.3f" % (r["value"] / ref[key]["median_tflops"])
        cp = {"gpu_hbm_d2d": "d2d_", "gpu_h2d": "h2d_", "gpu_d2h": "d2h_"}.get(r["name"])
        if cp and (cp + p.get("bytes", "")) in ref:
            rv = ref[cp + p["bytes"]]["median_gbps"]
            refv, ratio = "%.0f" % rv, "%.3f" % (r["value"] / rv)
        rows.append((run[6:-5], r["name"], r["device"], "%.4g %s" % (r["value"], r["unit"]), eff, refv, ratio,
                     "size=%s reps=%s spread=%.1f%%" % (size, r.get("reps"), 100 * r.get("spread", 0))))
v = load("validate.json")
for c in v.get("checks", []):
    rows.append(("validate", c["id"], c.get("subject", ""), c["status"], "", "", "", (c.get("observed") or c.get("reason") or "")[:90]))
if "exit_code" in v:
    rows.append(("validate", "exit_code", "", str(v["exit_code"]), "", "", "", ""))
hdr = ("run", "check", "device", "value", "of peak", "torch", "ratio", "note")
w = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(7)]
for l in sorted(libs):
    print("hwprobe loaded:", l)
for x in [hdr] + rows:
    print("  ".join(str(x[i]).ljust(w[i]) for i in range(7)) + "  " + str(x[7]))
EOF
