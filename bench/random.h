/* The fixed generator of the tools that write random models and adapters
 * (make_model, make_lora): the same seed gives the same bytes everywhere. */
#ifndef SPROUT_BENCH_RANDOM_H
#define SPROUT_BENCH_RANDOM_H

#include <stdint.h>

/* xorshift64 */
static inline uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Approximately normal: the sum of four uniforms, rescaled. */
static inline float rng_normal(uint64_t *s) {
    float sum = 0;
    for (int i = 0; i < 4; i++) sum += (float)(rng_next(s) >> 40) / (float)(1 << 24);
    return (sum - 2.f) * 1.7320508f;
}

#endif
