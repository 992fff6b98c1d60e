//! Truncated Taylor series ("jets") in one variable s: `c[k]` = f⁽ᵏ⁾(0)/k!, k ≤ `len − 1`.
//! Enough arithmetic (sums, products, exp, ln) to take the n-th derivative of the far-field
//! kernel along a line without hand-derived formulas (the near/far bound, `nearfar.rs`).

/// Coefficients kept (derivative orders 0..JET_MAX−1).
pub const JET_MAX: usize = 9;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Jet {
    pub c: [f64; JET_MAX],
    pub len: usize,
}

impl Jet {
    pub fn constant(v: f64, len: usize) -> Self {
        let mut c = [0.0; JET_MAX];
        c[0] = v;
        Self { c, len }
    }
    /// The polynomial a0 + a1 s + a2 s² (truncated).
    pub fn quadratic(a0: f64, a1: f64, a2: f64, len: usize) -> Self {
        let mut j = Self::constant(a0, len);
        if len > 1 {
            j.c[1] = a1;
        }
        if len > 2 {
            j.c[2] = a2;
        }
        j
    }
    pub fn value(&self) -> f64 {
        self.c[0]
    }
    /// The k-th derivative at s = 0.
    pub fn derivative(&self, k: usize) -> f64 {
        let mut f = 1.0;
        for i in 2..=k {
            f *= i as f64;
        }
        self.c[k] * f
    }
    pub fn add_scalar(&self, v: f64) -> Jet {
        let mut r = *self;
        r.c[0] += v;
        r
    }
    pub fn scale(&self, v: f64) -> Jet {
        let mut r = *self;
        for k in 0..self.len {
            r.c[k] *= v;
        }
        r
    }
    pub fn mul(&self, o: &Jet) -> Jet {
        let mut r = Jet::constant(0.0, self.len);
        for k in 0..self.len {
            let mut s = 0.0;
            for j in 0..=k {
                s += self.c[j] * o.c[k - j];
            }
            r.c[k] = s;
        }
        r
    }
    /// exp: b₀ = e^{a₀}, k b_k = Σ_{j=1..k} j a_j b_{k−j}.
    pub fn exp(&self) -> Jet {
        let mut b = Jet::constant(self.c[0].exp(), self.len);
        for k in 1..self.len {
            let mut s = 0.0;
            for j in 1..=k {
                s += j as f64 * self.c[j] * b.c[k - j];
            }
            b.c[k] = s / k as f64;
        }
        b
    }
    /// ln (a₀ > 0): c₀ = ln a₀, c_k = (a_k − (1/k) Σ_{j=1..k−1} j c_j a_{k−j}) / a₀.
    pub fn ln(&self) -> Jet {
        let a0 = self.c[0];
        let mut r = Jet::constant(a0.ln(), self.len);
        for k in 1..self.len {
            let mut s = 0.0;
            for j in 1..k {
                s += j as f64 * r.c[j] * self.c[k - j];
            }
            r.c[k] = (self.c[k] - s / k as f64) / a0;
        }
        r
    }
    /// a^p for a₀ > 0.
    pub fn powf(&self, p: f64) -> Jet {
        self.ln().scale(p).exp()
    }
    /// Σ coef[i] xⁱ by Horner's rule.
    pub fn poly(&self, coef: &[f64]) -> Jet {
        let mut r = Jet::constant(0.0, self.len);
        for &a in coef.iter().rev() {
            r = r.mul(self).add_scalar(a);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivatives_match_closed_forms() {
        // f(s) = exp(−(1 + 2s + s²)^0.75) at s = 0: compare with finite differences of high
        // accuracy is fragile; use ln(exp(x)) = x and (x^p)^(1/p) = x identities instead, and a
        // closed form for exp(a s): k-th derivative a^k e^0.
        let x = Jet::quadratic(1.3, 0.7, -0.2, 7);
        let back = x.exp().ln();
        let back2 = x.powf(2.5).powf(0.4);
        for k in 0..7 {
            assert!((back.c[k] - x.c[k]).abs() < 1e-13, "ln exp, k = {k}");
            assert!((back2.c[k] - x.c[k]).abs() < 1e-12, "pow, k = {k}");
        }
        let e = Jet::quadratic(0.0, 0.3, 0.0, 7).exp();
        for k in 0..7 {
            assert!((e.derivative(k) - 0.3f64.powi(k as i32)).abs() < 1e-14);
        }
        // 1/(1+s)² = Σ (−1)^k (k+1) s^k.
        let t = Jet::quadratic(1.0, 1.0, 0.0, 8).powf(-2.0);
        for k in 0..8 {
            let want = if k % 2 == 0 { 1.0 } else { -1.0 } * (k + 1) as f64;
            assert!((t.c[k] - want).abs() < 1e-12, "k = {k}: {}", t.c[k]);
        }
    }
}
