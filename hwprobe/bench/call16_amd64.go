//go:build amd64 && (linux || freebsd)

package bench

import (
	"unsafe"
	_ "unsafe" // go:linkname
)

// call16 is the frame callC16 reads.
type call16 struct {
	fn   uintptr
	args [16]uintptr
	ret  uintptr
}

//go:linkname runtime_cgocall runtime.cgocall
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32

// callC16ABI0 is the address of the assembly trampoline, set by the linker.
var callC16ABI0 uintptr

const canCall16 = true

// callC calls the C function fn with up to 16 integer or pointer arguments
// and returns its integer result. Pointers to Go memory in args must be kept
// alive by the caller.
func callC(fn uintptr, args ...uintptr) uintptr {
	f := new(call16)
	f.fn = fn
	copy(f.args[:], args)
	runtime_cgocall(callC16ABI0, unsafe.Pointer(f))
	return f.ret
}
