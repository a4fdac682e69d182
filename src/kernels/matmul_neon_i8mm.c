/* The NEON kernels again, compiled with the int8 matrix multiply (+i8mm):
 * two rows by two tokens per smmla, the same sums as sdot's. */
#define SP_MATMUL_NAME sp_matmul_neon_i8mm
#define SP_MATMUL_I8MM 1
#include "matmul_neon.c"
