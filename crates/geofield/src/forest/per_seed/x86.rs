use std::arch::x86_64::*;

use super::batched::{Batch, Ctx};
use super::{TABLE, fly_draws};
use crate::forest::exact_math::x4;
use crate::forest::rng::philox4x32_10_x8;

/// One value per group of four seeds of a batch.
type Quad<T> = [T; 4];

#[target_feature(enable = "avx2,fma")]
pub(super) fn batch(ctx: &Ctx, b: &Batch<8>, cells: &mut [usize; 16]) -> usize {
    let words = |w: &[u32; 8]| {
        let w = w.map(|x| x as i32);
        _mm256_setr_epi32(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
    };
    let x = [
        words(&b.ctr0),
        words(&b.ctr1),
        words(&b.ctr2),
        _mm256_set1_epi32(ctx.year as i32),
    ];
    let [y0, y1, y2, y3] = philox4x32_10_x8(x, ctx.key);
    let (lo, hi) = (_mm256_castsi256_si128, |v| _mm256_extracti128_si256::<1>(v));
    // Group g: blocks 4(g % 2)..+4, seeds of words 0-1 (g < 2) or 2-3 (g ≥ 2).
    let a: Quad<__m128i> = [lo(y0), hi(y0), lo(y2), hi(y2)];
    let d: Quad<__m128i> = [lo(y1), hi(y1), lo(y3), hi(y3)];
    let valid: Quad<u32> = [b.first & 0xF, b.first >> 4, b.second & 0xF, b.second >> 4];
    if valid == [0; 4] {
        return 0;
    }
    let fl = ctx.flight;
    let set1 = _mm256_set1_pd;
    let zero = _mm256_setzero_pd();
    // Each stage runs over the four groups: four independent chains for the out-of-order
    // core to overlap.
    let mut pos = [zero; 4];
    let mut beyond = [zero; 4];
    let mut near = [zero; 4];
    for g in 0..4 {
        // u = (a + ½) 2⁻³², a unsigned (exact).
        let af = _mm256_add_pd(
            _mm256_cvtepi32_pd(_mm_xor_si128(a[g], _mm_set1_epi32(i32::MIN))),
            set1(2_147_483_648.0),
        );
        let u = _mm256_mul_pd(_mm256_add_pd(af, set1(0.5)), set1(1.0 / 4_294_967_296.0));
        near[g] = _mm256_cmp_pd::<_CMP_LT_OQ>(u, set1(0.5));
        let w = _mm256_blendv_pd(_mm256_sub_pd(set1(1.0), u), u, near[g]);
        let x = _mm256_xor_pd(x4::ln(w), set1(-0.0));
        let p = _mm256_mul_pd(
            _mm256_sub_pd(x, set1(std::f64::consts::LN_2)),
            set1(fl.inv_step),
        );
        // NaN or ≥ TABLE: beyond the tables.
        beyond[g] = _mm256_cmp_pd::<_CMP_NLT_UQ>(p, set1(TABLE as f64));
        pos[g] = _mm256_blendv_pd(p, zero, beyond[g]);
    }
    let mut r = [zero; 4];
    let mut odd = [zero; 4];
    for g in 0..4 {
        let j = _mm_min_epi32(
            _mm256_cvttpd_epi32(_mm256_max_pd(pos[g], zero)),
            _mm_set1_epi32(TABLE as i32 - 1),
        );
        let f = _mm256_sub_pd(pos[g], _mm256_cvtepi32_pd(j));
        let nm = _mm256_movemask_pd(near[g]);
        let jl = lanes(j);
        let mut row = [[0.0; 2]; 4];
        for l in 0..4 {
            let far = if nm >> l & 1 == 1 { 0 } else { TABLE };
            row[l] = fl.steps[jl[l] as usize + far];
        }
        let base = _mm256_setr_pd(row[0][0], row[1][0], row[2][0], row[3][0]);
        let diff = _mm256_setr_pd(row[0][1], row[1][1], row[2][1], row[3][1]);
        let lr = _mm256_fmadd_pd(f, diff, base);
        let in_exp = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(lr, set1(-700.0)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(lr, set1(700.0)),
        );
        r[g] = x4::exp(_mm256_blendv_pd(zero, lr, in_exp));
        odd[g] = _mm256_or_pd(beyond[g], _mm256_andnot_pd(in_exp, all_ones()));
    }
    let mut idx = [_mm256_setzero_si256(); 4];
    let mut take = [0u32; 4];
    let mut fallback = [0u32; 4];
    let h = set1(ctx.plot.h);
    let cols = set1(ctx.plot.cols);
    let rows = set1(ctx.plot.rows);
    let two52 = set1(4_503_599_627_370_496.0);
    for g in 0..4 {
        // Direction: 12 bits the interval, 20 the fraction (exact).
        let kl = lanes(_mm_srli_epi32::<20>(d[g]));
        let mut k = [[0.0; 4]; 4];
        for l in 0..4 {
            k[l] = fl.turns[kl[l] as usize];
        }
        let fd = _mm256_mul_pd(
            _mm256_cvtepi32_pd(_mm_and_si128(d[g], _mm_set1_epi32(0xF_FFFF))),
            set1(1.0 / 1_048_576.0),
        );
        let col = |i: usize| _mm256_setr_pd(k[0][i], k[1][i], k[2][i], k[3][i]);
        let cos = _mm256_add_pd(col(0), _mm256_mul_pd(fd, col(1)));
        let sin = _mm256_add_pd(col(2), _mm256_mul_pd(fd, col(3)));
        let o = 4 * (g % 2);
        let (u0, v0) = (&b.u0, &b.v0);
        let pu = _mm256_setr_pd(u0[o], u0[o + 1], u0[o + 2], u0[o + 3]);
        let pv = _mm256_setr_pd(v0[o], v0[o + 1], v0[o + 2], v0[o + 3]);
        let mut u = _mm256_add_pd(pu, _mm256_mul_pd(r[g], cos));
        let mut v = _mm256_sub_pd(pv, _mm256_mul_pd(r[g], sin));
        let mut o = odd[g];
        if let Some((lx, ly)) = ctx.plot.periods {
            let (wu, bu) = wrap4(u, lx);
            let (wv, bv) = wrap4(v, ly);
            (u, v) = (wu, wv);
            o = _mm256_or_pd(o, _mm256_or_pd(bu, bv));
        }
        let (c, rr) = match ctx.plot.inv_h {
            Some(inv) => (
                _mm256_floor_pd(_mm256_mul_pd(u, set1(inv))),
                _mm256_floor_pd(_mm256_mul_pd(v, set1(inv))),
            ),
            None => (
                _mm256_floor_pd(_mm256_div_pd(u, h)),
                _mm256_floor_pd(_mm256_div_pd(v, h)),
            ),
        };
        let inside = _mm256_and_pd(
            _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GE_OQ>(c, zero),
                _mm256_cmp_pd::<_CMP_LT_OQ>(c, cols),
            ),
            _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GE_OQ>(rr, zero),
                _mm256_cmp_pd::<_CMP_LT_OQ>(rr, rows),
            ),
        );
        // rr · cols + c: an integer below the cell count (exact); + 2⁵² puts it in the low
        // mantissa bits.
        let cell = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(rr, cols), c), two52);
        idx[g] = _mm256_xor_si256(_mm256_castpd_si256(cell), _mm256_castpd_si256(two52));
        fallback[g] = _mm256_movemask_pd(o) as u32 & valid[g];
        take[g] = _mm256_movemask_pd(inside) as u32 & valid[g] & !fallback[g];
    }
    // Each landed seed's cell to `cells` (at most 16).
    let mut n = 0;
    for g in 0..4 {
        let lane_cells = [
            _mm256_extract_epi64::<0>(idx[g]),
            _mm256_extract_epi64::<1>(idx[g]),
            _mm256_extract_epi64::<2>(idx[g]),
            _mm256_extract_epi64::<3>(idx[g]),
        ];
        for (l, &cell) in lane_cells.iter().enumerate() {
            cells[n & 15] = cell as usize;
            n += (take[g] >> l & 1) as usize;
        }
        if fallback[g] != 0 {
            let (al, dl) = (lanes(a[g]), lanes(d[g]));
            for l in 0..4 {
                if fallback[g] >> l & 1 == 1 {
                    let (u0, v0) = (b.u0[4 * (g % 2) + l], b.v0[4 * (g % 2) + l]);
                    let periods = ctx.plot.periods;
                    let (_, u, v) = fly_draws(fl, al[l] as u32, dl[l] as u32, u0, v0, periods);
                    if let Some(c) = ctx.plot.cell(u, v) {
                        cells[n & 15] = c;
                        n += 1;
                    }
                }
            }
        }
    }
    n
}

/// [`super::wrap`] on four lanes, with a mask of the lanes it leaves to `rem_euclid`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn wrap4(x: __m256d, period: f64) -> (__m256d, __m256d) {
    let p = _mm256_set1_pd(period);
    let below = _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_setzero_pd());
    let above = _mm256_cmp_pd::<_CMP_GE_OQ>(x, p);
    let up = _mm256_add_pd(x, p);
    let down = _mm256_sub_pd(x, p);
    let up_ok = _mm256_cmp_pd::<_CMP_GE_OQ>(up, _mm256_setzero_pd());
    let down_ok = _mm256_cmp_pd::<_CMP_LT_OQ>(down, p);
    let up = _mm256_min_pd(up, _mm256_set1_pd(period.next_down()));
    let y = _mm256_blendv_pd(_mm256_blendv_pd(x, up, below), down, above);
    let odd = _mm256_or_pd(
        _mm256_andnot_pd(up_ok, below),
        _mm256_andnot_pd(down_ok, above),
    );
    (y, odd)
}

#[target_feature(enable = "avx2")]
#[inline]
fn all_ones() -> __m256d {
    _mm256_castsi256_pd(_mm256_set1_epi32(-1))
}

#[target_feature(enable = "avx2")]
#[inline]
fn lanes(v: __m128i) -> [i32; 4] {
    [
        _mm_extract_epi32::<0>(v),
        _mm_extract_epi32::<1>(v),
        _mm_extract_epi32::<2>(v),
        _mm_extract_epi32::<3>(v),
    ]
}
