//go:build amd64 && !purego

package bench

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

//go:noescape
func amxBF16Kernel32x32(k int, a, b, c *float32, ldc int)

//go:noescape
func amxBF16Kernel32x32Set(k int, a, b, c *float32, ldc int)

//go:noescape
func amxI8Kernel32x32(k int, a, b, c *float32, ldc int)

//go:noescape
func amxI8Kernel32x32Set(k int, a, b, c *float32, ldc int)

// Linux's arch_prctl request for permission to use an XSAVE feature the
// kernel enables only on demand, and AMX's tile data (XFEATURE_XTILEDATA).
const (
	archReqXcompPerm  = 0x1023
	xfeatureXTileData = 18
)

var amxState struct {
	once sync.Once
	err  error
}

// amxPermission asks Linux, once per process, for the AMX tile data
// state. Linux (5.16 and later) enables it only on request; without the
// permission the first tile instruction raises SIGILL. An error says why
// AMX cannot run: no AMX in CPUID, or the kernel's refusal.
func amxPermission() error {
	amxState.once.Do(func() {
		if !cpuid.CPU.Supports(cpuid.AMXTILE) {
			amxState.err = fmt.Errorf("no AMX tiles (amx_tile) on this CPU")
			return
		}
		if _, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXTileData, 0); errno != 0 {
			amxState.err = fmt.Errorf("the kernel refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): %w", errno)
		}
	})
	return amxState.err
}

// amxBF16Kernel returns the AMX-BF16 micro-kernel (32 x 32, TDPBF16PS),
// or the reason it cannot run here. It reads B packed in k pairs as the
// AVX-512 bf16 kernel does (packPair32) and A packed for tile loads
// (packATiles); k must be a multiple of 32.
func amxBF16Kernel() (sgemmKernel, error) {
	if !cpuid.CPU.Supports(cpuid.AMXBF16) {
		return sgemmKernel{}, fmt.Errorf("no AMX-BF16 (amx_bf16) on this CPU")
	}
	if err := amxPermission(); err != nil {
		return sgemmKernel{}, err
	}
	return sgemmKernel{name: profile.BackendAMXBF16, mr: 32, nr: 32, fn: amxBF16Kernel32x32, set: amxBF16Kernel32x32Set,
		packPair: packPair32, tileK: 32}, nil
}

// amxI8Kernel returns the AMX-INT8 micro-kernel (32 x 32, TDPBUSD: u8 A,
// s8 B, int32 C, as VPDPBUSD), or the reason it cannot run here. It reads
// B packed in k quads as the VNNI kernel does (packQuad32) and A packed
// for tile loads (packATiles); k must be a multiple of 64.
func amxI8Kernel() (sgemmKernel, error) {
	if !cpuid.CPU.Supports(cpuid.AMXINT8) {
		return sgemmKernel{}, fmt.Errorf("no AMX-INT8 (amx_int8) on this CPU")
	}
	if err := amxPermission(); err != nil {
		return sgemmKernel{}, err
	}
	return sgemmKernel{name: profile.BackendAMXInt8, mr: 32, nr: 32, fn: amxI8Kernel32x32, set: amxI8Kernel32x32Set,
		packQuad: packQuad32, tileK: 64}, nil
}
