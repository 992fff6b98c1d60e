// tiles.cu: GeoTIFF tiles of f32 maps compressed on the device (the floating-point predictor,
// then DEFLATE in a zlib stream), one block of 256 threads a 256 x 256 tile.
//
// The twin of geofield-io's `geotiff::segdeflate::compress` (the CPU oracle): the same parse,
// the same Huffman tables, the same bits, byte for byte. Thread t owns the tile's row t: its
// 1024 predictor bytes are one segment, parsed greedily against the fixed distances once; its
// tokens (16 bits each) are kept for the two later passes (each segment's bit count; the bits
// themselves). Every thread takes part in building the tables; thread 0 merges.

#define TD_ROWS 256
#define TD_SEG 1024
#define TD_TILE_BYTES (TD_ROWS * TD_SEG)
#define TD_NLIT 286
#define TD_NDIST 30
#define TD_NDISTANCES 8
#define TD_MAX_MATCH 258

struct TileParams {
    u64 cols;      // the strip's columns
    u64 rows;      // the strip's rows
    u64 cap;       // bytes reserved per tile in `out` (a multiple of 4)
    u32 across;    // tiles across
    u32 tiles;     // tiles in the launch (across x tile rows)
    u32 fill;      // the bits stored for NaN cells when has_fill
    u32 has_fill;
};
GF_CHECK_SIZE(TileParams, 40);

__constant__ u32 td_distances[TD_NDISTANCES] = {1, 2, 3, 4, 8, 256, 512, 1024};
__constant__ unsigned short td_len_base[29] = {3,   4,   5,   6,   7,   8,   9,   10,  11, 13,
                                               15,  17,  19,  23,  27,  31,  35,  43,  51, 59,
                                               67,  83,  99,  115, 131, 163, 195, 227, 258};
__constant__ unsigned char td_len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
__constant__ unsigned short td_dist_base[30] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
__constant__ unsigned char td_dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
__constant__ unsigned char td_cl_order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                              11, 4,  12, 3, 13, 2, 14, 1, 15};

__device__ __forceinline__ u32 td_len_code(u32 len) {
    u32 i = 28;
    while (td_len_base[i] > len) --i;
    return i;  // code 257 + i
}

__device__ __forceinline__ u32 td_dist_code(u32 dist) {
    u32 i = 29;
    while (td_dist_base[i] > dist) --i;
    return i;
}

// The longest match at i (against the distances, not past end, at most 258) and the index of
// its distance; a match as long as it can be ends the search (no later one is longer).
__device__ __forceinline__ u32 td_match(const unsigned char* d, u32 i, u32 end, u32* which) {
    u32 best = 0, best_k = 0;
    const u32 most = min(end - i, (u32)TD_MAX_MATCH);
    const unsigned char c = d[i];
    for (u32 k = 0; k < TD_NDISTANCES; ++k) {
        u32 dd = td_distances[k];
        if (dd > i) break;
        if (d[i - dd] != c) continue;
        u32 l = 1;
        while (l < most && d[i + l] == d[i + l - dd]) ++l;
        if (l > best) {
            best = l;
            best_k = k;
            if (best == most) break;
        }
    }
    *which = best_k;
    return best;
}

// A token of the parse in 16 bits: a literal byte, or (bit 15) a match of length 3 + bits 0-7
// at distance td_distances[bits 8-10].
__device__ __forceinline__ unsigned short td_token(u32 len, u32 k, u32 lit) {
    return len >= 3 ? (unsigned short)(0x8000u | (k << 8) | (len - 3)) : (unsigned short)lit;
}

// Shared state of one tile's block.
struct TdShared {
    u32 lit_f[TD_NLIT];
    u32 dist_f[TD_NDIST];
    u32 cl_f[19];
    unsigned char lit_l[TD_NLIT];
    unsigned char dist_l[TD_NDIST];
    unsigned char cl_l[19];
    unsigned short lit_c[TD_NLIT];
    unsigned short dist_c[TD_NDIST];
    unsigned short cl_c[19];
    // Code-length tokens: symbol and extra value.
    unsigned char cl_sym[TD_NLIT + TD_NDIST];
    unsigned char cl_x[TD_NLIT + TD_NDIST];
    u32 n_cl;
    u32 hlit, hdist, hclen;
    // The Huffman builder's scratch (one tree at a time).
    unsigned short leaves[TD_NLIT];
    u32 f[TD_NLIT];
    u64 weight[TD_NLIT];
    unsigned short kids[TD_NLIT][2];
    unsigned short depth[TD_NLIT];
    u32 m;
    u32 again;
    u32 count[16];
    u32 next[16];
    // Per segment: Adler-32 partial sums, bit counts, then bit offsets.
    u32 ad_a[TD_ROWS];
    u32 ad_b[TD_ROWS];
    u64 bits[TD_ROWS];
    u32 bits_hdr;
    u32 stored;
    u64 total_bits;
    u32 adler;
};

// Code lengths (at most `limit`) of `freq` into `out`: the rule of segdeflate::huffman_lengths.
// Every thread of the block calls it. The leaves' order (frequency, then symbol) is each used
// symbol's rank, counted by its own thread (insertion sort's order); thread 0 merges.
__device__ __forceinline__ void td_lengths(TdShared& s, const u32* freq, u32 n, u32 limit, unsigned char* out) {
    const u32 t = threadIdx.x;
    for (u32 k = t; k < n; k += TD_ROWS) s.f[k] = freq[k];
    __syncthreads();
    if (t == 0) {
        u32 used = 0;
        for (u32 k = 0; k < n; ++k) used += s.f[k] > 0;
        for (u32 k = 0; k < n && used < 2; ++k) {
            if (s.f[k] == 0) {
                s.f[k] = 1;
                ++used;
            }
        }
        s.m = used;
    }
    __syncthreads();
    const u32 m = s.m;
    for (;;) {
        for (u32 sym = t; sym < n; sym += TD_ROWS) {
            u32 fs = s.f[sym];
            if (fs == 0) continue;
            u32 rank = 0;
            for (u32 j = 0; j < n; ++j) {
                u32 fj = s.f[j];
                rank += (fj > 0 && (fj < fs || (fj == fs && j < sym))) ? 1u : 0u;
            }
            s.leaves[rank] = (unsigned short)sym;
        }
        __syncthreads();
        if (t == 0) {
            u32 li = 0, qi = 0;
            for (u32 k = 0; k + 1 < m; ++k) {
                u64 w = 0;
                for (int c = 0; c < 2; ++c) {
                    bool leaf = li < m && (qi >= k || (u64)s.f[s.leaves[li]] <= s.weight[qi]);
                    if (leaf) {
                        s.kids[k][c] = (unsigned short)li;
                        w += s.f[s.leaves[li]];
                        ++li;
                    } else {
                        s.kids[k][c] = (unsigned short)(m + qi);
                        w += s.weight[qi];
                        ++qi;
                    }
                }
                s.weight[k] = w;
            }
            for (u32 k = 0; k < n; ++k) out[k] = 0;
            u32 deepest = 0;
            s.depth[m - 2] = 0;
            for (int k = (int)m - 2; k >= 0; --k) {
                for (int c = 0; c < 2; ++c) {
                    u32 kid = s.kids[k][c];
                    u32 d = s.depth[k] + 1u;
                    if (kid < m) {
                        out[s.leaves[kid]] = (unsigned char)d;
                        deepest = max(deepest, d);
                    } else {
                        s.depth[kid - m] = (unsigned short)d;
                    }
                }
            }
            s.again = deepest > limit ? 1u : 0u;
        }
        __syncthreads();
        if (!s.again) return;
        for (u32 k = t; k < n; k += TD_ROWS) s.f[k] = (s.f[k] + 1) / 2;
        __syncthreads();
    }
}

// Canonical codes of `len`, bit-reversed for LSB-first output (`count`, `next`: 16 words of
// scratch each, in shared memory: local arrays would be spilled).
__device__ __forceinline__ void td_codes(const unsigned char* len, u32 n, unsigned short* code,
                                         u32* count, u32* next) {
    for (int b = 0; b < 16; ++b) count[b] = 0;
    for (u32 k = 0; k < n; ++k) count[len[k]]++;
    count[0] = 0;
    u32 c = 0;
    next[0] = 0;
    for (int b = 1; b < 16; ++b) {
        c = (c + count[b - 1]) << 1;
        next[b] = c;
    }
    for (u32 k = 0; k < n; ++k) {
        u32 l = len[k];
        if (l == 0) {
            code[k] = 0;
            continue;
        }
        u32 v = next[l]++;
        code[k] = (unsigned short)(__brev(v) >> (32 - l));
    }
}

// The value of entry k of the concatenated code-length sequence.
__device__ __forceinline__ u32 td_seq(const TdShared& s, u32 k) {
    return k < s.hlit ? s.lit_l[k] : s.dist_l[k - s.hlit];
}

__device__ __forceinline__ u32 td_cl_extra(u32 sym) {
    return sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0;
}

// Bits of one thread's range, LSB first: words inside the range are stored, its two end words
// (shared with the neighbouring ranges and the trailer) OR-ed atomically into the zeroed output.
struct TdWriter {
    u32* out;
    u64 word;  // the word the pending bits belong to
    u64 acc;   // pending bits (the first `start % 32` of the first word are zeros)
    u32 n;     // pending bits in acc
    u64 first_word, last_word;

    __device__ void emit() {
        u32 v = (u32)acc;
        if (word == first_word || word == last_word) {
            atomicOr(out + word, v);
        } else {
            out[word] = v;
        }
    }

    // `value` has no bits at or above `bits` (at most 16).
    __device__ void put(u32 value, u32 bits) {
        acc |= (u64)value << n;
        n += bits;
        if (n >= 32) {
            emit();
            ++word;
            acc >>= 32;
            n -= 32;
        }
    }

    __device__ void finish() {
        if (n > 0) emit();
    }
};

// A writer of bits [start, end) of `out`.
__device__ __forceinline__ TdWriter td_writer(u32* out, u64 start, u64 end) {
    TdWriter w;
    w.out = out;
    w.word = start / 32;
    w.acc = 0;
    w.n = (u32)(start % 32);
    w.first_word = start / 32;
    w.last_word = end > start ? (end - 1) / 32 : start / 32;
    return w;
}

#if GF_WANTED(tiles_deflate_f32)
// Four blocks an SM: 64 registers a thread, without spills on sm_80 and sm_90 (ptxas' own
// choice left it at 40 to 64 with a few spilled words, which the compile test refuses).
extern "C" __global__ void __launch_bounds__(TD_ROWS, 4)
tiles_deflate_f32(TileParams p, const float* __restrict__ vals, unsigned char* __restrict__ raw,
                  unsigned short* __restrict__ tok, u32* __restrict__ out,
                  u32* __restrict__ out_len) {
    __shared__ TdShared s;
    __shared__ u32 row_bits[TD_ROWS];
    const u32 tile = blockIdx.x;
    if (tile >= p.tiles) return;
    const u32 t = threadIdx.x;
    const u64 row0 = (u64)(tile / p.across) * TD_ROWS;
    const u64 col0 = (u64)(tile % p.across) * TD_ROWS;
    unsigned char* d = raw + (u64)tile * TD_TILE_BYTES;
    // Token j of thread t at tk[j * TD_ROWS + t] (threads read their j-th tokens together).
    unsigned short* tk = tok + (u64)tile * TD_SEG * TD_ROWS;
    __shared__ u32 ntok[TD_ROWS];
    u32* o = out + (u64)tile * (p.cap / 4);

    for (u32 k = t; k < TD_NLIT; k += TD_ROWS) s.lit_f[k] = 0;
    if (t < TD_NDIST) s.dist_f[t] = 0;

    // The predictor, one tile row at a time: thread t takes value t of the row.
    for (u32 r = 0; r < TD_ROWS; ++r) {
        u64 row = row0 + r, col = col0 + t;
        float v = 0.0f;
        if (row < p.rows && col < p.cols) {
            v = vals[row * p.cols + col];
            if (p.has_fill && isnan(v)) v = __uint_as_float(p.fill);
        }
        u32 bits = __float_as_uint(v);
        row_bits[t] = bits;
        __syncthreads();
        u32 prev_v = t > 0 ? row_bits[t - 1] : 0;
        u32 last_v = row_bits[TD_ROWS - 1];
        for (u32 k = 0; k < 4; ++k) {
            u32 cur = (bits >> (24 - 8 * k)) & 0xff;
            u32 prev;
            if (t > 0) {
                prev = (prev_v >> (24 - 8 * k)) & 0xff;
            } else {
                prev = k > 0 ? (last_v >> (24 - 8 * (k - 1))) & 0xff : 0;
            }
            d[r * TD_SEG + k * TD_ROWS + t] = (unsigned char)(cur - prev);
        }
        __syncthreads();
    }

    // Pass 1: frequencies, and the segment's Adler-32 sums.
    const u32 start = t * TD_SEG, end = start + TD_SEG;
    {
        u32 a = 0, b = 0;
        for (u32 i = start; i < end; ++i) {
            a += d[i];
            b += d[i] * (end - i);
        }
        s.ad_a[t] = a % 65521u;
        s.ad_b[t] = b % 65521u;
        u32 i = start, j = 0;
        while (i < end) {
            u32 k;
            u32 l = td_match(d, i, end, &k);
            u32 lit = d[i];
            tk[j++ * TD_ROWS + t] = td_token(l, k, lit);
            if (l >= 3) {
                atomicAdd(&s.lit_f[257 + td_len_code(l)], 1u);
                atomicAdd(&s.dist_f[td_dist_code(td_distances[k])], 1u);
                i += l;
            } else {
                atomicAdd(&s.lit_f[lit], 1u);
                ++i;
            }
        }
        ntok[t] = j;
    }
    __syncthreads();

    // The tables (every thread takes part in sorting the symbols; thread 0 merges), then the
    // header's size, the choice of stored blocks and the checksum: thread 0.
    if (t == 0) s.lit_f[256] += 1;
    __syncthreads();
    td_lengths(s, s.lit_f, TD_NLIT, 15, s.lit_l);
    td_lengths(s, s.dist_f, TD_NDIST, 15, s.dist_l);
    if (t == 0) {
        u32 hlit = TD_NLIT;
        while (hlit > 257 && s.lit_l[hlit - 1] == 0) --hlit;
        u32 hdist = TD_NDIST;
        while (hdist > 1 && s.dist_l[hdist - 1] == 0) --hdist;
        s.hlit = hlit;
        s.hdist = hdist;
        // The code-length sequence, run-length coded (segdeflate::code_length_tokens).
        u32 nseq = hlit + hdist, i = 0, nt = 0;
        for (int k = 0; k < 19; ++k) s.cl_f[k] = 0;
        while (i < nseq) {
            u32 v = td_seq(s, i), run = 1;
            while (i + run < nseq && td_seq(s, i + run) == v) ++run;
            if (v == 0 && run >= 11) {
                u32 r = min(run, 138u);
                s.cl_sym[nt] = 18;
                s.cl_x[nt++] = (unsigned char)(r - 11);
                i += r;
            } else if (v == 0 && run >= 3) {
                s.cl_sym[nt] = 17;
                s.cl_x[nt++] = (unsigned char)(run - 3);
                i += run;
            } else {
                s.cl_sym[nt] = (unsigned char)v;
                s.cl_x[nt++] = 0;
                ++i;
                u32 left = run - 1;
                while (v != 0 && left >= 3) {
                    u32 r = min(left, 6u);
                    s.cl_sym[nt] = 16;
                    s.cl_x[nt++] = (unsigned char)(r - 3);
                    i += r;
                    left -= r;
                }
            }
        }
        s.n_cl = nt;
        for (u32 k = 0; k < nt; ++k) s.cl_f[s.cl_sym[k]]++;
    }
    __syncthreads();
    td_lengths(s, s.cl_f, 19, 7, s.cl_l);
    if (t == 0) {
        const u32 nt = s.n_cl;
        u32 hclen = 19;
        while (hclen > 4 && s.cl_l[td_cl_order[hclen - 1]] == 0) --hclen;
        s.hclen = hclen;
        td_codes(s.lit_l, TD_NLIT, s.lit_c, s.count, s.next);
        td_codes(s.dist_l, TD_NDIST, s.dist_c, s.count, s.next);
        td_codes(s.cl_l, 19, s.cl_c, s.count, s.next);
        u64 hdr = 3 + 14 + 3 * (u64)hclen;
        for (u32 k = 0; k < nt; ++k) hdr += s.cl_l[s.cl_sym[k]] + td_cl_extra(s.cl_sym[k]);
        u64 body = 0;
        for (u32 k = 0; k < TD_NLIT; ++k) {
            u32 extra = k > 256 ? td_len_extra[k - 257] : 0;
            body += (u64)s.lit_f[k] * (s.lit_l[k] + extra);
        }
        for (u32 k = 0; k < TD_NDIST; ++k)
            body += (u64)s.dist_f[k] * (s.dist_l[k] + td_dist_extra[k]);
        u64 dyn_bytes = (hdr + body + 7) / 8;
        u64 stored_bytes = TD_TILE_BYTES + 5 * ((TD_TILE_BYTES + 65534) / 65535);
        s.stored = dyn_bytes < stored_bytes ? 0 : 1;
        s.bits_hdr = (u32)hdr;
        // Adler-32 of the tile from the segments' sums: byte j (0-based) of n weighs n - j.
        u64 A = 1, B = TD_TILE_BYTES % 65521u;
        for (u32 k = 0; k < TD_ROWS; ++k) {
            u64 after = (u64)TD_TILE_BYTES - (u64)(k + 1) * TD_SEG;
            A = (A + s.ad_a[k]) % 65521u;
            B = (B + s.ad_b[k] + (u64)s.ad_a[k] * (after % 65521u)) % 65521u;
        }
        s.adler = (u32)((B << 16) | A);
    }
    __syncthreads();

    if (s.stored) {
        // Stored blocks of 65535 bytes: raw byte j goes after the zlib header and the headers
        // of blocks 0 ..= j / 65535.
        unsigned char* ob = (unsigned char*)o;
        for (u32 i = start; i < end; ++i) ob[2 + 5 * (i / 65535 + 1) + i] = d[i];
        const u32 nblocks = (TD_TILE_BYTES + 65534) / 65535;
        if (t < nblocks) {
            u32 len = min(65535u, TD_TILE_BYTES - t * 65535u);
            unsigned char* h = ob + 2 + (u64)t * (65535 + 5);
            h[0] = t + 1 == nblocks ? 1 : 0;
            h[1] = len & 0xff;
            h[2] = len >> 8;
            h[3] = (~len) & 0xff;
            h[4] = ((~len) >> 8) & 0xff;
        }
        if (t == 0) {
            ob[0] = 0x78;
            ob[1] = 0x01;
            u64 at = 2 + 5 * nblocks + TD_TILE_BYTES;
            for (int k = 0; k < 4; ++k) ob[at + k] = (s.adler >> (24 - 8 * k)) & 0xff;
            out_len[tile] = (u32)(at + 4);
        }
        return;
    }

    // Pass 2: each segment's bits.
    {
        u64 bits = 0;
        const u32 nt = ntok[t];
        for (u32 j = 0; j < nt; ++j) {
            u32 v = tk[j * TD_ROWS + t];
            if (v & 0x8000u) {
                u32 l = (v & 0xffu) + 3, dc = td_dist_code(td_distances[(v >> 8) & 7u]);
                u32 lc = td_len_code(l);
                bits += s.lit_l[257 + lc] + td_len_extra[lc] + s.dist_l[dc] + td_dist_extra[dc];
            } else {
                bits += s.lit_l[v];
            }
        }
        if (t + 1 == TD_ROWS) bits += s.lit_l[256];
        s.bits[t] = bits;
    }
    __syncthreads();
    if (t == 0) {
        u64 at = 16 + s.bits_hdr;
        for (u32 k = 0; k < TD_ROWS; ++k) {
            u64 b = s.bits[k];
            s.bits[k] = at;
            at += b;
        }
        s.total_bits = at;
    }
    __syncthreads();

    // Pass 3: the bits. Thread 0 writes the zlib and block headers first.
    {
        u64 from = t == 0 ? 0 : s.bits[t];
        u64 to = t + 1 < TD_ROWS ? s.bits[t + 1] : s.total_bits;
        TdWriter w = td_writer(o, from, to);
        if (t == 0) {
            w.put(0x78, 8);
            w.put(0x01, 8);
            w.put(1, 1);
            w.put(2, 2);
            w.put(s.hlit - 257, 5);
            w.put(s.hdist - 1, 5);
            w.put(s.hclen - 4, 4);
            for (u32 k = 0; k < s.hclen; ++k) w.put(s.cl_l[td_cl_order[k]], 3);
            for (u32 k = 0; k < s.n_cl; ++k) {
                u32 sym = s.cl_sym[k];
                w.put(s.cl_c[sym], s.cl_l[sym]);
                w.put(s.cl_x[k], td_cl_extra(sym));
            }
        }
        const u32 nt = ntok[t];
        for (u32 j = 0; j < nt; ++j) {
            u32 v = tk[j * TD_ROWS + t];
            if (v & 0x8000u) {
                u32 l = (v & 0xffu) + 3, dist = td_distances[(v >> 8) & 7u];
                u32 lc = td_len_code(l), dc = td_dist_code(dist);
                w.put(s.lit_c[257 + lc], s.lit_l[257 + lc]);
                w.put(l - td_len_base[lc], td_len_extra[lc]);
                w.put(s.dist_c[dc], s.dist_l[dc]);
                w.put(dist - td_dist_base[dc], td_dist_extra[dc]);
            } else {
                w.put(s.lit_c[v], s.lit_l[v]);
            }
        }
        if (t + 1 == TD_ROWS) w.put(s.lit_c[256], s.lit_l[256]);
        w.finish();
    }
    if (t == 0) {
        u64 at = (s.total_bits + 7) / 8;
        for (int k = 0; k < 4; ++k) {
            u64 byte = at + k;
            u32 v = (s.adler >> (24 - 8 * k)) & 0xff;
            atomicOr(o + byte / 4, v << (8 * (byte % 4)));
        }
        out_len[tile] = (u32)(at + 4);
    }
}
#endif

// Packs each tile's stream (`len[k]` bytes of its `cap` bytes) at `offset[k]` of `packed`.
#if GF_WANTED(tiles_pack)
extern "C" __global__ void tiles_pack(const unsigned char* __restrict__ out, u64 cap, u32 tiles,
                                      const u32* __restrict__ len, const u64* __restrict__ offset,
                                      unsigned char* __restrict__ packed) {
    u32 tile = blockIdx.x;
    if (tile >= tiles) return;
    const unsigned char* src = out + (u64)tile * cap;
    unsigned char* dst = packed + offset[tile];
    for (u32 i = threadIdx.x; i < len[tile]; i += blockDim.x) dst[i] = src[i];
}
#endif
