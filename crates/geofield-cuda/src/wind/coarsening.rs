//! The multigrid's horizontal coarsening rule, one copy shared by geofield's CPU levels
//! (`wind/level.rs`) and the device assembly ([`super::ShermanGrid`]), so that both build the
//! same levels.
//!
//! Columns (and rows alike) pair up: coarse column I covers fine columns 2I and 2I + 1, the
//! last one only 2I on an odd count (⌈n/2⌉ coarse columns). Each column's width is counted in
//! finest columns: on a power of two every width is 2^l; on other sizes the last column of a
//! level may be narrower (257 → 128 columns of 2 and one of 1 → 64 of 4 and one of 1 …).
//!
//! A coarse face's conductance is the sum of the fine conductances it covers (their areas
//! add) times d_fine/d_coarse, the ratio of the distances between the centres on either side:
//! (a + b)/2 finest columns between columns of widths a and b; on the domain's boundary faces,
//! where φ = 0 lies half a finest column outside (where the finest level puts it), w/2 + ½.
//! With every width 2^l this is ½ on interior faces and (s + 1)/(2s + 1) on boundary faces
//! (s = the fine width), the rule for powers of two. The earlier rule applied those two
//! factors on every size, as if the last column of an odd count were as wide as the others:
//! its conductances came out wrong by up to 2^l, odd sizes needed up to twice the V-cycles of
//! a power of two, and a real 257² DEM diverged.
//!
//! (Grouping the remainder into a last group of three instead, ⌊n/2⌋ coarse columns, keeps
//! the widths within a factor 2 but converged worse on deep domains: 9 V-cycles on 255² where
//! 256² takes 6. Groups of at most two columns, as here, take 6.)

use std::ops::Range;

/// Coarse columns over `n` fine columns: ⌈n/2⌉.
pub fn coarse_count(n: usize) -> usize {
    n.div_ceil(2)
}

/// The fine columns (one or two) that coarse column `i` covers, of `n` fine columns.
pub fn children(n: usize, i: usize) -> Range<usize> {
    (2 * i).min(n)..(2 * i + 2).min(n)
}

/// Widths of the coarse columns (in finest columns) from the fine ones.
pub fn coarse_widths(fine: &[u32]) -> Vec<u32> {
    let n = fine.len();
    (0..coarse_count(n))
        .map(|i| fine[children(n, i)].iter().sum())
        .collect()
}

/// For each coarse face 0..=nc (face i the west edge of coarse column i, face nc the east
/// edge), d_fine/d_coarse: the factor that turns the sum of the fine conductances the face
/// covers into its own. Distances in half finest columns (integers, so that the factors of
/// powers of two come out exactly as ½ and (s + 1)/(2s + 1)): w + 1 on boundary faces, a + b
/// between columns of widths a and b.
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
                let j = 2 * i;
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
                let c = children(n, i);
                assert!((1..=2).contains(&c.len()), "n {n} i {i} {c:?}");
                for j in c {
                    seen[j] += 1;
                    assert_eq!(j / 2, i);
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
        // 5 unit columns -> widths 2, 2, 1. Faces: west boundary 1 + 1 over 2 + 1 half
        // columns; 1 + 1 over 2 + 2 between the pairs; 1 + 1 over 2 + 1 between the last pair
        // and the single column; the east boundary 1 + 1 over 1 + 1.
        let c = coarse_widths(&[1; 5]);
        assert_eq!(c, vec![2, 2, 1]);
        assert_eq!(
            face_factors(&[1; 5], &c),
            vec![2.0 / 3.0, 2.0 / 4.0, 2.0 / 3.0, 1.0]
        );
        // The widths always add up to the finest count.
        let mut w = vec![1u32; 257];
        while w.len() > 1 {
            w = coarse_widths(&w);
            assert_eq!(w.iter().sum::<u32>(), 257);
        }
    }
}
