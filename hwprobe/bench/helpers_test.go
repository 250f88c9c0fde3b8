package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// catalogKernel is a GEMM micro-kernel of this package (kernelCatalog, per
// architecture) and what a host needs to run it.
type catalogKernel struct {
	name    string
	bf16    bool        // a bf16 engine's kernel (bf16Kernel)
	needs   string      // the instruction sets it needs, for a skip message
	hostHas func() bool // whether this host has them; nil: every host
}

// kernelUnderTest is a kernel this host runs, with the tolerance of its
// products against float64.
type kernelUnderTest struct {
	kern sgemmKernel
	bf16 bool
	tol  float64
}

func newKernelUnderTest(k sgemmKernel, bf16 bool) kernelUnderTest {
	if bf16 {
		return kernelUnderTest{k, true, 1.6e-2}
	}
	return kernelUnderTest{k, false, 1e-5}
}

// hostKernel is the kernel this host lists under name.
func hostKernel(name string, bf16 bool) (sgemmKernel, bool) {
	if bf16 {
		k, ok := bf16Kernel()
		return k, ok && k.name == name
	}
	for _, k := range sgemmKernels() {
		if k.name == name {
			return k, true
		}
	}
	return sgemmKernel{}, false
}

// hostKernels are the kernels this host runs (for benchmarks): the fp32
// ones fastest first, then the bf16 one when withBF16.
func hostKernels(withBF16 bool) []kernelUnderTest {
	var ks []kernelUnderTest
	for _, k := range sgemmKernels() {
		ks = append(ks, newKernelUnderTest(k, false))
	}
	if k, ok := bf16Kernel(); ok && withBF16 {
		ks = append(ks, newKernelUnderTest(k, true))
	}
	return ks
}

// kernelsUnderTest are the kernels of kernelCatalog this host runs (the
// bf16 one only when withBF16). Each kernel it cannot run is a subtest of
// t skipped naming what the host lacks: a kernel is never left out of a
// test silently.
func kernelsUnderTest(t *testing.T, withBF16 bool) []kernelUnderTest {
	t.Helper()
	var ks []kernelUnderTest
	for _, c := range kernelCatalog() {
		if c.bf16 && !withBF16 {
			continue
		}
		k, ok := hostKernel(c.name, c.bf16)
		if !ok {
			t.Run(c.name, func(t *testing.T) {
				t.Skipf("kernel %s not tested: it needs %s, not all present on this host", c.name, c.needs)
			})
			continue
		}
		ks = append(ks, newKernelUnderTest(k, c.bf16))
	}
	return ks
}

// bf16KernelUnderTest is the bf16 kernel of kernelCatalog; a host that
// cannot run it (or an architecture without one) skips t, naming why.
func bf16KernelUnderTest(t *testing.T) sgemmKernel {
	t.Helper()
	for _, c := range kernelCatalog() {
		if !c.bf16 {
			continue
		}
		k, ok := hostKernel(c.name, true)
		if !ok {
			t.Skipf("kernel %s not tested: it needs %s, not all present on this host", c.name, c.needs)
		}
		return k
	}
	t.Skip("no bf16 kernel in this build: " + asmMissing())
	return sgemmKernel{}
}

// TestKernelCatalog: this host lists exactly the kernels of kernelCatalog
// whose instruction sets it has, and no kernel the catalog does not name;
// so kernelsUnderTest skips a kernel only where the host lacks what it
// needs, and a new kernel cannot go untested unnoticed.
func TestKernelCatalog(t *testing.T) {
	known := map[string]bool{}
	for _, c := range kernelCatalog() {
		known[c.name] = true
		want := c.hostHas == nil || c.hostHas()
		if _, got := hostKernel(c.name, c.bf16); got != want {
			t.Errorf("kernel %s (needs %q): listed by this host %v, want %v", c.name, c.needs, got, want)
		}
	}
	for _, k := range hostKernels(true) {
		if !known[k.kern.name] {
			t.Errorf("kernel %s is not in kernelCatalog", k.kern.name)
		}
	}
}
