/* SHA-256 (FIPS 180-4), streamed: the model store names blobs by their
 * digest and checks every byte written into it. */
#ifndef SPROUT_CORE_SHA256_H
#define SPROUT_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
} sp_sha256;

void sp_sha256_init(sp_sha256 *h);
void sp_sha256_update(sp_sha256 *h, const void *data, size_t len);
/* The 32-byte digest; h must be initialized again before reuse. */
void sp_sha256_final(sp_sha256 *h, uint8_t digest[32]);
/* The digest as 64 lower-case hex digits and a NUL. */
void sp_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
