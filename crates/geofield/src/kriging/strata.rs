//! Stratigraphy (filled in below).
