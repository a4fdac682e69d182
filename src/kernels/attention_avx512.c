/* The AVX2 attention again, compiled for CPUs with AVX-512: the scores
 * come 16 cells at a time from transposed keys (each score one chain of
 * FMAs, so its bits differ from the AVX2 kernel's lane sums, but not
 * between a token alone and in a batch), the values are summed 16 lanes
 * at a time. */
#define SP_ATTENTION_AVX512 1
#define SP_ATTENTION_NAME sp_attention_avx512
#include "attention_avx2.c"
