// ONNX Runtime (CPU) reference for hwprobe's MLP inference benchmarks, for
// scripts/bench-hwprobe.sh. It builds the same network hwprobe measures
// (fully connected layers of the given widths, bias, ReLU between layers,
// linear last layer) as an ONNX model in memory, runs it through
// onnxruntime-node's CPU execution provider with one intra-op thread per
// CPU, checks one output against a plain JavaScript evaluation, and prints:
//   ort-mlp dims=<d> p50_ms=<p50> p99_ms=<p99> thr=<samples/s> batch=<b> kernel=<ep> version=<v> threads=<t> graph=<what ran> check=ok
// PRECISION fp32 (the default) builds MatMul, Add, Relu. PRECISION int8
// builds the network as onnxruntime.quantization.quantize_dynamic does with
// per_channel (and as hwprobe's cpu_mlp_int8_* quantize it): weights int8
// symmetric per output channel (initializers), activations uint8
// asymmetric per tensor at run time: DynamicQuantizeLinear, MatMulInteger
// (with the activations' zero point), Cast to float, Mul by
// scale_x * scale_w (per column), Add bias, Relu; ONNX Runtime's graph
// optimizer fuses what it can (level all). The int8 output is checked
// against the fp32 JavaScript evaluation within hwprobe's tolerance: a
// relative L2 error of 0.05 over the output less the last bias (err=).
// QMAX (int8 only, default 127) bounds the quantized weights to
// [-QMAX, QMAX]: 64 on a CPU without VNNI, as quantize_dynamic's
// reduce_range quantizes for such CPUs and as hwprobe does there (AVX2's
// u8 x s8 multiply sums pairs into int16 with saturation).
// Usage: node mlp.mjs DIMS(1024,1024,1024,1024) LATENCY_REPS THROUGHPUT_BATCH THROUGHPUT_REPS THREADS [fp32|int8] [QMAX]
import ort from 'onnxruntime-node';

const [dimsArg = '1024,1024,1024,1024', latReps = '200', thrBatch = '64', thrReps = '10', threadsArg = '2', precision = 'fp32', qmaxArg = '127'] = process.argv.slice(2);
const qmax = Number(qmaxArg);
if (!(Number.isInteger(qmax) && qmax >= 1 && qmax <= 127)) throw new Error(`QMAX ${qmaxArg}: want an integer in [1, 127]`);
if (precision !== 'fp32' && precision !== 'int8') throw new Error(`precision ${precision}: want fp32 or int8`);
const int8 = precision === 'int8';
const dims = dimsArg.split(',').map(Number);
const threads = Number(threadsArg);

// Minimal protobuf writer: enough of onnx.proto3 for this graph.
const varint = (n) => {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
};
const key = (field, wire) => varint((field << 3) | wire);
const vint = (field, n) => Buffer.concat([key(field, 0), varint(n)]);
const bytes = (field, b) => Buffer.concat([key(field, 2), varint(b.length), b]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field, ...parts) => bytes(field, Buffer.concat(parts));

const FLOAT = 1, UINT8 = 2, INT8 = 3;
const tensor = (name, shape, data, type = FLOAT) =>
  msg(5, ...shape.map((d) => vint(1, d)), vint(2, type), str(8, name), bytes(9, Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
const valueInfo = (field, name, shape) =>
  msg(field, str(1, name), msg(2, msg(1, vint(1, FLOAT), msg(2, ...shape.map((d) => (typeof d === 'string' ? msg(1, str(2, d)) : msg(1, vint(1, d))))))));
// attrs: integer attributes (AttributeProto name=1, i=3, type=20 INT=2).
const node = (op, inputs, outputs, name, attrs = {}) =>
  msg(1, ...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(3, name), str(4, op),
    ...Object.entries(attrs).map(([k, v]) => msg(5, str(1, k), vint(3, v), vint(20, 2))));

// Per output channel symmetric int8 weights, as hwprobe quantizes them:
// scale_j = max|W[:, j]| / QMAX, round half to even, [-QMAX, QMAX].
const roundEven = (v) => { const r = Math.round(v); return Math.abs(v - Math.trunc(v)) === 0.5 && r % 2 !== 0 ? r - 1 : r; };
const quantizeWeights = (w, i, o) => {
  const scale = new Float32Array(o), q = new Int8Array(i * o);
  for (let p = 0; p < i; p++) for (let j = 0; j < o; j++) scale[j] = Math.max(scale[j], Math.abs(w[p * o + j]));
  for (let j = 0; j < o; j++) scale[j] = Math.fround(scale[j] / qmax) || 1;
  for (let p = 0; p < i; p++) for (let j = 0; j < o; j++) q[p * o + j] = Math.max(-qmax, Math.min(qmax, roundEven(Math.fround(w[p * o + j] / scale[j]))));
  return { scale, q };
};

// Deterministic weights (a small LCG), scaled as hwprobe's He-style init.
let seed = 12345;
const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const W = [], B = [];
const graph = [];
let cur = 'x';
for (let l = 0; l + 1 < dims.length; l++) {
  const [i, o] = [dims[l], dims[l + 1]];
  const w = new Float32Array(i * o).map(() => rnd() * (2 / i));
  const b = new Float32Array(o).map(() => rnd() * 0.01);
  W.push(w), B.push(b);
  graph.push(tensor(`b${l}`, [o], b));
  if (int8) {
    const { scale, q } = quantizeWeights(w, i, o);
    graph.push(tensor(`wq${l}`, [i, o], q, INT8), tensor(`ws${l}`, [o], scale));
    graph.push(node('DynamicQuantizeLinear', [cur], [`xq${l}`, `xs${l}`, `xz${l}`], `dql${l}`));
    graph.push(node('MatMulInteger', [`xq${l}`, `wq${l}`, `xz${l}`], [`mi${l}`], `matmulinteger${l}`));
    graph.push(node('Cast', [`mi${l}`], [`mf${l}`], `cast${l}`, { to: FLOAT }));
    graph.push(node('Mul', [`xs${l}`, `ws${l}`], [`sc${l}`], `scale${l}`));
    graph.push(node('Mul', [`mf${l}`, `sc${l}`], [`m${l}`], `rescale${l}`));
  } else {
    graph.push(tensor(`w${l}`, [i, o], w));
    graph.push(node('MatMul', [cur, `w${l}`], [`m${l}`], `matmul${l}`));
  }
  const last = l + 2 === dims.length;
  graph.push(node('Add', [`m${l}`, `b${l}`], [last ? 'y' : `z${l}`], `add${l}`));
  if (!last) graph.push(node('Relu', [`z${l}`], [`a${l}`], `relu${l}`)), (cur = `a${l}`);
}
graph.push(str(2, 'mlp'), valueInfo(11, 'x', ['batch', dims[0]]), valueInfo(12, 'y', ['batch', dims[dims.length - 1]]));
const model = Buffer.concat([vint(1, 8), str(2, 'hwprobe-bench'), msg(7, ...graph), msg(8, str(1, ''), vint(2, 17))]);

const session = await ort.InferenceSession.create(model, {
  executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
});
const input = (batch) => new ort.Tensor('float32', new Float32Array(batch * dims[0]).map(() => rnd()), [batch, dims[0]]);

// Correctness: one sample against a float64 JavaScript evaluation.
const x1 = input(1);
const y1 = (await session.run({ x: x1 })).y.data;
let a = Array.from(x1.data);
for (let l = 0; l < W.length; l++) {
  const [i, o] = [dims[l], dims[l + 1]];
  const z = new Float64Array(o);
  for (let j = 0; j < o; j++) {
    let s = B[l][j];
    for (let p = 0; p < i; p++) s += a[p] * W[l][p * o + j];
    z[j] = l + 1 < W.length ? Math.max(s, 0) : s;
  }
  a = Array.from(z);
}
let err = 0;
if (int8) {
  // hwprobe's check: relative L2 over the output less the last bias.
  let d = 0, n = 0;
  const bl = B[B.length - 1];
  for (let j = 0; j < a.length; j++) d += (y1[j] - a[j]) ** 2, n += (a[j] - bl[j]) ** 2;
  err = Math.sqrt(d / n);
  if (!(err <= 0.05)) {
    console.log(`ort-mlp dims=${dimsArg} precision=int8 check=WRONG relative_l2=${err}`);
    process.exit(1);
  }
} else {
  for (let j = 0; j < a.length; j++) {
    if (!(Math.abs(y1[j] - a[j]) <= 1e-3 * (Math.abs(a[j]) + 1e-3))) {
      console.log(`ort-mlp dims=${dimsArg} check=WRONG y[${j}]=${y1[j]} want=${a[j]}`);
      process.exit(1);
    }
  }
}

const pct = (xs, p) => { const s = [...xs].sort((u, v) => u - v); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };
for (let i = 0; i < 20; i++) await session.run({ x: x1 }); // warm-up, as hwprobe
const lat = [];
for (let r = 0; r < Number(latReps); r++) {
  const t0 = process.hrtime.bigint();
  await session.run({ x: x1 });
  lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
const xb = input(Number(thrBatch));
await session.run({ x: xb });
const thr = [];
for (let r = 0; r < Number(thrReps); r++) {
  const t0 = process.hrtime.bigint();
  await session.run({ x: xb });
  thr.push(Number(thrBatch) / (Number(process.hrtime.bigint() - t0) / 1e9));
}
console.log(`ort-mlp dims=${dimsArg} p50_ms=${pct(lat, 50).toFixed(4)} p99_ms=${pct(lat, 99).toFixed(4)} thr=${pct(thr, 50).toFixed(1)} batch=${thrBatch} kernel=cpu-ep version=onnxruntime-${ort.env.versions.common} threads=${threads} graph=${int8 ? `DynamicQuantizeLinear+MatMulInteger(u8xs8,per-channel,w_max=${qmax})+Cast+Mul+Add+Relu` : 'MatMul+Add+Relu(fp32)'}${int8 ? ` err=${err.toPrecision(4)}` : ''} check=ok`);
