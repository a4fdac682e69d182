/* Two rows side by side, for token groups (G > 1) at the AVX-512 level:
 * both rows' chunks are unpacked and transposed at once in 512-bit
 * registers (lanes 0-7 row a's eight blocks, or a super-block's eight
 * sub-blocks, lanes 8-15 row b's), each of a token's transposed
 * activation loads meets both rows, and the scaling runs on both rows'
 * sums at once. Each lane's integer sums are the 256-bit kernels' exact
 * sums, and its float operations theirs in the same order, so a row's
 * output is the same bits as one row at a time (and a token's the same
 * alone or in a batch).
 *
 * Included by x86_matmul_loops.h after the chunk kernels whose weight
 * unpacking it reuses, where the level sets ROW_PAIRS. */
#ifndef SPROUT_KERNELS_X86_MATMUL_PAIRS_H
#define SPROUT_KERNELS_X86_MATMUL_PAIRS_H

static inline __m512i pair_halves(__m256i a, __m256i b) { return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1); }

static inline __m512 pair_halves_ps(__m256 a, __m256 b) { return _mm512_castsi512_ps(pair_halves(_mm256_castps_si256(a), _mm256_castps_si256(b))); }

/* 32 bytes of a token's chunk in both halves: a load, no shuffle. */
static inline __m512i token_both(const void *p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p)); }

static inline __m512 token_both_ps(const float *p) { return _mm512_castsi512_ps(token_both(p)); }

/* Which token groups and types go in pairs: groups of 4 (four streams)
 * and of TOKEN_GROUP (prompts), and the types most files carry. Each is
 * a copy of the kernel (pair_rows); other shapes take one row at a time,
 * the same bits. */
static inline bool pairs_group(int G) { return G == 4 || G == TOKEN_GROUP; }

static inline bool pairs_type(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q4_0:
    case SPROUT_TYPE_Q8_0:
    case SPROUT_TYPE_IQ4_NL:
    case SPROUT_TYPE_MXFP4:
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K:
    case SPROUT_TYPE_Q6_K: return true;
    default: return false;
    }
}

/* One chunk of both rows, unpacked and transposed (v[m]: dword m of each
 * lane's block or sub-block), with its per-lane factors: w_scale (a
 * block's d, or d times a sub-block's scale: what multiplies the sums
 * times the activations' scale), w_min (what meets the activations' dsum:
 * Q4_K, Q5_K) and Q6_K's integer scales of each half. */
typedef struct pair_chunk {
    __m512i v[8], sc_lo, sc_hi;
    __m512 w_scale, w_min;
} pair_chunk;

/* transpose8x8_epi32 of both rows at once: w[j] holds row a's vector j
 * and row b's; v[m] then holds dword m of each. */
static inline __attribute__((always_inline)) void transpose8x8_pair(const __m512i w[8], __m512i v[8]) {
    __m512i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(w[2 * i], w[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(w[2 * i], w[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {
        u[4 * h + 0] = _mm512_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 1] = _mm512_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 2] = _mm512_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm512_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    /* per 256-bit half: the low 128 bits of u[m] and u[4 + m] (dwords of blocks 0-3, 4-7), then the high ones */
    const __m512i low = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), high = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int m = 0; m < 4; m++) {
        v[m] = _mm512_permutex2var_epi64(u[m], low, u[4 + m]);
        v[m + 4] = _mm512_permutex2var_epi64(u[m], high, u[4 + m]);
    }
}

/* A whole chunk of both rows' Q8_0, Q4_0, IQ4_NL or MXFP4 blocks
 * transposed in 512-bit registers (the shuffles of load_blocks8, once for
 * both rows): v[m] holds dword m of each block, row a's in lanes 0-7. */
static inline __attribute__((always_inline)) void packed_pair_levels(sprout_type type, const uint8_t *row_a, const uint8_t *row_b, int64_t b,
                                                                     __m512i v[8]) {
    const size_t block_bytes = layout_of(type).bytes, qs = layout_of(type).qs;
    const uint8_t *ca = row_a + (size_t)b * block_bytes + qs, *cb = row_b + (size_t)b * block_bytes + qs;
    if (type == SPROUT_TYPE_Q8_0) {
        __m512i w[8];
        for (int j = 0; j < 8; j++) {
            w[j] = pair_halves(_mm256_loadu_si256((const __m256i *)(ca + j * block_bytes)), _mm256_loadu_si256((const __m256i *)(cb + j * block_bytes)));
            w[j] = _mm512_xor_si512(w[j], _mm512_set1_epi8((char)0x80));
        }
        transpose8x8_pair(w, v);
        return;
    }
    __m512i p[4]; /* packed dword m of each block, row a's in lanes 0-7 */
    if (type != SPROUT_TYPE_MXFP4) {
        /* each row's chunk gathered by packed_chunk_gather (dwords 2h and
         * 2h + 1 in its halves), the halves then regrouped by row: a
         * third fewer instructions than the 128-bit loads and 4x4
         * transposes below */
        __m512i ga[2], gb[2];
        packed_chunk_gather(row_a + (size_t)b * block_bytes, ga), packed_chunk_gather(row_b + (size_t)b * block_bytes, gb);
        for (int h = 0; h < 2; h++) {
            p[2 * h] = _mm512_shuffle_i64x2(ga[h], gb[h], _MM_SHUFFLE(1, 0, 1, 0));
            p[2 * h + 1] = _mm512_shuffle_i64x2(ga[h], gb[h], _MM_SHUFFLE(3, 2, 3, 2));
        }
    } else {
        /* a[j] = [a's packed block j | a's j + 4 | b's j | b's j + 4]: after
         * the 4x4 transposes per 128-bit lane, lanes are blocks in order
         * (MXFP4's 17-byte blocks lie on no common word boundary) */
        __m512i a[4], t[4];
        for (int j = 0; j < 4; j++) {
            const __m256i ra =
                _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(ca + (j + 4) * block_bytes)), _mm_loadu_si128((const __m128i *)(ca + j * block_bytes)));
            const __m256i rb =
                _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(cb + (j + 4) * block_bytes)), _mm_loadu_si128((const __m128i *)(cb + j * block_bytes)));
            a[j] = pair_halves(ra, rb);
        }
        t[0] = _mm512_unpacklo_epi32(a[0], a[1]), t[1] = _mm512_unpackhi_epi32(a[0], a[1]);
        t[2] = _mm512_unpacklo_epi32(a[2], a[3]), t[3] = _mm512_unpackhi_epi32(a[2], a[3]);
        p[0] = _mm512_unpacklo_epi64(t[0], t[2]), p[1] = _mm512_unpackhi_epi64(t[0], t[2]);
        p[2] = _mm512_unpacklo_epi64(t[1], t[3]), p[3] = _mm512_unpackhi_epi64(t[1], t[3]);
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int m = 0; m < 4; m++) {
        v[m] = _mm512_and_si512(p[m], low4);
        v[m + 4] = _mm512_and_si512(_mm512_srli_epi16(p[m], 4), low4);
    }
    if (nibble_table(type)) {
        const __m512i levels = _mm512_broadcast_i32x4(_mm256_castsi256_si128(byte_levels_of(nibble_table(type))));
        for (int m = 0; m < 8; m++) v[m] = _mm512_shuffle_epi8(levels, v[m]);
    }
}

/* A Q4_K (Q5_K) super-block of both rows in 512-bit registers: each Q4_K
 * row's levels gathered as one token gathers them, Q5_K's with their
 * fifth bits unpacked for both rows at once and transposed together; both
 * rows' scales and mins by one k_scales_mins2 (a row per 128-bit lane).
 * The values are affine_k_scales' and affine_k_levels' (each scale times
 * its d in one rounding, as there). */
static inline __attribute__((always_inline)) void affine_k_pair(sprout_type type, const uint8_t *row_a, const uint8_t *row_b, int64_t c,
                                                                pair_chunk *p) {
    const bool q5 = type == SPROUT_TYPE_Q5_K;
    const sp_affine_k_block ba = sp_affine_k_block_at(q5, row_a, c), bb = sp_affine_k_block_at(q5, row_b, c);
    const __m256i sm = k_scales_mins2(_mm256_set_m128i(_mm_loadu_si128((const __m128i *)bb.scales), _mm_loadu_si128((const __m128i *)ba.scales)));
    const __m128i lo = _mm256_castsi256_si128(sm), hi = _mm256_extracti128_si256(sm, 1);
    const __m512 d = pair_halves_ps(_mm256_set1_ps(_cvtsh_ss(ba.d)), _mm256_set1_ps(_cvtsh_ss(bb.d)));
    const __m512 dmin = pair_halves_ps(_mm256_set1_ps(_cvtsh_ss(ba.dmin)), _mm256_set1_ps(_cvtsh_ss(bb.dmin)));
    p->w_scale = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(lo, hi))));
    p->w_min = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi64(lo, hi))));
    if (!q5) {
        /* regrouped by row: fewer instructions than Q5_K's transposes */
        __m512i la[4], lb[4];
        q4_K_levels_gather(ba.qs, la), q4_K_levels_gather(bb.qs, lb);
        for (int h = 0; h < 4; h++) {
            p->v[2 * h] = _mm512_shuffle_i64x2(la[h], lb[h], _MM_SHUFFLE(1, 0, 1, 0));
            p->v[2 * h + 1] = _mm512_shuffle_i64x2(la[h], lb[h], _MM_SHUFFLE(3, 2, 3, 2));
        }
        return;
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i hb = pair_halves(_mm256_loadu_si256((const __m256i *)ba.qh), _mm256_loadu_si256((const __m256i *)bb.qh));
    __m512i lv[8];
    for (int i = 0; i < 4; i++) {
        const __m512i q = pair_halves(_mm256_loadu_si256((const __m256i *)(ba.qs + 32 * i)), _mm256_loadu_si256((const __m256i *)(bb.qs + 32 * i)));
        lv[2 * i] = _mm512_and_si512(q, low4);
        lv[2 * i + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        for (int h = 0; h < 2; h++) { /* sub-block j's bit (bit j of hb) to bit 4, as bit_to */
            const int j = 2 * i + h;
            const __m512i moved = j < 4 ? _mm512_slli_epi16(hb, 4 - j) : j > 4 ? _mm512_srli_epi16(hb, j - 4) : hb;
            lv[j] = _mm512_or_si512(lv[j], _mm512_and_si512(moved, _mm512_set1_epi8(1 << 4)));
        }
    }
    transpose8x8_pair(lv, p->v);
}

/* A Q6_K super-block of both rows in 512-bit registers: unpack_q6_K_half
 * and split_k_unpack's scales for both rows at once. */
static inline __attribute__((always_inline)) void q6_K_pair(const uint8_t *row_a, const uint8_t *row_b, int64_t c, pair_chunk *p) {
    const sp_block_q6_K *wa = (const sp_block_q6_K *)row_a + c, *wb = (const sp_block_q6_K *)row_b + c;
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    __m512i lv[8];
    for (int h = 0; h < 2; h++) {
        const __m512i l0 = pair_halves(_mm256_loadu_si256((const __m256i *)(wa->ql + 64 * h)), _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h)));
        const __m512i l1 =
            pair_halves(_mm256_loadu_si256((const __m256i *)(wa->ql + 64 * h + 32)), _mm256_loadu_si256((const __m256i *)(wb->ql + 64 * h + 32)));
        const __m512i hb = pair_halves(_mm256_loadu_si256((const __m256i *)(wa->qh + 32 * h)), _mm256_loadu_si256((const __m256i *)(wb->qh + 32 * h)));
        __m512i *q = lv + 4 * h;
        q[0] = _mm512_or_si512(_mm512_and_si512(l0, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45));
        q[1] = _mm512_or_si512(_mm512_and_si512(l1, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45));
        q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), _mm512_and_si512(hb, bits45));
        q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4), _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45));
    }
    transpose8x8_pair(lv, p->v);
    /* even bytes (first halves) to the low 8 bytes, odd to the high, per row */
    const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i sa = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)wa->scales), split);
    const __m128i sb = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)wb->scales), split);
    p->sc_lo = _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(sa, sb)), p->sc_hi = _mm512_cvtepi8_epi32(_mm_unpackhi_epi64(sa, sb));
    p->w_scale = pair_halves_ps(_mm256_set1_ps(_cvtsh_ss(wa->d)), _mm256_set1_ps(_cvtsh_ss(wb->d)));
}

static inline __attribute__((always_inline)) void pair_chunk_unpack(sprout_type type, const uint8_t *row_a, const uint8_t *row_b,
                                                                    const act_tile *at, int64_t c, pair_chunk *p) {
    switch (type) {
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K: affine_k_pair(type, row_a, row_b, c, p); return;
    case SPROUT_TYPE_Q6_K: q6_K_pair(row_a, row_b, c, p); return;
    default: { /* Q4_0, Q8_0, IQ4_NL, MXFP4 (pairs_type): no mins */
        const int64_t b = 8 * c, nv = at->nb - b;
        if (nv >= 8) {
            packed_pair_levels(type, row_a, row_b, b, p->v);
            p->w_scale = pair_halves_ps(block_scales8(type, row_a, b, 8), block_scales8(type, row_b, b, 8));
            return;
        }
        /* a row's last, partial chunk: each row's blocks as load_blocks8 pads them */
        __m256i va[8], vb[8];
        __m256 mw;
        const __m256 dwa = load_blocks8(type, row_a, b, (int)nv, true, va, &mw), dwb = load_blocks8(type, row_b, b, (int)nv, true, vb, &mw);
        p->w_scale = pair_halves_ps(dwa, dwb);
        for (int m = 0; m < 8; m++) p->v[m] = pair_halves(va[m], vb[m]);
        return;
    }
    }
}

/* Row a's half of a pair register, and row b's. */
static inline __m256i half_a(__m512i v) { return _mm512_castsi512_si256(v); }
static inline __m256i half_b(__m512i v) { return _mm512_extracti64x4_epi64(v, 1); }

/* A token's integer sums for both rows (lane l: block l of row a, then of
 * row b) in 512-bit vpdpbusd, its activations broadcast to both halves:
 * where a 512-bit vpdpbusd issues as often as a 256-bit one (Intel's
 * AVX-512 cores) this doubles the products per instruction. */
static inline __attribute__((always_inline)) __m512i pair_sums_512(bool split, bool has_min, const act_chunk *ch, const pair_chunk *p) {
    const __m256i *y = ch->qs_t;
    if (split) {
        __m512i lo = token_both(ch->sum), hi = token_both(ch->sum_hi);
        for (int m = 0; m < 4; m++) {
            lo = _mm512_dpbusd_epi32(lo, p->v[m], token_both(y + m));
            hi = _mm512_dpbusd_epi32(hi, p->v[m + 4], token_both(y + m + 4));
        }
        return _mm512_add_epi32(_mm512_mullo_epi32(lo, p->sc_lo), _mm512_mullo_epi32(hi, p->sc_hi));
    }
    __m512i part[2] = {!has_min ? token_both(ch->sum) : _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int m = 0; m < 8; m++) part[m & 1] = _mm512_dpbusd_epi32(part[m & 1], p->v[m], token_both(y + m));
    return _mm512_add_epi32(part[0], part[1]);
}

/* The same sums through 256-bit vpdpbusd, each activation load serving
 * both rows (va, vb: the rows' halves of p->v): where a 512-bit vpdpbusd
 * issues half as often as a 256-bit one (AMD's Zen 4), a 256-bit load
 * beside two of them costs nothing, and a 256-to-512-bit broadcast beside
 * each 512-bit one a quarter of the rate (bench/vnni_pipes). The integer
 * sums are the same whatever the width, so the bits are too. */
static inline __attribute__((always_inline)) __m512i pair_sums_256(bool split, bool has_min, const act_chunk *ch, const pair_chunk *p,
                                                                   const __m256i va[8], const __m256i vb[8]) {
    const __m256i *y = ch->qs_t;
    if (split) {
        const __m256i half_sum = _mm256_load_si256((const __m256i *)ch->sum), half_sum_hi = _mm256_load_si256((const __m256i *)ch->sum_hi);
        __m256i lo_a = half_sum, lo_b = half_sum, hi_a = half_sum_hi, hi_b = half_sum_hi;
        for (int m = 0; m < 4; m++) {
            const __m256i y_lo = _mm256_load_si256(y + m), y_hi = _mm256_load_si256(y + m + 4);
            lo_a = _mm256_dpbusd_epi32(lo_a, va[m], y_lo), lo_b = _mm256_dpbusd_epi32(lo_b, vb[m], y_lo);
            hi_a = _mm256_dpbusd_epi32(hi_a, va[m + 4], y_hi), hi_b = _mm256_dpbusd_epi32(hi_b, vb[m + 4], y_hi);
        }
        return _mm512_add_epi32(_mm512_mullo_epi32(pair_halves(lo_a, lo_b), p->sc_lo), _mm512_mullo_epi32(pair_halves(hi_a, hi_b), p->sc_hi));
    }
    const __m256i start = !has_min ? _mm256_load_si256((const __m256i *)ch->sum) : _mm256_setzero_si256();
    __m256i sum_a = start, sum_b = start;
    for (int m = 0; m < 8; m++) {
        const __m256i ym = _mm256_load_si256(y + m);
        sum_a = _mm256_dpbusd_epi32(sum_a, va[m], ym), sum_b = _mm256_dpbusd_epi32(sum_b, vb[m], ym);
    }
    return pair_halves(sum_a, sum_b);
}

/* Chunk c of both rows against G tokens: as blocks8_chunk, affine_k_chunk
 * and split_k_chunk do for one row (their token groups' transposed path);
 * halves: the products through 256-bit vpdpbusd (pair_sums_256). */
static inline __attribute__((always_inline)) void pair_chunk_tokens(sprout_type type, const act_tile *at, const int G, const bool halves,
                                                                    int64_t c, const pair_chunk *p, __m512 acc[], __m512 macc[]) {
    const bool split = type == SPROUT_TYPE_Q6_K;
    /* the offset's correction starts the sums (type_sum_factor): all but Q4_K's and Q5_K's, which have mins */
    const bool has_min = type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K;
    __m256i va[8], vb[8];
    if (halves)
        for (int m = 0; m < 8; m++) va[m] = half_a(p->v[m]), vb[m] = half_b(p->v[m]);
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        const act_chunk *ch = act_chunk_of(at, k, 8 * c);
        const __m512i sums = halves ? pair_sums_256(split, has_min, ch, p, va, vb) : pair_sums_512(split, has_min, ch, p);
        if (has_min) macc[k] = _mm512_fmadd_ps(p->w_min, token_both_ps(ch->dsum), macc[k]);
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(p->w_scale, token_both_ps(ch->d)), acc[k]);
    }
}

/* Rows a and b's span sp_a / sp_b against G tokens (span_group's work for
 * both). */
static inline __attribute__((always_inline)) void pair_span_group(sprout_type type, const uint8_t *row_a, const uint8_t *row_b,
                                                                  const act_tile *at, const int G, const bool halves, const k_span *sp_a, const k_span *sp_b,
                                                                  size_t chunk_bytes, ptrdiff_t ahead, float out_a[], float out_b[]) {
    const bool with_mins = type_mins_sign(type) != 0.f;
    __m512 acc[TOKEN_GROUP], macc[TOKEN_GROUP];
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        acc[k] = sp_a->first ? _mm512_setzero_ps() : pair_halves_ps(sp_a->state[k], sp_b->state[k]);
        macc[k] = sp_a->first || !with_mins ? _mm512_setzero_ps() : pair_halves_ps(sp_a->state[TOKEN_GROUP + k], sp_b->state[TOKEN_GROUP + k]);
    }
    for (int64_t c = sp_a->c0; c < sp_a->c1; c++) {
        prefetch_chunk_ahead(row_a, c, chunk_bytes, ahead);
        prefetch_chunk_ahead(row_b, c, chunk_bytes, ahead);
        pair_chunk p;
        pair_chunk_unpack(type, row_a, row_b, at, c, &p);
        pair_chunk_tokens(type, at, G, halves, c, &p, acc, macc);
    }
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        const __m256 acc_a = _mm512_castps512_ps256(acc[k]), macc_a = _mm512_castps512_ps256(macc[k]);
        const __m256 acc_b = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(acc[k]), 1));
        const __m256 macc_b = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(_mm512_castps_si512(macc[k]), 1));
        if (!sp_a->last) {
            sp_a->state[k] = acc_a, sp_b->state[k] = acc_b;
            if (with_mins) sp_a->state[TOKEN_GROUP + k] = macc_a, sp_b->state[TOKEN_GROUP + k] = macc_b;
        } else {
            out_a[k] = row_output(type, acc_a, macc_a);
            out_b[k] = row_output(type, acc_b, macc_b);
        }
    }
}

/* Rows a pair's prefetch runs ahead of the pair it works on: as many
 * steps as one row at a time runs, a step being two rows here (at one
 * step, a few tokens' weights from memory arrived late: bench/RESULTS.md). */
#define PAIR_AHEAD_ROWS (2 * GROUP_AHEAD_ROWS)

/* Rows o and o + 1 of rs's span against G tokens, side by side. */
static inline __attribute__((always_inline)) void span_row_pair(sprout_type type, const act_tile *at, const int G, const bool halves,
                                                                const row_span *rs, int64_t o) {
    const sp_weight *w = rs->w;
    const uint8_t *row = w->data + (size_t)o * w->row_bytes;
    const ptrdiff_t ahead = rs->prefetch && o + 1 + PAIR_AHEAD_ROWS < rs->o_end ? PAIR_AHEAD_ROWS * (ptrdiff_t)w->row_bytes : 0;
    const bool first = rs->c0 == 0, last = rs->c1 == rs->n_chunks;
    const k_span sp_a = {rs->c0, rs->c1, first, last, rs->state ? rs->state[o - rs->o0] : NULL};
    const k_span sp_b = {rs->c0, rs->c1, first, last, rs->state ? rs->state[o + 1 - rs->o0] : NULL};
    float dots_a[TOKEN_GROUP], dots_b[TOKEN_GROUP];
    pair_span_group(type, row, row + w->row_bytes, at, G, halves, &sp_a, &sp_b, rs->chunk_bytes, ahead, dots_a, dots_b);
    if (last)
        for (int t = 0; t < G; t++) rs->y[t * rs->y_stride + o] = dots_a[t], rs->y[t * rs->y_stride + o + 1] = dots_b[t];
}

/* The rows of rs in pairs; an odd last row alone (span_rows_alone). */
static inline __attribute__((always_inline)) void pair_group_rows(sprout_type type, const act_tile *at, const int G, const bool halves,
                                                                  const row_span *rs) {
    int64_t o = rs->o0;
    for (; o + 1 < rs->o1; o += 2) span_row_pair(type, at, G, halves, rs, o);
    if (o < rs->o1) {
        row_span one = *rs;
        one.o0 = o, one.o1 = o + 1, one.state = rs->state ? rs->state + (o - rs->o0) : NULL;
        span_rows_alone(type, at, G, &one);
    }
}

/* A copy per pairs_type, pairs_group (G is 4 or TOKEN_GROUP here) and
 * width of the products (pair_chunk_tokens' halves). */
static void pair_rows(sprout_type type, const act_tile *at, int G, bool halves, const row_span *rs) {
#define PAIR_CASE(T)                                                                  \
    case T:                                                                           \
        if (halves && G == 4) pair_group_rows(T, at, 4, true, rs);                    \
        else if (halves) pair_group_rows(T, at, TOKEN_GROUP, true, rs);               \
        else if (G == 4) pair_group_rows(T, at, 4, false, rs);                        \
        else pair_group_rows(T, at, TOKEN_GROUP, false, rs);                          \
        break;
    switch (type) {
        PAIR_CASE(SPROUT_TYPE_Q4_0)
        PAIR_CASE(SPROUT_TYPE_Q8_0)
        PAIR_CASE(SPROUT_TYPE_IQ4_NL)
        PAIR_CASE(SPROUT_TYPE_MXFP4)
        PAIR_CASE(SPROUT_TYPE_Q4_K)
        PAIR_CASE(SPROUT_TYPE_Q5_K)
        PAIR_CASE(SPROUT_TYPE_Q6_K)
    default: span_rows_alone(type, at, G, rs); break;
    }
#undef PAIR_CASE
}

#endif
