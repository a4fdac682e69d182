/* The plain float formats. Source and destination may be unaligned views of
 * a file, so elements go through memcpy. */
#include <string.h>

#include "quant/fp16.h"
#include "quant/quant.h"

void sp_dequantize_f32(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

void sp_quantize_f32(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

void sp_dequantize_f16(const void *src, float *dst, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = sp_fp16_to_fp32(h);
    }
}

void sp_quantize_f16(const float *src, void *dst, int64_t n) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = sp_fp32_to_fp16(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

void sp_dequantize_bf16(const void *src, float *dst, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = sp_bf16_to_fp32(h);
    }
}

void sp_quantize_bf16(const float *src, void *dst, int64_t n) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = sp_fp32_to_bf16(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}
