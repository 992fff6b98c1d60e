//! The multigrid's horizontal coarsening rule, one copy shared by geofield's CPU levels
//! (`wind/level.rs`) and the device assembly ([`super::ShermanGrid`]), so that both build the
//! same levels.
//!
//! Columns (and rows alike) pair up: coarse column I covers fine columns 2I and 2I + 1, and on
//! an odd count the last coarse column covers the last three (⌊n/2⌋ coarse columns; a single
//! column stays single). Each column's width is counted in finest columns. Pairing from the
//! west with the remainder merged into the last group keeps neighbouring widths within a
//! factor 2 of each other (257 → 128 columns of 2 and one of 3 → 64 of 4 and one of 5 …);
//! ⌈n/2⌉ groups instead leave a single finest column at the edge on every level, 1 wide
//! beside 2, 4, … 128.
//!
//! A coarse face's conductance is the sum of the fine conductances it covers (their areas
//! add) times d_fine/d_coarse, the ratio of the distances between the centres on either side:
//! (a + b)/2 finest columns between columns of widths a and b; on the domain's boundary faces,
//! where φ = 0 lies half a finest column outside (where the finest level puts it), w/2 + ½.
//! With every width 2^l this is ½ on interior faces and (s + 1)/(2s + 1) on boundary faces
//! (s = the fine width), the rule for powers of two.

use std::ops::Range;

/// Coarse columns over `n` fine columns: ⌊n/2⌋, at least 1.
pub fn coarse_count(n: usize) -> usize {
    (n / 2).max(1)
}

/// The fine columns that coarse column `i` of `nc = coarse_count(n)` covers.
pub fn children(n: usize, nc: usize, i: usize) -> Range<usize> {
    let start = 2 * i;
    let end = if i + 1 == nc { n } else { 2 * i + 2 };
    start.min(n)..end.min(n)
}

/// The coarse column (of `nc`) that covers fine column `j`.
pub fn parent(nc: usize, j: usize) -> usize {
    (j / 2).min(nc.saturating_sub(1))
}

/// Widths of the coarse columns (in finest columns) from the fine ones.
pub fn coarse_widths(fine: &[u32]) -> Vec<u32> {
    let (n, nc) = (fine.len(), coarse_count(fine.len()));
    (0..nc)
        .map(|i| fine[children(n, nc, i)].iter().sum())
        .collect()
}

/// For each coarse face 0..=nc (face i the west edge of coarse column i, face nc the east
/// edge), d_fine/d_coarse: the factor that turns the sum of the fine conductances the face
/// covers into its own. Distances in half finest columns (integers, so the ratios of powers of
/// two are exact): w + 1 on boundary faces, a + b between columns of widths a and b.
pub fn face_factors(fine: &[u32], coarse: &[u32]) -> Vec<f64> {
    let (n, nc) = (fine.len(), coarse.len());
    if n == 0 || nc == 0 {
        return Vec::new();
    }
    (0..=nc)
        .map(|i| {
            let (df, dc) = if i == 0 {
                (fine[0] + 1, coarse[0] + 1)
            } else if i == nc {
                (fine[n - 1] + 1, coarse[nc - 1] + 1)
            } else {
                let j = children(n, nc, i).start;
                (fine[j - 1] + fine[j], coarse[i - 1] + coarse[i])
            };
            f64::from(df) / f64::from(dc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cover_every_column_once() {
        for n in 1..40 {
            let nc = coarse_count(n);
            let mut seen = vec![0; n];
            for i in 0..nc {
                let c = children(n, nc, i);
                assert!((1..=3).contains(&c.len()), "n {n} i {i} {c:?}");
                for j in c {
                    seen[j] += 1;
                    assert_eq!(parent(nc, j), i);
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "n {n}");
        }
    }

    #[test]
    fn powers_of_two_keep_the_halving_rule() {
        let mut w = vec![1u32; 64];
        let mut s = 1.0;
        while w.len() > 1 {
            let c = coarse_widths(&w);
            let f = face_factors(&w, &c);
            let edge = (s + 1.0) / (2.0 * s + 1.0);
            assert_eq!(f[0], edge);
            assert_eq!(f[f.len() - 1], edge);
            assert!(f[1..f.len() - 1].iter().all(|&x| x == 0.5));
            w = c;
            s *= 2.0;
        }
    }

    #[test]
    fn odd_counts_use_the_true_distances() {
        // 5 unit columns -> widths 2, 3: interior face between 1 + 1 (fine) and 2 + 3 (coarse)
        // half columns; the east boundary face between 1 + 1 and 3 + 1.
        let c = coarse_widths(&[1; 5]);
        assert_eq!(c, vec![2, 3]);
        assert_eq!(face_factors(&[1; 5], &c), vec![2.0 / 3.0, 2.0 / 5.0, 2.0 / 4.0]);
        // Widths stay within a factor 2 of their neighbours.
        let mut w = vec![1u32; 257];
        while w.len() > 1 {
            w = coarse_widths(&w);
            let (lo, hi) = (w.iter().min().unwrap(), w.iter().max().unwrap());
            assert!(*hi <= 2 * lo, "{w:?}");
        }
    }
}
