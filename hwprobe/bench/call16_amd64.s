//go:build amd64 && (linux || freebsd)

#include "textflag.h"

// callC16 is a C-ABI (System V) function run on the system stack by
// runtime.cgocall: DI points to a call16 frame {fn, args[16], ret}. It passes
// the first six arguments in registers and the other ten on the stack, then
// stores the integer result. Used for C functions with more arguments than
// purego accepts (cublasLtMatmul takes 16).
TEXT callC16(SB), NOSPLIT|NOFRAME, $0
	PUSHQ BP
	MOVQ  SP, BP
	PUSHQ BX
	SUBQ  $88, SP        // ten stack slots, 16-byte aligned at the call
	MOVQ  DI, BX
	MOVQ  56(BX), AX
	MOVQ  AX, 0(SP)
	MOVQ  64(BX), AX
	MOVQ  AX, 8(SP)
	MOVQ  72(BX), AX
	MOVQ  AX, 16(SP)
	MOVQ  80(BX), AX
	MOVQ  AX, 24(SP)
	MOVQ  88(BX), AX
	MOVQ  AX, 32(SP)
	MOVQ  96(BX), AX
	MOVQ  AX, 40(SP)
	MOVQ  104(BX), AX
	MOVQ  AX, 48(SP)
	MOVQ  112(BX), AX
	MOVQ  AX, 56(SP)
	MOVQ  120(BX), AX
	MOVQ  AX, 64(SP)
	MOVQ  128(BX), AX
	MOVQ  AX, 72(SP)
	MOVQ  8(BX), DI
	MOVQ  16(BX), SI
	MOVQ  24(BX), DX
	MOVQ  32(BX), CX
	MOVQ  40(BX), R8
	MOVQ  48(BX), R9
	MOVQ  0(BX), R10
	XORL  AX, AX         // no vector registers used (varargs convention)
	CALL  R10
	MOVQ  AX, 136(BX)
	ADDQ  $88, SP
	POPQ  BX
	POPQ  BP
	RET

// callC16ABI0 holds the address of callC16 for runtime.cgocall.
GLOBL ·callC16ABI0(SB), NOPTR|RODATA, $8
DATA ·callC16ABI0(SB)/8, $callC16(SB)
