//! A seed's flight: its distance drawn from the kernel's radial density, exactly
//! ([`sample_distance`], [`quantile`]) or through the fine tables of a [`Flight`] (what the
//! placement uses: a logarithm, a lookup and an exponential per seed).

use rayon::prelude::*;

use crate::dispersal::Kernel;
use crate::forest::exact_math;
use crate::forest::rng::Stream;

/// A seed's distance from its parent (m), drawn from the kernel's radial density.
pub fn sample_distance(kernel: &Kernel, s: &mut Stream) -> f64 {
    match *kernel {
        Kernel::Weibull { d, theta } => (s.gamma(2.0 / theta) / d).powf(1.0 / theta),
        Kernel::Lognormal { x0, xb } => s.lognormal(x0.ln() + 2.0 * xb * xb, xb),
        Kernel::TwoDt { u, p } => (u * (s.uniform().powf(-1.0 / p) - 1.0)).max(0.0).sqrt(),
    }
}

/// A species' seed flights: the quantile function of the distance, tabulated.
///
/// A draw u (uniform) gives the distance r with P(distance ≤ r) = u. The table holds ln r at
/// `TABLE` + 1 equally spaced values of a = −ln u for u < ½ (the near side) and of t = −ln(1 − u)
/// for u ≥ ½ (the far side), each from ln 2 to `LOG_MAX` (u or 1 − u down to e⁻²³, below the
/// smallest value a seed's 32-bit draw gives, 2⁻³³: every draw is in the tables), interpolated
/// linearly: ln r is a smooth, nearly linear function of a and of t for every kernel (near the
/// parent u ∝ r² for Weibull and 2Dt, ln u ∝ −(ln r)² for the lognormal; in the tails t ∝ r^θ,
/// t ≈ 2p ln r, t ∝ (ln r)²). A u beyond the tables (not from a 32-bit draw) solves
/// mass_beyond(r) = 1 − u by bisection. Both tables come from a finer forward grid of [`Kernel::mass_beyond`], uniform in
/// ln r. The quantiles are within 1e-6 of the kernel's median distance of the exact ones
/// (tested), far below any cell.
#[derive(Debug, Clone)]
pub struct Flight {
    pub(super) kernel: Kernel,
    /// ln r on the near side (by a) and the far side (by t).
    pub(super) near: Vec<f64>,
    pub(super) far: Vec<f64>,
    pub(super) inv_step: f64,
    /// Unit vectors at `DIRECTIONS` + 1 equally spaced angles, for the seed's direction.
    pub(super) dir: Vec<(f64, f64)>,
    /// The vector paths' copies: (ln r, next entry − ln r) per interval, the near table's
    /// `TABLE` then the far one's; (cos, Δcos, sin, Δsin) per direction interval.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) steps: Vec<[f64; 2]>,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) turns: Vec<[f64; 4]>,
}

/// [`Flight::tables`]: the near and far quantile tables, `inv_step` and the directions.
pub(crate) type FlightTables<'a> = (&'a [f64], &'a [f64], f64, &'a [(f64, f64)]);

/// Intervals of each quantile table, its end in −ln u (or −ln(1 − u)), the forward grid's points
/// per table interval, and the directions' table.
pub(crate) const TABLE: usize = 1 << 14;
pub(super) const LOG_MAX: f64 = 23.0;
pub(super) const FORWARD: usize = 16;
pub(crate) const DIRECTIONS: usize = 1 << 12;

impl Flight {
    pub fn new(kernel: &Kernel) -> Self {
        let kernel = *kernel;
        let lo_u = (-LOG_MAX).exp();
        // The distances where u = e⁻²³ and 1 − u = e⁻²³.
        let r_lo = quantile(&kernel, lo_u);
        let r_hi = quantile(&kernel, 1.0 - lo_u);
        let m = FORWARD * TABLE;
        let (l0, l1) = (r_lo.ln(), r_hi.ln());
        // (−ln F, −ln(1 − F), ln r) on a grid uniform in ln r.
        let fwd: Vec<(f64, f64, f64)> = (0..=m)
            .into_par_iter()
            .map(|i| {
                let lr = l0 + (l1 - l0) * i as f64 / m as f64;
                let tail = kernel.mass_beyond(lr.exp());
                (-(1.0 - tail).ln(), -tail.ln(), lr)
            })
            .collect();
        let step = (LOG_MAX - std::f64::consts::LN_2) / TABLE as f64;
        // Near side: a = −ln F decreases along the grid; far side: t increases.
        let table = |key: &(dyn Fn(&(f64, f64, f64)) -> f64 + Sync), rising: bool| -> Vec<f64> {
            (0..=TABLE)
                .into_par_iter()
                .map(|j| {
                    let target = std::f64::consts::LN_2 + j as f64 * step;
                    // The first grid interval whose keys bracket the target (keys monotone).
                    let idx = fwd.partition_point(|p| {
                        if rising {
                            key(p) < target
                        } else {
                            key(p) > target
                        }
                    });
                    let i1 = idx.clamp(1, m);
                    let (p0, p1) = (&fwd[i1 - 1], &fwd[i1]);
                    let (k0, k1) = (key(p0), key(p1));
                    let f = if k1 != k0 {
                        ((target - k0) / (k1 - k0)).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    p0.2 + f * (p1.2 - p0.2)
                })
                .collect()
        };
        let near = table(&|p| p.0, false);
        let far = table(&|p| p.1, true);
        let dir: Vec<(f64, f64)> = (0..=DIRECTIONS)
            .map(|k| {
                let phi = std::f64::consts::TAU * k as f64 / DIRECTIONS as f64;
                (phi.cos(), phi.sin())
            })
            .collect();
        let steps = [&near, &far]
            .iter()
            .flat_map(|t| t.windows(2).map(|w| [w[0], w[1] - w[0]]))
            .collect();
        let turns = dir
            .windows(2)
            .map(|w| [w[0].0, w[1].0 - w[0].0, w[0].1, w[1].1 - w[0].1])
            .collect();
        Flight {
            kernel,
            near,
            far,
            inv_step: 1.0 / step,
            dir,
            steps,
            turns,
        }
    }

    /// The tables as the GPU mirrors them: ln r on the near and far sides (`TABLE` + 1 values
    /// each, by (x − ln 2) · `inv_step`), `inv_step`, and the directions' unit vectors
    /// (`DIRECTIONS` + 1).
    pub(crate) fn tables(&self) -> FlightTables<'_> {
        (&self.near, &self.far, self.inv_step, &self.dir)
    }

    /// The distance at u (0 < u < 1).
    pub(super) fn distance_at(&self, u: f64) -> f64 {
        // The logarithm and exponential of `exact_math`: the GPU computes the same bits.
        let (tab, x) = if u < 0.5 {
            (&self.near, -exact_math::ln(u))
        } else {
            (&self.far, -exact_math::ln(1.0 - u))
        };
        let pos = (x - std::f64::consts::LN_2) * self.inv_step;
        if pos.is_nan() || pos >= TABLE as f64 {
            return quantile(&self.kernel, u);
        }
        let j = (pos.max(0.0) as usize).min(TABLE - 1);
        let f = pos - j as f64;
        exact_math::exp(f.mul_add(tab[j + 1] - tab[j], tab[j]))
    }

    /// A seed's distance (m), one u32 of `s`.
    pub fn distance(&self, s: &mut Stream) -> f64 {
        self.distance_of(s.next_u32())
    }

    /// The distance of the draw `x`.
    #[inline]
    pub(super) fn distance_of(&self, x: u32) -> f64 {
        self.distance_at((f64::from(x) + 0.5) * (1.0 / 4_294_967_296.0))
    }

    /// A uniform direction (cos, sin), one u32 of `s`: 12 bits pick the table's interval, 20
    /// interpolate in it.
    pub fn direction(&self, s: &mut Stream) -> (f64, f64) {
        self.direction_of(s.next_u32())
    }

    /// The direction of the draw `x`.
    #[inline]
    pub(super) fn direction_of(&self, x: u32) -> (f64, f64) {
        let k = (x >> 20) as usize;
        let f = f64::from(x & 0xF_FFFF) * (1.0 / 1_048_576.0);
        let ((c0, s0), (c1, s1)) = (self.dir[k], self.dir[k + 1]);
        (c0 + f * (c1 - c0), s0 + f * (s1 - s0))
    }
}

/// The distance r with P(distance ≤ r) = u, by bisection on [`Kernel::mass_beyond`].
pub fn quantile(kernel: &Kernel, u: f64) -> f64 {
    let tail = 1.0 - u;
    let mut hi = 1.0f64;
    while kernel.mass_beyond(hi) > tail && hi < 1e15 {
        hi *= 2.0;
    }
    bisect(|r| tail - kernel.mass_beyond(r), 0.0, hi)
}

/// The root of an increasing `f` in [lo, hi] (f(lo) ≤ 0 ≤ f(hi)) to the last bit.
pub(super) fn bisect(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}
