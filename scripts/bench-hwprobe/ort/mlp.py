# ONNX Runtime (CPU) reference for hwprobe's MLP inference benchmarks, the
# Python twin of mlp.mjs for hosts with onnxruntime and onnx for Python but
# no Node (scripts/device-amx-check.sh). Same network, quantization,
# correctness check and output line as mlp.mjs; see there.
# Usage: python3 mlp.py DIMS LATENCY_REPS THROUGHPUT_BATCH THROUGHPUT_REPS THREADS [fp32|int8] [QMAX]
import sys, time
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
import onnxruntime as ort

dims_arg, lat_reps, thr_batch, thr_reps, threads, prec, qmax = (sys.argv[1:] + ["1024,1024,1024,1024", "200", "64", "10", "2", "fp32", "127"][len(sys.argv) - 1:])[:7]
qmax = int(qmax)
if not 1 <= qmax <= 127:
    sys.exit(f"QMAX {qmax}: want an integer in [1, 127]")
dims = [int(d) for d in dims_arg.split(",")]
lat_reps, thr_batch, thr_reps, threads = int(lat_reps), int(thr_batch), int(thr_reps), int(threads)
int8 = prec == "int8"
rng = np.random.default_rng(12345)
W, B, nodes, inits = [], [], [], []
cur = "x"
for l in range(len(dims) - 1):
    i, o = dims[l], dims[l + 1]
    w = ((rng.random((i, o)) * 2 - 1) * (2 / i)).astype(np.float32)
    b = ((rng.random(o) * 2 - 1) * 0.01).astype(np.float32)
    W.append(w); B.append(b)
    inits.append(numpy_helper.from_array(b, f"b{l}"))
    if int8:
        scale = (np.abs(w).max(axis=0) / np.float32(qmax)).astype(np.float32)
        scale[scale == 0] = 1
        q = np.clip(np.rint(w / scale), -qmax, qmax).astype(np.int8)  # rint: half to even
        inits += [numpy_helper.from_array(q, f"wq{l}"), numpy_helper.from_array(scale.astype(np.float32), f"ws{l}")]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [cur], [f"xq{l}", f"xs{l}", f"xz{l}"]),
            helper.make_node("MatMulInteger", [f"xq{l}", f"wq{l}", f"xz{l}"], [f"mi{l}"]),
            helper.make_node("Cast", [f"mi{l}"], [f"mf{l}"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"xs{l}", f"ws{l}"], [f"sc{l}"]),
            helper.make_node("Mul", [f"mf{l}", f"sc{l}"], [f"m{l}"]),
        ]
    else:
        inits.append(numpy_helper.from_array(w, f"w{l}"))
        nodes.append(helper.make_node("MatMul", [cur, f"w{l}"], [f"m{l}"]))
    last = l + 2 == len(dims)
    nodes.append(helper.make_node("Add", [f"m{l}", f"b{l}"], ["y" if last else f"z{l}"]))
    if not last:
        nodes.append(helper.make_node("Relu", [f"z{l}"], [f"a{l}"]))
        cur = f"a{l}"
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dims[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", dims[-1]])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
so = ort.SessionOptions()
so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
inp = lambda batch: (rng.random((batch, dims[0])) * 2 - 1).astype(np.float32)

x1 = inp(1)
y1 = sess.run(None, {"x": x1})[0][0]
a = x1[0].astype(np.float64)
for l in range(len(W)):
    z = a @ W[l].astype(np.float64) + B[l]
    a = np.maximum(z, 0) if l + 1 < len(W) else z
err = 0.0
if int8:
    err = float(np.sqrt(((y1 - a) ** 2).sum() / ((a - B[-1]) ** 2).sum()))
    if not err <= 0.05:
        print(f"ort-mlp dims={dims_arg} precision=int8 check=WRONG relative_l2={err}"); sys.exit(1)
elif not np.all(np.abs(y1 - a) <= 1e-3 * (np.abs(a) + 1e-3)):
    print(f"ort-mlp dims={dims_arg} check=WRONG"); sys.exit(1)

pct = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(np.ceil(p / 100 * len(xs))) - 1)]
for _ in range(20):
    sess.run(None, {"x": x1})
lat = []
for _ in range(lat_reps):
    t0 = time.perf_counter(); sess.run(None, {"x": x1}); lat.append((time.perf_counter() - t0) * 1e3)
xb = inp(thr_batch)
sess.run(None, {"x": xb})
thr = []
for _ in range(thr_reps):
    t0 = time.perf_counter(); sess.run(None, {"x": xb}); thr.append(thr_batch / (time.perf_counter() - t0))
g = f"DynamicQuantizeLinear+MatMulInteger(u8xs8,per-channel,w_max={qmax})+Cast+Mul+Add+Relu" if int8 else "MatMul+Add+Relu(fp32)"
print(f"ort-mlp dims={dims_arg} p50_ms={pct(lat, 50):.4f} p99_ms={pct(lat, 99):.4f} thr={pct(thr, 50):.1f} batch={thr_batch} kernel=cpu-ep version=onnxruntime-{ort.__version__}(python) threads={threads} graph={g}" + (f" err={err:.4g}" if int8 else "") + " check=ok")
