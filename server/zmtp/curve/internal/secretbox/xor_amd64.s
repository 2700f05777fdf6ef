//go:build amd64 && !purego && gc

#include "textflag.h"

// QR is one Salsa20 quarter-round on four state words, sixteen blocks at
// once (one block a 32-bit lane): b ^= (a+d)<<<7, c ^= (b+a)<<<9,
// d ^= (c+b)<<<13, a ^= (d+c)<<<18. t is a scratch register.
#define QR(a, b, c, d, t) \
	VPADDD  a, d, t;  VPROLD $7, t, t;  VPXORD t, b, b; \
	VPADDD  b, a, t;  VPROLD $9, t, t;  VPXORD t, c, c; \
	VPADDD  c, b, t;  VPROLD $13, t, t; VPXORD t, d, d; \
	VPADDD  d, c, t;  VPROLD $18, t, t; VPXORD t, a, a

// TRANSPOSE4 turns four registers, each holding one state word of sixteen
// blocks, into four registers whose 128-bit lane L holds the four words of
// one block: r0 ends with blocks 4L+0, r1 4L+1, r2 4L+2, r3 4L+3.
#define TRANSPOSE4(r0, r1, r2, r3, t0, t1, t2, t3) \
	VPUNPCKLDQ   r1, r0, t0; \
	VPUNPCKHDQ   r1, r0, t1; \
	VPUNPCKLDQ   r3, r2, t2; \
	VPUNPCKHDQ   r3, r2, t3; \
	VPUNPCKLQDQ  t2, t0, r0; \
	VPUNPCKHQDQ  t2, t0, r1; \
	VPUNPCKLQDQ  t3, t1, r2; \
	VPUNPCKHQDQ  t3, t1, r3

// OUT4 gathers the 128-bit lanes of s0..s3 (words 0-3, 4-7, 8-11, 12-15 of
// blocks 4L+k) into four whole blocks 4L+k (L = 0..3), XORs them with src
// and stores them to dst. k is the block's index within its lane.
#define OUT4(s0, s1, s2, s3, k) \
	VSHUFI32X4 $0x44, s1, s0, Z16; \
	VSHUFI32X4 $0xEE, s1, s0, Z17; \
	VSHUFI32X4 $0x44, s3, s2, Z18; \
	VSHUFI32X4 $0xEE, s3, s2, Z19; \
	VSHUFI32X4 $0x88, Z18, Z16, Z20; \
	VSHUFI32X4 $0xDD, Z18, Z16, Z21; \
	VSHUFI32X4 $0x88, Z19, Z17, Z22; \
	VSHUFI32X4 $0xDD, Z19, Z17, Z23; \
	VPXORD (64*(0+k))(SI), Z20, Z20; \
	VPXORD (64*(4+k))(SI), Z21, Z21; \
	VPXORD (64*(8+k))(SI), Z22, Z22; \
	VPXORD (64*(12+k))(SI), Z23, Z23; \
	VMOVDQU32 Z20, (64*(0+k))(DI); \
	VMOVDQU32 Z21, (64*(4+k))(DI); \
	VMOVDQU32 Z22, (64*(8+k))(DI); \
	VMOVDQU32 Z23, (64*(12+k))(DI)

// func xor16AVX512(dst, src *byte, state *[16][16]uint32)
//
// XORs 1024 bytes of src with sixteen consecutive Salsa20/20 blocks into
// dst. state holds the sixteen blocks' input words, word-major: state[i][j]
// is word i of block j. dst and src overlap entirely or not at all.
TEXT ·xor16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ state+16(FP), AX

	VMOVDQU32 (64*0)(AX), Z0
	VMOVDQU32 (64*1)(AX), Z1
	VMOVDQU32 (64*2)(AX), Z2
	VMOVDQU32 (64*3)(AX), Z3
	VMOVDQU32 (64*4)(AX), Z4
	VMOVDQU32 (64*5)(AX), Z5
	VMOVDQU32 (64*6)(AX), Z6
	VMOVDQU32 (64*7)(AX), Z7
	VMOVDQU32 (64*8)(AX), Z8
	VMOVDQU32 (64*9)(AX), Z9
	VMOVDQU32 (64*10)(AX), Z10
	VMOVDQU32 (64*11)(AX), Z11
	VMOVDQU32 (64*12)(AX), Z12
	VMOVDQU32 (64*13)(AX), Z13
	VMOVDQU32 (64*14)(AX), Z14
	VMOVDQU32 (64*15)(AX), Z15

	MOVQ $10, CX

doubleround:
	// Column round.
	QR(Z0, Z4, Z8, Z12, Z16)
	QR(Z5, Z9, Z13, Z1, Z17)
	QR(Z10, Z14, Z2, Z6, Z18)
	QR(Z15, Z3, Z7, Z11, Z19)
	// Row round.
	QR(Z0, Z1, Z2, Z3, Z16)
	QR(Z5, Z6, Z7, Z4, Z17)
	QR(Z10, Z11, Z8, Z9, Z18)
	QR(Z15, Z12, Z13, Z14, Z19)
	DECQ CX
	JNZ  doubleround

	VPADDD (64*0)(AX), Z0, Z0
	VPADDD (64*1)(AX), Z1, Z1
	VPADDD (64*2)(AX), Z2, Z2
	VPADDD (64*3)(AX), Z3, Z3
	VPADDD (64*4)(AX), Z4, Z4
	VPADDD (64*5)(AX), Z5, Z5
	VPADDD (64*6)(AX), Z6, Z6
	VPADDD (64*7)(AX), Z7, Z7
	VPADDD (64*8)(AX), Z8, Z8
	VPADDD (64*9)(AX), Z9, Z9
	VPADDD (64*10)(AX), Z10, Z10
	VPADDD (64*11)(AX), Z11, Z11
	VPADDD (64*12)(AX), Z12, Z12
	VPADDD (64*13)(AX), Z13, Z13
	VPADDD (64*14)(AX), Z14, Z14
	VPADDD (64*15)(AX), Z15, Z15

	TRANSPOSE4(Z0, Z1, Z2, Z3, Z16, Z17, Z18, Z19)
	TRANSPOSE4(Z4, Z5, Z6, Z7, Z16, Z17, Z18, Z19)
	TRANSPOSE4(Z8, Z9, Z10, Z11, Z16, Z17, Z18, Z19)
	TRANSPOSE4(Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19)

	OUT4(Z0, Z4, Z8, Z12, 0)
	OUT4(Z1, Z5, Z9, Z13, 1)
	OUT4(Z2, Z6, Z10, Z14, 2)
	OUT4(Z3, Z7, Z11, Z15, 3)

	VZEROUPPER
	RET
