//go:build !amd64 || purego

package bench

import "runtime"

// kernelCatalog is every GEMM micro-kernel this package has off amd64 (or
// in a purego build): the portable one.
func kernelCatalog() []catalogKernel { return []catalogKernel{{name: "builtin-go"}} }

// asmMissing says why the package's assembly does not run here.
// asmStreams are the assembly STREAM kernels: none in this build.
func asmStreams() []asmStream { return []asmStream{{"assembly", streamImpl{}, asmMissing()}} }

// asmGemvs are the assembly GEMV kernel sets: none in this build.
func asmGemvs() []asmGemv { return []asmGemv{{"assembly", gemvAdd, asmMissing()}} }

// asmBiasActs are the assembly bias-and-activation kernels: none in this
// build.
func asmBiasActs() []asmBiasAct { return []asmBiasAct{{"assembly", biasActSpan, asmMissing()}} }

func asmMissing() string {
	if runtime.GOARCH == "amd64" {
		return "a purego build has no assembly kernels"
	}
	return "this package has no assembly kernels for " + runtime.GOARCH
}

// asmQuants are the int8 MLP's element-wise kernel sets: none in this
// build.
func asmQuants() []asmQuant {
	return []asmQuant{{"assembly", quantizeSpan, minMaxSpan, dequantSpan, asmMissing()}}
}
