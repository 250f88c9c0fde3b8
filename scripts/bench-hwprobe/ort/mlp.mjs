// ONNX Runtime (CPU) reference for hwprobe's MLP inference benchmark, for
// scripts/bench-hwprobe.sh. It builds the same network hwprobe measures
// (fully connected layers of the given widths, bias, ReLU between layers,
// linear last layer, fp32) as an ONNX model in memory, runs it through
// onnxruntime-node's CPU execution provider with one intra-op thread per
// CPU, checks one output against a plain JavaScript evaluation, and prints:
//   ort-mlp dims=<d> p50_ms=<p50> p99_ms=<p99> thr=<samples/s> batch=<b> kernel=<ep> version=<v> threads=<t> check=ok
// Usage: node mlp.mjs DIMS(1024,1024,1024,1024) LATENCY_REPS THROUGHPUT_BATCH THROUGHPUT_REPS THREADS
import ort from 'onnxruntime-node';

const [dimsArg = '1024,1024,1024,1024', latReps = '200', thrBatch = '64', thrReps = '10', threadsArg = '2'] = process.argv.slice(2);
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

const FLOAT = 1;
const tensor = (name, shape, data) =>
  msg(5, ...shape.map((d) => vint(1, d)), vint(2, FLOAT), str(8, name), bytes(9, Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
const valueInfo = (field, name, shape) =>
  msg(field, str(1, name), msg(2, msg(1, vint(1, FLOAT), msg(2, ...shape.map((d) => (typeof d === 'string' ? msg(1, str(2, d)) : msg(1, vint(1, d))))))));
const node = (op, inputs, outputs, name) => msg(1, ...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(3, name), str(4, op));

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
  graph.push(tensor(`w${l}`, [i, o], w), tensor(`b${l}`, [o], b));
  graph.push(node('MatMul', [cur, `w${l}`], [`m${l}`], `matmul${l}`));
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
for (let j = 0; j < a.length; j++) {
  if (!(Math.abs(y1[j] - a[j]) <= 1e-3 * (Math.abs(a[j]) + 1e-3))) {
    console.log(`ort-mlp dims=${dimsArg} check=WRONG y[${j}]=${y1[j]} want=${a[j]}`);
    process.exit(1);
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
console.log(`ort-mlp dims=${dimsArg} p50_ms=${pct(lat, 50).toFixed(4)} p99_ms=${pct(lat, 99).toFixed(4)} thr=${pct(thr, 50).toFixed(1)} batch=${thrBatch} kernel=cpu-ep version=onnxruntime-${ort.env.versions.common} threads=${threads} check=ok`);
