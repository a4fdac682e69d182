/* The AVX2 attention again, compiled for CPUs with AVX-512: the values are
 * summed 16 lanes at a time and the scores take two cells' keys in one
 * 16-lane FMA (each output element, each score lane, the same chain of
 * FMAs, so the same outputs as the AVX2 kernel). */
#define SP_ATTENTION_AVX512 1
#define SP_ATTENTION_NAME sp_attention_avx512
#include "attention_avx2.c"
