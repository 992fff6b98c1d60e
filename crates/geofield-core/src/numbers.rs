use crate::CoreError;

/// A finite f64 (not NaN, not infinite), validated once at the boundary.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
pub struct FiniteF64(f64);

impl FiniteF64 {
    /// Validate `value`; `what` names it in the error (e.g. "x_m").
    pub fn new(value: f64, what: &str) -> Result<Self, CoreError> {
        if value.is_finite() {
            Ok(Self(value))
        } else {
            Err(CoreError::NotFinite {
                what: what.to_string(),
                value,
            })
        }
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

/// A finite, strictly positive f64, validated once at the boundary.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
pub struct PositiveF64(f64);

impl PositiveF64 {
    /// Validate `value`; `what` names it in the error (e.g. "cell_size_m").
    pub fn new(value: f64, what: &str) -> Result<Self, CoreError> {
        let v = FiniteF64::new(value, what)?.get();
        if v > 0.0 {
            Ok(Self(v))
        } else {
            Err(CoreError::NotPositive {
                what: what.to_string(),
                value: v,
            })
        }
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_nan_inf_and_nonpositive() {
        assert!(FiniteF64::new(f64::NAN, "a").is_err());
        assert!(FiniteF64::new(f64::INFINITY, "a").is_err());
        assert_eq!(FiniteF64::new(-2.5, "a").map(|v| v.get()), Ok(-2.5));
        assert!(PositiveF64::new(0.0, "b").is_err());
        assert!(PositiveF64::new(-1.0, "b").is_err());
        assert!(PositiveF64::new(f64::NAN, "b").is_err());
        let e = PositiveF64::new(0.0, "cell_size_m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cell_size_m"), "{e}");
        assert_eq!(PositiveF64::new(1e-9, "b").map(|v| v.get()), Ok(1e-9));
    }
}
