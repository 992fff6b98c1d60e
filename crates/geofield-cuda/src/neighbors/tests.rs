use super::*;

#[test]
fn param_sizes_match_the_kernel() {
    assert_eq!(std::mem::size_of::<BruteParams>(), 32);
    assert_eq!(std::mem::size_of::<GridParams>(), 80);
    let src = crate::module_source("neighbors").unwrap_or("");
    assert!(src.contains("GF_CHECK_SIZE(NeighborsBruteParams, 32)"));
    assert!(src.contains("GF_CHECK_SIZE(NeighborsGridParams, 80)"));
    assert!(src.contains("#define NB_K_MAX 64"));
    assert_eq!(K_MAX, 64);
}

#[test]
fn grid_build_is_a_consistent_counting_sort() {
    // 2-D lattice with duplicates, plus a 3-D cloud.
    let mut p2 = Vec::new();
    for i in 0..200u32 {
        p2.push((i % 7) as f32);
        p2.push((i % 5) as f32 * 0.5);
    }
    let g = GpuGrid::build(&p2, 2, None).unwrap();
    g.check("test").unwrap();
    assert_eq!(g.dims[2], 1);
    let mut seen = [false; 200];
    for (pos, &i) in g.ids.iter().enumerate() {
        assert!(!seen[i as usize]);
        seen[i as usize] = true;
        assert_eq!(
            &g.pts[pos * 2..pos * 2 + 2],
            &p2[i as usize * 2..i as usize * 2 + 2]
        );
    }
    // Inside a cell, index order (stable sort).
    for c in 0..g.starts.len() - 1 {
        let r = g.starts[c] as usize..g.starts[c + 1] as usize;
        assert!(g.ids[r].windows(2).all(|w| w[0] < w[1]));
    }
    let p3: Vec<f64> = (0..300).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
    let g3 = GpuGrid::build(&p3, 3, Some(1.5)).unwrap();
    g3.check("test").unwrap();
    // Every point lies in its slabs' ranges, and prefix/suffix arrays bound them.
    let off = [0, g3.dims[0] as usize, (g3.dims[0] + g3.dims[1]) as usize];
    for (pos, p) in g3.pts.chunks_exact(3).enumerate() {
        let c = g3.starts.partition_point(|&s| s as usize <= pos) - 1;
        let cc = [
            c % g3.dims[0] as usize,
            (c / g3.dims[0] as usize) % g3.dims[1] as usize,
            c / (g3.dims[0] * g3.dims[1]) as usize,
        ];
        for a in 0..3 {
            let s = off[a] + cc[a];
            assert!(g3.slab_lo[s] <= p[a] && p[a] <= g3.slab_hi[s]);
            assert!(p[a] <= g3.pre_max[s] && g3.suf_min[s] <= p[a]);
        }
    }
    let empty = GpuGrid::<f32>::build(&[], 3, None).unwrap();
    empty.check("test").unwrap();
    assert!(empty.is_empty());
}

/// A line-by-line Rust copy of the grid kernel's search (nb_grid in neighbors.cu, f64
/// arithmetic; the copy checks the host grid and the shell/stopping logic, not NVRTC).
fn emulate(g: &GpuGrid<f64>, q: &[f64], skip: Option<u32>, k: usize, r2: f64) -> Vec<(f64, u32)> {
    let d = g.dim;
    let dist2 = |p: &[f64]| {
        let mut s = 0.0;
        for a in 0..d {
            let t = p[a] - q[a];
            s += t * t;
        }
        s
    };
    let off = [0usize, g.dims[0] as usize, (g.dims[0] + g.dims[1]) as usize];
    let dims = g.dims.map(|x| x as i64);
    let mut best: Vec<(f64, u32)> = Vec::new();
    let bound = |b: &Vec<(f64, u32)>| if b.len() == k { b[k - 1].0.min(r2) } else { r2 };
    let offer = |b: &mut Vec<(f64, u32)>, dd: f64, j: u32| {
        if dd <= bound(b) && Some(j) != skip {
            b.push((dd, j));
            b.sort_by(|x, y| x.partial_cmp(y).unwrap());
            b.truncate(k);
        }
    };
    if g.is_empty() {
        return best;
    }
    let mut c0 = [0i64; 3];
    let mut smax = 0;
    for a in 0..3 {
        if a < d {
            let f = ((q[a] - g.origin[a]) * (1.0 / g.cell)).floor();
            c0[a] = if f >= 0.0 {
                (f as i64).min(dims[a] - 1)
            } else {
                0
            };
        }
        smax = smax.max(c0[a]).max(dims[a] - 1 - c0[a]);
    }
    let visit = |b: &mut Vec<(f64, u32)>, x: i64, y: i64, z: i64| {
        let id = ((z * dims[1] + y) * dims[0] + x) as usize;
        let (s, e) = (g.starts[id] as usize, g.starts[id + 1] as usize);
        if s == e {
            return;
        }
        let c = [x as usize, y as usize, z as usize];
        let mut lb = 0.0;
        for a in 0..d {
            let (lo, hi) = (g.slab_lo[off[a] + c[a]], g.slab_hi[off[a] + c[a]]);
            let gap = if q[a] < lo {
                lo - q[a]
            } else if q[a] > hi {
                q[a] - hi
            } else {
                0.0
            };
            lb += gap * gap;
        }
        if lb > bound(b) {
            return;
        }
        for t in s..e {
            offer(b, dist2(&g.pts[t * d..(t + 1) * d]), g.ids[t]);
        }
    };
    for s in 0..=smax {
        if s > 0 {
            let t = s - 1;
            let mut lb = f64::INFINITY;
            for a in 0..d {
                if c0[a] > t {
                    let m = g.pre_max[off[a] + (c0[a] - t - 1) as usize];
                    let gap = if q[a] > m { q[a] - m } else { 0.0 };
                    lb = lb.min(gap * gap);
                }
                let up = c0[a] + t + 1;
                if up < dims[a] {
                    let m = g.suf_min[off[a] + up as usize];
                    let gap = if m > q[a] { m - q[a] } else { 0.0 };
                    lb = lb.min(gap * gap);
                }
            }
            if lb > bound(&best) {
                break;
            }
        }
        for z in (c0[2] - s).max(0)..=(c0[2] + s).min(dims[2] - 1) {
            let onz = z == c0[2] - s || z == c0[2] + s;
            for y in (c0[1] - s).max(0)..=(c0[1] + s).min(dims[1] - 1) {
                if onz || y == c0[1] - s || y == c0[1] + s {
                    for x in (c0[0] - s).max(0)..=(c0[0] + s).min(dims[0] - 1) {
                        visit(&mut best, x, y, z);
                    }
                } else {
                    if c0[0] - s >= 0 {
                        visit(&mut best, c0[0] - s, y, z);
                    }
                    if s > 0 && c0[0] + s < dims[0] {
                        visit(&mut best, c0[0] + s, y, z);
                    }
                }
            }
        }
    }
    best
}

#[test]
fn emulated_grid_search_equals_brute_force() {
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    for dim in [2usize, 3] {
        for (label, scale, lattice) in [("uniform", 50.0, false), ("lattice", 6.0, true)] {
            let n = 1500;
            let pts: Vec<f64> = (0..n * dim)
                .map(|_| {
                    let v = rnd() * scale;
                    if lattice { v.floor() } else { v }
                })
                .collect();
            for cell in [None, Some(0.3), Some(7.0)] {
                let g = GpuGrid::build(&pts, dim, cell).unwrap();
                for k in [1usize, 7, 64] {
                    for r2 in [f64::INFINITY, 4.0, 1.0] {
                        for (i, q) in pts.chunks_exact(dim).enumerate().step_by(7) {
                            let skip = Some(i as u32);
                            let mut want: Vec<(f64, u32)> = pts
                                .chunks_exact(dim)
                                .enumerate()
                                .filter(|&(j, _)| j != i)
                                .map(|(j, p)| {
                                    let mut s = 0.0;
                                    for a in 0..dim {
                                        let t = p[a] - q[a];
                                        s += t * t;
                                    }
                                    (s, j as u32)
                                })
                                .filter(|&(s, _)| s <= r2)
                                .collect();
                            want.sort_by(|x, y| x.partial_cmp(y).unwrap());
                            want.truncate(k);
                            let got = emulate(&g, q, skip, k, r2);
                            assert_eq!(
                                got, want,
                                "{label} dim {dim} cell {cell:?} k {k} r2 {r2} query {i}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    assert!(GpuGrid::<f32>::build(&[1.0, 2.0, 3.0], 2, None).is_err());
    assert!(GpuGrid::<f32>::build(&[1.0, f32::NAN], 2, None).is_err());
    assert!(GpuGrid::<f32>::build(&[1.0, 2.0], 4, None).is_err());
    assert!(GpuGrid::<f64>::build(&[0.0, 0.0, 1e9, 1e9], 2, Some(1e-3)).is_err());
    assert!(check_k_r2::<f32>(0, None, "t").is_err());
    assert!(check_k_r2::<f32>(65, None, "t").is_err());
    assert!(check_k_r2::<f32>(3, Some(-1.0), "t").is_err());
    assert_eq!(check_k_r2::<f32>(3, Some(0.25), "t").ok(), Some(0.25));
}
