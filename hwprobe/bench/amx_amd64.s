//go:build amd64 && !purego

#include "textflag.h"

// AMX micro-kernels. The Go assembler has no AMX mnemonics, so each AMX
// instruction is spelt as its bytes (checked against GNU as's encoding),
// the instruction in the macro's name and comment. Only the registers
// without a REX extension are used as addresses (AX, BX, CX, DX, SI, DI),
// so every VEX prefix is the 3-byte form with R, X and B clear.
//
// Tile registers: tmm0-3 hold the 32 x 32 tile of C (2 x 2 tiles of
// 16 x 16 fp32 or int32), tmm4-5 two 16-row tiles of A (rows 0-15 and
// 16-31 of the panel, 64 bytes of k each), tmm6-7 two tiles of B (columns
// 0-15 and 16-31 of the panel, 16 pairs or quads of k each).

// ldtilecfg (ax)
#define LDTILECFG_AX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
// tilerelease
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
// tilezero tmm0..tmm3
#define TILEZERO_C BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
// tileloadd tmm0, (dx)(bx*1)
#define TILELOADD_0_DX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x1a
// tileloadd tmmN, (ax)(bx*1), N = 1, 2, 3
#define TILELOADD_1_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x18
#define TILELOADD_2_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x18
#define TILELOADD_3_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x18
// tileloadd tmm4, (si)(cx*1)
#define TILELOADD_4_SI_CX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x0e
// tileloadd tmm5, (ax)(cx*1)
#define TILELOADD_5_AX_CX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x08
// tileloadd tmm6, (di)(bx*1)
#define TILELOADD_6_DI_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x1f
// tileloadd tmm7, (ax)(bx*1)
#define TILELOADD_7_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x18
// tilestored (dx)(bx*1), tmm0
#define TILESTORED_0_DX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a
// tilestored (ax)(bx*1), tmmN, N = 1, 2, 3
#define TILESTORED_1_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x18
#define TILESTORED_2_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x18
#define TILESTORED_3_AX_BX BYTE $0xc4; BYTE $0xe2; BYTE $0x7a; BYTE $0x4b; BYTE $0x1c; BYTE $0x18
// tdpbf16ps tmm0, tmm4, tmm6; tmm1, tmm4, tmm7; tmm2, tmm5, tmm6; tmm3, tmm5, tmm7
#define TDPBF16PS_2X2 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd
// tdpbusd tmm0, tmm4, tmm6; tmm1, tmm4, tmm7; tmm2, tmm5, tmm6; tmm3, tmm5, tmm7
#define TDPBUSD_2X2 BYTE $0xc4; BYTE $0xe2; BYTE $0x49; BYTE $0x5e; BYTE $0xc4; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x41; BYTE $0x5e; BYTE $0xcc; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x49; BYTE $0x5e; BYTE $0xd5; \
	BYTE $0xc4; BYTE $0xe2; BYTE $0x41; BYTE $0x5e; BYTE $0xdd

// The tile configuration: palette 1, eight tiles of 16 rows x 64 bytes.
// Bytes 16-31 are the tiles' row widths (16-bit), 48-55 their row counts.
DATA ·amxTileConfig+0(SB)/8, $0x0000000000000001
DATA ·amxTileConfig+8(SB)/8, $0
DATA ·amxTileConfig+16(SB)/8, $0x0040004000400040
DATA ·amxTileConfig+24(SB)/8, $0x0040004000400040
DATA ·amxTileConfig+32(SB)/8, $0
DATA ·amxTileConfig+40(SB)/8, $0
DATA ·amxTileConfig+48(SB)/8, $0x1010101010101010
DATA ·amxTileConfig+56(SB)/8, $0
GLOBL ·amxTileConfig(SB), RODATA|NOPTR, $64

// AMX_PROLOGUE loads the arguments and the tile configuration: R8 the
// number of k chunks (k >> SHIFT), SI packed A, DI packed B, DX C, BX
// C's row stride in bytes, R10 the address of C's row 16.
#define AMX_PROLOGUE(SHIFT) \
	MOVQ k+0(FP), R8; \
	SHRQ $SHIFT, R8; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DI; \
	MOVQ c+24(FP), DX; \
	MOVQ ldc+32(FP), BX; \
	SHLQ $2, BX; \
	MOVQ BX, R10; \
	SHLQ $4, R10; \
	ADDQ DX, R10; \
	LEAQ ·amxTileConfig(SB), AX; \
	LDTILECFG_AX

#define AMX_LOAD_C \
	TILELOADD_0_DX_BX; \
	LEAQ 64(DX), AX; \
	TILELOADD_1_AX_BX; \
	MOVQ R10, AX; \
	TILELOADD_2_AX_BX; \
	LEAQ 64(R10), AX; \
	TILELOADD_3_AX_BX

// AMX_LOOP(DP) runs R8 chunks: per chunk, two tiles of A (a panel chunk
// is 32 rows of 64 bytes, 2 KiB), two tiles of B (16 rows of the panel's
// 128-byte rows, 2 KiB) and the four tile products DP. BX is C's stride
// again after it.
#define AMX_LOOP(DP, LOOP, DONE) \
	MOVQ BX, R11; \
	MOVQ $64, CX; \
	MOVQ $128, BX; \
	TESTQ R8, R8; \
	JZ DONE; \
LOOP: \
	TILELOADD_4_SI_CX; \
	LEAQ 1024(SI), AX; \
	TILELOADD_5_AX_CX; \
	TILELOADD_6_DI_BX; \
	LEAQ 64(DI), AX; \
	TILELOADD_7_AX_BX; \
	DP; \
	ADDQ $2048, SI; \
	ADDQ $2048, DI; \
	DECQ R8; \
	JNZ LOOP; \
DONE: \
	MOVQ R11, BX

#define AMX_STORE_C \
	TILESTORED_0_DX_BX; \
	LEAQ 64(DX), AX; \
	TILESTORED_1_AX_BX; \
	MOVQ R10, AX; \
	TILESTORED_2_AX_BX; \
	LEAQ 64(R10), AX; \
	TILESTORED_3_AX_BX; \
	TILERELEASE

// func amxBF16Kernel32x32(k int, a, b, c *float32, ldc int)
TEXT ·amxBF16Kernel32x32(SB), NOSPLIT, $0-40
	AMX_PROLOGUE(5)
	AMX_LOAD_C
	AMX_LOOP(TDPBF16PS_2X2, bf16loop, bf16done)
	AMX_STORE_C
	RET

// func amxBF16Kernel32x32Set(k int, a, b, c *float32, ldc int)
TEXT ·amxBF16Kernel32x32Set(SB), NOSPLIT, $0-40
	AMX_PROLOGUE(5)
	TILEZERO_C
	AMX_LOOP(TDPBF16PS_2X2, bf16setloop, bf16setdone)
	AMX_STORE_C
	RET

// func amxI8Kernel32x32(k int, a, b, c *float32, ldc int)
TEXT ·amxI8Kernel32x32(SB), NOSPLIT, $0-40
	AMX_PROLOGUE(6)
	AMX_LOAD_C
	AMX_LOOP(TDPBUSD_2X2, i8loop, i8done)
	AMX_STORE_C
	RET

// func amxI8Kernel32x32Set(k int, a, b, c *float32, ldc int)
TEXT ·amxI8Kernel32x32Set(SB), NOSPLIT, $0-40
	AMX_PROLOGUE(6)
	TILEZERO_C
	AMX_LOOP(TDPBUSD_2X2, i8setloop, i8setdone)
	AMX_STORE_C
	RET
