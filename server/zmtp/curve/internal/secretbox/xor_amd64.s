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

// POLY_MUL multiplies the eight lane accumulators (radix 2^26, five
// limbs, Z0-Z4) after adding eight message blocks, by the powers of r in
// Z5-Z9 (limbs) and Z10-Z13 (5 x limbs 1-4), and carries: each limb ends
// below 2^26 but limb 1, which may exceed it by a few bits. The message
// limbs come in Z14-Z18; Z19-Z24 are scratch, Z28 is 2^26-1 in each lane.
// The products d0..d4 are the schoolbook ones, a limb pair whose weight
// reaches 2^130 folded back times 5 (2^130 = 5 mod 2^130-5).
#define POLY_MUL \
	VPADDQ Z14, Z0, Z0; \
	VPADDQ Z15, Z1, Z1; \
	VPADDQ Z16, Z2, Z2; \
	VPADDQ Z17, Z3, Z3; \
	VPADDQ Z18, Z4, Z4; \
	VPMULUDQ Z5, Z0, Z19; \
	VPMULUDQ Z13, Z1, Z24; VPADDQ Z24, Z19, Z19; \
	VPMULUDQ Z12, Z2, Z24; VPADDQ Z24, Z19, Z19; \
	VPMULUDQ Z11, Z3, Z24; VPADDQ Z24, Z19, Z19; \
	VPMULUDQ Z10, Z4, Z24; VPADDQ Z24, Z19, Z19; \
	VPMULUDQ Z6, Z0, Z20; \
	VPMULUDQ Z5, Z1, Z24; VPADDQ Z24, Z20, Z20; \
	VPMULUDQ Z13, Z2, Z24; VPADDQ Z24, Z20, Z20; \
	VPMULUDQ Z12, Z3, Z24; VPADDQ Z24, Z20, Z20; \
	VPMULUDQ Z11, Z4, Z24; VPADDQ Z24, Z20, Z20; \
	VPMULUDQ Z7, Z0, Z21; \
	VPMULUDQ Z6, Z1, Z24; VPADDQ Z24, Z21, Z21; \
	VPMULUDQ Z5, Z2, Z24; VPADDQ Z24, Z21, Z21; \
	VPMULUDQ Z13, Z3, Z24; VPADDQ Z24, Z21, Z21; \
	VPMULUDQ Z12, Z4, Z24; VPADDQ Z24, Z21, Z21; \
	VPMULUDQ Z8, Z0, Z22; \
	VPMULUDQ Z7, Z1, Z24; VPADDQ Z24, Z22, Z22; \
	VPMULUDQ Z6, Z2, Z24; VPADDQ Z24, Z22, Z22; \
	VPMULUDQ Z5, Z3, Z24; VPADDQ Z24, Z22, Z22; \
	VPMULUDQ Z13, Z4, Z24; VPADDQ Z24, Z22, Z22; \
	VPMULUDQ Z9, Z0, Z23; \
	VPMULUDQ Z8, Z1, Z24; VPADDQ Z24, Z23, Z23; \
	VPMULUDQ Z7, Z2, Z24; VPADDQ Z24, Z23, Z23; \
	VPMULUDQ Z6, Z3, Z24; VPADDQ Z24, Z23, Z23; \
	VPMULUDQ Z5, Z4, Z24; VPADDQ Z24, Z23, Z23; \
	VPSRLQ $26, Z19, Z24; VPANDQ Z28, Z19, Z0; VPADDQ Z24, Z20, Z20; \
	VPSRLQ $26, Z20, Z24; VPANDQ Z28, Z20, Z1; VPADDQ Z24, Z21, Z21; \
	VPSRLQ $26, Z21, Z24; VPANDQ Z28, Z21, Z2; VPADDQ Z24, Z22, Z22; \
	VPSRLQ $26, Z22, Z24; VPANDQ Z28, Z22, Z3; VPADDQ Z24, Z23, Z23; \
	VPSRLQ $26, Z23, Z24; VPANDQ Z28, Z23, Z4; \
	VPSLLQ $2, Z24, Z19; VPADDQ Z19, Z24, Z24; VPADDQ Z24, Z0, Z0; \
	VPSRLQ $26, Z0, Z24; VPANDQ Z28, Z0, Z0; VPADDQ Z24, Z1, Z1

// func polyBlocksAVX512(h *[5][8]uint64, msg *byte, groups int, r *[9][8]uint64)
//
// Adds groups x 128 bytes of msg, eight 16-byte Poly1305 blocks at a time,
// to the eight lane accumulators h, multiplying them by the lanes of r
// (limbs 0-4 of a power of r, then 5 x limbs 1-4) after each group. Block
// j of a group goes to lane p with j = 0, 4, 1, 5, 2, 6, 3, 7 for
// p = 0..7 (how VPUNPCKLQDQ pairs the two halves of the group).
TEXT ·polyBlocksAVX512(SB), NOSPLIT, $0-32
	MOVQ h+0(FP), AX
	MOVQ msg+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ r+24(FP), DX

	VMOVDQU64 (64*0)(AX), Z0
	VMOVDQU64 (64*1)(AX), Z1
	VMOVDQU64 (64*2)(AX), Z2
	VMOVDQU64 (64*3)(AX), Z3
	VMOVDQU64 (64*4)(AX), Z4
	VMOVDQU64 (64*0)(DX), Z5
	VMOVDQU64 (64*1)(DX), Z6
	VMOVDQU64 (64*2)(DX), Z7
	VMOVDQU64 (64*3)(DX), Z8
	VMOVDQU64 (64*4)(DX), Z9
	VMOVDQU64 (64*5)(DX), Z10
	VMOVDQU64 (64*6)(DX), Z11
	VMOVDQU64 (64*7)(DX), Z12
	VMOVDQU64 (64*8)(DX), Z13
	MOVQ $0x3ffffff, BX
	VPBROADCASTQ BX, Z28
	MOVQ $0x1000000, BX
	VPBROADCASTQ BX, Z29

	TESTQ CX, CX
	JZ    polydone

polyloop:
	VMOVDQU64 (SI), Z24
	VMOVDQU64 64(SI), Z25
	VPUNPCKLQDQ Z25, Z24, Z26 // low halves of the blocks
	VPUNPCKHQDQ Z25, Z24, Z27 // high halves
	VPANDQ  Z28, Z26, Z14
	VPSRLQ  $26, Z26, Z15
	VPANDQ  Z28, Z15, Z15
	VPSRLQ  $52, Z26, Z16
	VPSLLQ  $12, Z27, Z24
	VPORQ   Z24, Z16, Z16
	VPANDQ  Z28, Z16, Z16
	VPSRLQ  $14, Z27, Z17
	VPANDQ  Z28, Z17, Z17
	VPSRLQ  $40, Z27, Z18
	VPORQ   Z29, Z18, Z18
	POLY_MUL
	ADDQ $128, SI
	DECQ CX
	JNZ  polyloop

polydone:
	VMOVDQU64 Z0, (64*0)(AX)
	VMOVDQU64 Z1, (64*1)(AX)
	VMOVDQU64 Z2, (64*2)(AX)
	VMOVDQU64 Z3, (64*3)(AX)
	VMOVDQU64 Z4, (64*4)(AX)
	VZEROUPPER
	RET
