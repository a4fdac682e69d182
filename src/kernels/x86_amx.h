/* The tile shapes of the AMX kernels (matmul_amx.c, matmul_amx_float.c):
 * a thread's tiles keep the shapes loaded last, so each kernel names its
 * shapes by a key and loads them only when the thread's last ones were
 * another kernel's or another shape's. */
#ifndef SPROUT_KERNELS_X86_AMX_H
#define SPROUT_KERNELS_X86_AMX_H

#include <stdint.h>
#include <string.h>

/* Keys: the int8 kernel's, its A depth (16 or 32); the float kernel's this
 * plus its token columns (1-16). */
#define SP_AMX_FLOAT_KEY 1000

typedef struct sp_amx_tile_shapes {
    int key;
    uint8_t rows[8];
    uint16_t colsb[8];
} sp_amx_tile_shapes;

/* the key of the shapes the calling thread's tiles hold (0: none yet) */
extern __thread int sp_amx_tiles_key;

static inline void sp_amx_configure(const sp_amx_tile_shapes *shapes) {
    if (sp_amx_tiles_key == shapes->key) return;
    struct {
        uint8_t palette, start_row;
        uint8_t reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = shapes->rows[t], cfg.colsb[t] = shapes->colsb[t];
    /* GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes, so
     * the stores of the shapes could be dropped: the whole struct is named
     * as the operand here */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
    sp_amx_tiles_key = shapes->key;
}

#endif
