/* An importance matrix: per quantizable tensor, the mean square of each
 * input column over a calibration text (llama-imatrix's output), which the
 * low-bit quantizers use to spend their error where the activations are
 * small. Two file formats are read, both as hostile input: llama.cpp's
 * GGUF (general.type "imatrix"; per tensor NAME.in_sum2, F32 [ne0, n_mat],
 * sums of squares, and NAME.counts, F32 [1, n_mat], how many rows each
 * sum has) and the legacy .dat (per tensor its name, a call count and
 * values that are means times the call count). */
#ifndef SPROUT_QUANTIZE_IMATRIX_H
#define SPROUT_QUANTIZE_IMATRIX_H

#include <stdint.h>

#include "sprout.h"

typedef struct sp_imatrix sp_imatrix;

/* Reads the file at path; on failure the message names it and the problem. */
sprout_status sp_imatrix_load(const char *path, sp_imatrix **out);
/* Parses an in-memory image of either format (`name` is used in messages). */
sprout_status sp_imatrix_parse(const uint8_t *data, uint64_t size, const char *name, sp_imatrix **out);
void sp_imatrix_free(sp_imatrix *imatrix);

int64_t sp_imatrix_count(const sp_imatrix *imatrix);
/* Tensor `name`'s importance, *n values (ne0 per matrix, matrices in
 * order), or NULL when the file has none for it. */
const float *sp_imatrix_find(const sp_imatrix *imatrix, const char *name, int64_t *n);
/* The i-th entry's tensor name. */
const char *sp_imatrix_name(const sp_imatrix *imatrix, int64_t i);

#endif
