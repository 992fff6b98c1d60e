use std::arch::x86_64::*;

use super::batched::{Batch, Ctx};
use super::{TABLE, fly_draws};
use crate::forest::exact_math::x8;
use crate::forest::rng::philox4x32_10_x16;

#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) fn batch(ctx: &Ctx, b: &Batch<16>, cells: &mut [usize; 32]) -> usize {
    let words = |w: &[u32; 16]| {
        let w = w.map(|x| x as i32);
        _mm512_setr_epi32(
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
            w[14], w[15],
        )
    };
    let x = [
        words(&b.ctr0),
        words(&b.ctr1),
        words(&b.ctr2),
        _mm512_set1_epi32(ctx.year as i32),
    ];
    let [y0, y1, y2, y3] = philox4x32_10_x16(x, ctx.key);
    let (lo, hi) = (_mm512_castsi512_si256, |v| {
        _mm512_extracti64x4_epi64::<1>(v)
    });
    // Group g: blocks 8(g % 2)..+8, seeds of words 0-1 (g < 2) or 2-3 (g ≥ 2).
    let a = [lo(y0), hi(y0), lo(y2), hi(y2)];
    let d = [lo(y1), hi(y1), lo(y3), hi(y3)];
    let valid = [b.first & 0xFF, b.first >> 8, b.second & 0xFF, b.second >> 8];
    if valid == [0; 4] {
        return 0;
    }
    let fl = ctx.flight;
    let set1 = _mm512_set1_pd;
    let zero = _mm512_setzero_pd();
    let neg = |v: __m512d| {
        _mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(v),
            _mm512_set1_epi64(i64::MIN),
        ))
    };
    let mut pos = [zero; 4];
    let mut beyond = [0u8; 4];
    let mut near = [0u8; 4];
    for g in 0..4 {
        let af = _mm512_cvtepu32_pd(a[g]);
        let u = _mm512_mul_pd(_mm512_add_pd(af, set1(0.5)), set1(1.0 / 4_294_967_296.0));
        near[g] = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(u, set1(0.5));
        let w = _mm512_mask_blend_pd(near[g], _mm512_sub_pd(set1(1.0), u), u);
        let x = neg(x8::ln(w));
        let p = _mm512_mul_pd(
            _mm512_sub_pd(x, set1(std::f64::consts::LN_2)),
            set1(fl.inv_step),
        );
        beyond[g] = _mm512_cmp_pd_mask::<_CMP_NLT_UQ>(p, set1(TABLE as f64));
        pos[g] = _mm512_mask_blend_pd(beyond[g], p, zero);
    }
    let mut r = [zero; 4];
    let mut odd = [0u8; 4];
    for g in 0..4 {
        let j = _mm256_min_epi32(
            _mm512_cvttpd_epi32(_mm512_max_pd(pos[g], zero)),
            _mm256_set1_epi32(TABLE as i32 - 1),
        );
        let f = _mm512_sub_pd(pos[g], _mm512_cvtepi32_pd(j));
        let jl = lanes8(j);
        let mut row = [[0.0; 2]; 8];
        for l in 0..8 {
            let far = if near[g] >> l & 1 == 1 { 0 } else { TABLE };
            row[l] = fl.steps[jl[l] as usize + far];
        }
        let col = |i: usize| {
            _mm512_setr_pd(
                row[0][i], row[1][i], row[2][i], row[3][i], row[4][i], row[5][i], row[6][i],
                row[7][i],
            )
        };
        let lr = _mm512_fmadd_pd(f, col(1), col(0));
        let in_exp = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(lr, set1(-700.0))
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(lr, set1(700.0));
        r[g] = x8::exp(_mm512_mask_blend_pd(in_exp, zero, lr));
        odd[g] = beyond[g] | !in_exp;
    }
    let mut idx = [_mm512_setzero_si512(); 4];
    let mut take = [0u32; 4];
    let mut fallback = [0u32; 4];
    let h = set1(ctx.plot.h);
    let cols = set1(ctx.plot.cols);
    let rows = set1(ctx.plot.rows);
    let two52 = set1(4_503_599_627_370_496.0);
    for g in 0..4 {
        let kl = lanes8(_mm256_srli_epi32::<20>(d[g]));
        let mut k = [[0.0; 4]; 8];
        for l in 0..8 {
            k[l] = fl.turns[kl[l] as usize];
        }
        let fd = _mm512_mul_pd(
            _mm512_cvtepu32_pd(_mm256_and_si256(d[g], _mm256_set1_epi32(0xF_FFFF))),
            set1(1.0 / 1_048_576.0),
        );
        let col = |i: usize| {
            _mm512_setr_pd(
                k[0][i], k[1][i], k[2][i], k[3][i], k[4][i], k[5][i], k[6][i], k[7][i],
            )
        };
        let cos = _mm512_add_pd(col(0), _mm512_mul_pd(fd, col(1)));
        let sin = _mm512_add_pd(col(2), _mm512_mul_pd(fd, col(3)));
        let (u0, v0) = if g % 2 == 0 {
            (&b.u0[..8], &b.v0[..8])
        } else {
            (&b.u0[8..], &b.v0[8..])
        };
        let pu = _mm512_setr_pd(u0[0], u0[1], u0[2], u0[3], u0[4], u0[5], u0[6], u0[7]);
        let pv = _mm512_setr_pd(v0[0], v0[1], v0[2], v0[3], v0[4], v0[5], v0[6], v0[7]);
        let mut u = _mm512_add_pd(pu, _mm512_mul_pd(r[g], cos));
        let mut v = _mm512_sub_pd(pv, _mm512_mul_pd(r[g], sin));
        let mut bad = odd[g];
        if let Some((lx, ly)) = ctx.plot.periods {
            let (wu, bu) = wrap8(u, lx);
            let (wv, bv) = wrap8(v, ly);
            (u, v) = (wu, wv);
            bad |= bu | bv;
        }
        let (c, rr) = match ctx.plot.inv_h {
            Some(inv) => (
                _mm512_roundscale_pd::<0x09>(_mm512_mul_pd(u, set1(inv))),
                _mm512_roundscale_pd::<0x09>(_mm512_mul_pd(v, set1(inv))),
            ),
            None => (
                _mm512_roundscale_pd::<0x09>(_mm512_div_pd(u, h)),
                _mm512_roundscale_pd::<0x09>(_mm512_div_pd(v, h)),
            ),
        };
        let inside = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(c, zero)
            & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(c, cols)
            & _mm512_cmp_pd_mask::<_CMP_GE_OQ>(rr, zero)
            & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(rr, rows);
        let cell = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(rr, cols), c), two52);
        idx[g] = _mm512_xor_si512(_mm512_castpd_si512(cell), _mm512_castpd_si512(two52));
        fallback[g] = u32::from(bad) & valid[g];
        take[g] = u32::from(inside) & valid[g] & !fallback[g];
    }
    // Each landed seed's cell to `cells` (at most 32).
    let mut n = 0;
    for g in 0..4 {
        let (i0, i1) = (
            _mm512_castsi512_si256(idx[g]),
            _mm512_extracti64x4_epi64::<1>(idx[g]),
        );
        let lane_cells = [
            _mm256_extract_epi64::<0>(i0),
            _mm256_extract_epi64::<1>(i0),
            _mm256_extract_epi64::<2>(i0),
            _mm256_extract_epi64::<3>(i0),
            _mm256_extract_epi64::<0>(i1),
            _mm256_extract_epi64::<1>(i1),
            _mm256_extract_epi64::<2>(i1),
            _mm256_extract_epi64::<3>(i1),
        ];
        for (l, &cell) in lane_cells.iter().enumerate() {
            cells[n & 31] = cell as usize;
            n += (take[g] >> l & 1) as usize;
        }
        if fallback[g] != 0 {
            let (al, dl) = (lanes8(a[g]), lanes8(d[g]));
            for l in 0..8 {
                if fallback[g] >> l & 1 == 1 {
                    let (u0, v0) = (b.u0[8 * (g % 2) + l], b.v0[8 * (g % 2) + l]);
                    let periods = ctx.plot.periods;
                    let (_, u, v) = fly_draws(fl, al[l] as u32, dl[l] as u32, u0, v0, periods);
                    if let Some(c) = ctx.plot.cell(u, v) {
                        cells[n & 31] = c;
                        n += 1;
                    }
                }
            }
        }
    }
    n
}

/// [`super::wrap`] on eight lanes, with a mask of the lanes it leaves to `rem_euclid`.
#[target_feature(enable = "avx512f")]
#[inline]
fn wrap8(x: __m512d, period: f64) -> (__m512d, u8) {
    let p = _mm512_set1_pd(period);
    let zero = _mm512_setzero_pd();
    let below = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, zero);
    let above = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, p);
    let up = _mm512_add_pd(x, p);
    let down = _mm512_sub_pd(x, p);
    let up_ok = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(up, zero);
    let down_ok = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(down, p);
    let up = _mm512_min_pd(up, _mm512_set1_pd(period.next_down()));
    let y = _mm512_mask_blend_pd(above, _mm512_mask_blend_pd(below, x, up), down);
    (y, (below & !up_ok) | (above & !down_ok))
}

#[target_feature(enable = "avx2")]
#[inline]
fn lanes8(v: __m256i) -> [i32; 8] {
    [
        _mm256_extract_epi32::<0>(v),
        _mm256_extract_epi32::<1>(v),
        _mm256_extract_epi32::<2>(v),
        _mm256_extract_epi32::<3>(v),
        _mm256_extract_epi32::<4>(v),
        _mm256_extract_epi32::<5>(v),
        _mm256_extract_epi32::<6>(v),
        _mm256_extract_epi32::<7>(v),
    ]
}
