//go:build (linux || darwin || freebsd) && (amd64 || arm64) && !nodynamic

// Run-time library loading (host BLAS, CUDA, NCCL) goes through purego: no
// C toolchain or CUDA is needed to build, but the binary then links the
// system's dynamic loader. Build with -tags nodynamic for a fully static
// binary whose BLAS and GPU benchmarks report not run.

package bench

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ebitengine/purego"
)

// dlopenFirst opens the first library of names that loads; names may be
// sonames (resolved by the dynamic loader) or paths.
func dlopenFirst(names []string) (uintptr, string, error) {
	var errs []error
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, n, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return 0, "", errors.New("no library names given")
	}
	return 0, "", fmt.Errorf("none of %s could be loaded (%s: %w)", strings.Join(names, ", "), names[0], errs[0])
}

// bindSymbols resolves each symbol in h and binds it to its Go function
// pointer; it fails on the first missing symbol, before any call is made.
func bindSymbols(h uintptr, lib string, syms map[string]any) error {
	for name, fptr := range syms {
		addr, err := purego.Dlsym(h, name)
		if err != nil {
			return fmt.Errorf("resolving %s in %s: %w", name, lib, err)
		}
		purego.RegisterFunc(fptr, addr)
	}
	return nil
}

func hasSymbol(h uintptr, name string) bool {
	_, err := purego.Dlsym(h, name)
	return err == nil
}

func dlclose(h uintptr) { _ = purego.Dlclose(h) }

const dynamicLoading = true

func symbolAddr(h uintptr, name string) uintptr {
	a, _ := purego.Dlsym(h, name)
	return a
}

// mappedPath is the file mapped at addr, read from /proc/self/maps: the
// library the loader chose for a name. "" where the platform has no such
// file or addr is in no file mapping.
func mappedPath(addr uintptr) string {
	if addr == 0 {
		return ""
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	return pathInMaps(string(b), uint64(addr))
}
