/* The AVX2 matmul again, compiled for CPUs with AVX-512 VNNI (and VL, so
 * the 256-bit vpdpbusd exists): each unsigned-by-signed byte dot is one
 * instruction instead of two, without int16 intermediates. */
#define SP_MATMUL_VNNI 1
#define SP_MATMUL_NAME sp_matmul_avx512vnni
#define SP_QUANTIZE_NAME sp_quantize_avx512vnni
#include "matmul_avx2.c"
