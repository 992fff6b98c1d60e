//! 3-D geometric anisotropy: a linear map of separations after which the variogram is
//! isotropic, in the conventions of gstat/GSLIB, GSTools and PyKrige.
//!
//! Every convention gives a 3 × 3 matrix M; the kriging's distance between two points is
//! |M (p − q)|, so the variogram's range is the range along the major axis and the ranges along
//! the two minor axes are the ratios times it.

use crate::GeofieldError;

/// A 3-D geometric anisotropy (the map M, row-major).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anisotropy3 {
    pub m: [f64; 9],
}

impl Default for Anisotropy3 {
    fn default() -> Self {
        Self::isotropic()
    }
}

fn finite(name: &str, v: f64) -> Result<f64, GeofieldError> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(GeofieldError::Invalid(format!(
            "anisotropy {name} = {v}: expected a finite number"
        )))
    }
}

fn ratio(name: &str, v: f64) -> Result<f64, GeofieldError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(GeofieldError::Invalid(format!(
            "anisotropy {name} = {v}: expected a finite ratio > 0"
        )))
    }
}

fn mul(a: &[f64; 9], b: &[f64; 9]) -> [f64; 9] {
    let mut c = [0.0; 9];
    for i in 0..3 {
        for j in 0..3 {
            c[i * 3 + j] = (0..3).map(|k| a[i * 3 + k] * b[k * 3 + j]).sum();
        }
    }
    c
}

/// The rotation by `t` radians in the plane of axes (i, j): e_i → cos t e_i + sin t e_j
/// (GSTools' Givens rotation).
fn givens(i: usize, j: usize, t: f64) -> [f64; 9] {
    let (s, c) = t.sin_cos();
    let mut g = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    g[i * 3 + i] = c;
    g[j * 3 + j] = c;
    g[i * 3 + j] = -s;
    g[j * 3 + i] = s;
    g
}

fn diag(a: f64, b: f64, c: f64) -> [f64; 9] {
    [a, 0.0, 0.0, 0.0, b, 0.0, 0.0, 0.0, c]
}

impl Anisotropy3 {
    pub fn isotropic() -> Self {
        Anisotropy3 {
            m: diag(1.0, 1.0, 1.0),
        }
    }

    /// gstat's `vgm(..., anis = c(p, q, r, s, t))`, the GSLIB convention (Deutsch & Journel
    /// 1998, `setrot`): the major axis points to azimuth `p` (degrees clockwise from north, +y
    /// towards +x) and dips `q` degrees up from horizontal; `r` turns the two minor axes about
    /// the major axis (counter-clockwise looking along it); `s` and `t` (in (0, 1] usually) are
    /// the ranges along the first (horizontal) and second (vertical) minor axes over the major
    /// range.
    pub fn gstat(
        azimuth_deg: f64,
        dip_deg: f64,
        rake_deg: f64,
        ratio_1: f64,
        ratio_2: f64,
    ) -> Result<Self, GeofieldError> {
        let a = (90.0 - finite("azimuth", azimuth_deg)?).to_radians();
        let b = (-finite("dip", dip_deg)?).to_radians();
        let c = finite("rake", rake_deg)?.to_radians();
        let (r1, r2) = (ratio("ratio 1", ratio_1)?, ratio("ratio 2", ratio_2)?);
        let (sa, ca) = a.sin_cos();
        let (sb, cb) = b.sin_cos();
        let (sc, cc) = c.sin_cos();
        let rot = [
            cb * ca,
            cb * sa,
            -sb,
            -cc * sa + sc * sb * ca,
            cc * ca + sc * sb * sa,
            sc * cb,
            sc * sa + cc * sb * ca,
            -sc * ca + cc * sb * sa,
            cc * cb,
        ];
        Ok(Anisotropy3 {
            m: mul(&diag(1.0, 1.0 / r1, 1.0 / r2), &rot),
        })
    }

    /// GSTools' `CovModel(dim=3, angles=[α, β, γ], anis=[e₁, e₂])`: Tait–Bryan angles in radians
    /// (α in the x–y plane, then β in the x'–z' plane, then γ in the y''–z'' plane,
    /// counter-clockwise) turn the x axis into the major axis; e₁, e₂ are the length scales of the
    /// second and third axes over the first. M = diag(1, 1/e₁, 1/e₂) · G₀₁(−α) G₀₂(β) G₁₂(−γ),
    /// GSTools' `matrix_isometrize`.
    pub fn gstools(angles_rad: [f64; 3], anis: [f64; 2]) -> Result<Self, GeofieldError> {
        let [al, be, ga] = angles_rad;
        let (al, be, ga) = (
            finite("angles[0]", al)?,
            finite("angles[1]", be)?,
            finite("angles[2]", ga)?,
        );
        let (e1, e2) = (ratio("anis[0]", anis[0])?, ratio("anis[1]", anis[1])?);
        let rot = mul(
            &mul(&givens(0, 1, -al), &givens(0, 2, be)),
            &givens(1, 2, -ga),
        );
        Ok(Anisotropy3 {
            m: mul(&diag(1.0, 1.0 / e1, 1.0 / e2), &rot),
        })
    }

    /// PyKrige's 3-D `anisotropy_scaling_y/z` and `anisotropy_angle_x/y/z` (degrees,
    /// counter-clockwise about each axis): coordinates rotated by −x about x, then −y about y,
    /// then −z about z, and the new y and z stretched by the scalings (PyKrige's
    /// `_adjust_for_anisotropy`). M = diag(1, s_y, s_z) · R_z(−z) R_y(−y) R_x(−x).
    pub fn pykrige(
        scaling_y: f64,
        scaling_z: f64,
        angle_x_deg: f64,
        angle_y_deg: f64,
        angle_z_deg: f64,
    ) -> Result<Self, GeofieldError> {
        let (sy, sz) = (
            ratio("anisotropy_scaling_y", scaling_y)?,
            ratio("anisotropy_scaling_z", scaling_z)?,
        );
        let ax = -finite("anisotropy_angle_x", angle_x_deg)?.to_radians();
        let ay = -finite("anisotropy_angle_y", angle_y_deg)?.to_radians();
        let az = -finite("anisotropy_angle_z", angle_z_deg)?.to_radians();
        // R_x(t) rotates in the y–z plane, R_z(t) in the x–y plane, R_y(t) in the z–x plane.
        let rx = givens(1, 2, ax);
        let ry = givens(2, 0, ay);
        let rz = givens(0, 1, az);
        let rot = mul(&rz, &mul(&ry, &rx));
        Ok(Anisotropy3 {
            m: mul(&diag(1.0, sy, sz), &rot),
        })
    }

    /// A general map (row-major, finite, non-singular).
    pub fn from_matrix(m: [f64; 9]) -> Result<Self, GeofieldError> {
        let a = Anisotropy3 { m };
        a.validate()?;
        Ok(a)
    }

    pub fn is_isotropic(&self) -> bool {
        self.m == diag(1.0, 1.0, 1.0)
    }

    /// The determinant of M.
    pub fn det(&self) -> f64 {
        let m = &self.m;
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6])
            + m[2] * (m[3] * m[7] - m[4] * m[6])
    }

    /// Finite and non-singular.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let scale = self.m.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let regular = self.det().abs() > 1e-12 * scale.powi(3);
        if self.m.iter().any(|v| !v.is_finite()) || !regular {
            return Err(GeofieldError::InvalidParameter {
                name: "anisotropy".into(),
                value: format!("{:?}", self.m),
                expected: "a finite, non-singular 3 x 3 map".into(),
            });
        }
        Ok(())
    }

    /// M v.
    #[inline]
    pub fn apply(&self, v: [f64; 3]) -> [f64; 3] {
        let m = &self.m;
        [
            m[0] * v[0] + m[1] * v[1] + m[2] * v[2],
            m[3] * v[0] + m[4] * v[1] + m[5] * v[2],
            m[6] * v[0] + m[7] * v[1] + m[8] * v[2],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(v: [f64; 3]) -> f64 {
        (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
    }

    /// A unit step along the major axis keeps its length; steps along the minor axes grow by
    /// 1/ratio. The axes are found from each convention's own definition, not from M.
    #[test]
    fn gstat_axes() {
        let (az, dip) = (30.0f64, 20.0f64);
        let a = Anisotropy3::gstat(az, dip, 0.0, 0.5, 0.25).unwrap();
        let (s, c) = az.to_radians().sin_cos();
        let (sd, cd) = dip.to_radians().sin_cos();
        // Major: azimuth 30 (clockwise from north), 20 degrees up.
        let major = [s * cd, c * cd, sd];
        assert!((norm(a.apply(major)) - 1.0).abs() < 1e-12);
        // First minor (no rake): horizontal, perpendicular to the azimuth.
        let minor1 = [c, -s, 0.0];
        assert!((norm(a.apply(minor1)) - 2.0).abs() < 1e-12);
        // Second minor: perpendicular to both.
        let m2 = [
            major[1] * minor1[2] - major[2] * minor1[1],
            major[2] * minor1[0] - major[0] * minor1[2],
            major[0] * minor1[1] - major[1] * minor1[0],
        ];
        assert!((norm(a.apply(m2)) - 4.0).abs() < 1e-12);
        // The 2-D convention is the horizontal slice.
        let two_d = crate::kriging::space::Frame::new(
            &[0.0, 1.0],
            &[0.0, 1.0],
            Some(crate::kriging::Anisotropy {
                azimuth_deg: az,
                ratio: 0.5,
            }),
        );
        let flat = Anisotropy3::gstat(az, 0.0, 0.0, 0.5, 0.25).unwrap();
        for v in [[1.0, 0.0], [0.3, -0.7], [-2.0, 5.0]] {
            let (u, w) = two_d.apply(v[0] + two_d.centre.0, v[1] + two_d.centre.1);
            let h = flat.apply([v[0], v[1], 0.0]);
            assert!((u.hypot(w) - norm(h)).abs() < 1e-12);
        }
    }

    #[test]
    fn gstools_axes() {
        // α = 90°: the major axis is +y; e = (0.5, 0.25).
        let a = Anisotropy3::gstools([std::f64::consts::FRAC_PI_2, 0.0, 0.0], [0.5, 0.25]).unwrap();
        assert!((norm(a.apply([0.0, 1.0, 0.0])) - 1.0).abs() < 1e-12);
        assert!((norm(a.apply([1.0, 0.0, 0.0])) - 2.0).abs() < 1e-12);
        assert!((norm(a.apply([0.0, 0.0, 1.0])) - 4.0).abs() < 1e-12);
        // β = 90° (x'–z' plane, counter-clockwise): the major axis turns from +x to +z.
        let b = Anisotropy3::gstools([0.0, std::f64::consts::FRAC_PI_2, 0.0], [0.5, 0.25]).unwrap();
        assert!((norm(b.apply([0.0, 0.0, 1.0])) - 1.0).abs() < 1e-12);
        assert!((norm(b.apply([1.0, 0.0, 0.0])) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn pykrige_axes() {
        // No rotation: y and z distances multiplied by the scalings.
        let a = Anisotropy3::pykrige(2.0, 3.0, 0.0, 0.0, 0.0).unwrap();
        assert_eq!(a.apply([1.0, 1.0, 1.0]), [1.0, 2.0, 3.0]);
        // angle_z = 90: the (unstretched) major axis is +y.
        let b = Anisotropy3::pykrige(2.0, 3.0, 0.0, 0.0, 90.0).unwrap();
        assert!((norm(b.apply([0.0, 1.0, 0.0])) - 1.0).abs() < 1e-12);
        assert!((norm(b.apply([1.0, 0.0, 0.0])) - 2.0).abs() < 1e-12);
        assert!(Anisotropy3::pykrige(0.0, 1.0, 0.0, 0.0, 0.0).is_err());
        assert!(Anisotropy3::from_matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]).is_err());
    }
}
