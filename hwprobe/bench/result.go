// Package bench runs hwprobe's training and inference benchmarks on the CPU
// and, when the CUDA libraries can be loaded at run time, on the GPUs.
package bench

// Result is one measured figure. A benchmark that could not run has Ran false
// and a Reason; it is never reported as a pass.
type Result struct {
	Name           string            `json:"name"`              // stable id, e.g. cpu_sgemm, gpu_gemm_bf16
	Device         string            `json:"device"`            // "cpu" or "gpu0", "gpu1", ... or "gpu:all"
	Backend        string            `json:"backend,omitempty"` // e.g. builtin-avx512, openblas, cublasLt
	Ran            bool              `json:"ran"`               // false: not run, see Reason
	Reason         string            `json:"reason,omitempty"`  // why it did not run
	Value          float64           `json:"value,omitempty"`   // the figure, in Unit (median over repetitions)
	Unit           string            `json:"unit,omitempty"`    // GFLOP/s, MB/s, samples/s, ms, ...
	HigherIsBetter bool              `json:"higher_is_better"`
	Reps           int               `json:"reps,omitempty"`       // repetitions measured (after warm-up)
	Spread         float64           `json:"spread,omitempty"`     // (max-min)/median over repetitions
	Peak           float64           `json:"peak,omitempty"`       // catalog or computed peak in Unit; 0 when unknown
	Efficiency     float64           `json:"efficiency,omitempty"` // Value/Peak; 0 when Peak is unknown
	Params         map[string]string `json:"params,omitempty"`     // n, batch, threads, ...
}
