#![allow(clippy::unwrap_used)]

use super::*;
use crate::forest::output::test_support;
use crate::forest::output::write_density_nc;
use crate::forest::simulate::SpeciesYear;

/// A 4 × 3 grid of 1 m cells (x 0..4, y 0..3).
fn grid() -> GridSpec {
    GridSpec {
        x_min_m: 0.0,
        y_max_m: 3.0,
        cell_size_m: 1.0,
        cols: 4,
        rows: 3,
    }
}

fn year<'a>(y: u32, seeds: &'a [Vec<u32>], trees: &'a crate::forest::trees::Trees) -> Year<'a> {
    Year::new(y, vec![SpeciesYear::default(); 4], Vec::new(), seeds, trees)
}

/// Seeds of four species on [`grid`]: species 0 counts 1 ..= 12 row by row, species 1 six
/// seeds in the south-east cell, the others none.
fn seeds() -> Vec<Vec<u32>> {
    let mut sp1 = vec![0; 12];
    sp1[11] = 6;
    vec![(1..=12).collect(), sp1, vec![0; 12], vec![0; 12]]
}

/// Seedlings (DBH 0.5 cm) of species 0 in the north-west block and two in the south-east one
/// (one on the grid's south-east corner), one of species 1 in the north-east block; a sapling,
/// an adult and a seedling off the grid, which do not count.
fn trees() -> crate::forest::trees::Trees {
    test_support::trees(&[
        (0.5, 2.5, 0.5, 0),
        (3.9, 0.1, 0.5, 0),
        (4.0, 0.0, 0.5, 0),
        (2.5, 1.5, 0.5, 1),
        (0.5, 0.5, 1.5, 0),
        (1.5, 0.5, 30.0, 0),
        (5.0, 1.0, 0.5, 0),
    ])
}

fn stack(n_years: usize) -> DensityStack {
    DensityStack::new(&grid(), 2, test_support::names(), n_years).unwrap()
}

#[test]
fn densities_by_hand_with_a_partial_block() {
    let params = test_support::params();
    let mut st = stack(2);
    assert_eq!(st.shape(), (2, 2));
    assert_eq!(st.cell_size_m(), 2.0);
    let (seeds, trees) = (seeds(), trees());
    st.push(&year(0, &[], &trees), &params).unwrap();
    st.push(&year(1, &seeds, &trees), &params).unwrap();
    assert_eq!(st.problem(), None);
    assert_eq!(st.years(), &[0, 1]);
    // Blocks south first: the south row holds one row of run cells (2 m²), the north row 4 m².
    // Species 0: north-west 1+2+5+6 = 14 / 4, north-east 3+4+7+8 = 22 / 4, south-west
    // 9+10 = 19 / 2, south-east 11+12 = 23 / 2.
    assert_eq!(st.seed_density(1, 0).unwrap(), &[9.5, 11.5, 3.5, 5.5]);
    assert_eq!(st.seed_density(1, 1).unwrap(), &[0.0, 3.0, 0.0, 0.0]);
    assert_eq!(st.seed_density(1, 2).unwrap(), &[0.0; 4]);
    // Year 0: nothing dispersed.
    assert_eq!(st.seed_density(0, 0).unwrap(), &[0.0; 4]);
    // Seedlings: species 0 one in the north-west block (1/4), two in the south-east (2/2).
    for t in 0..2 {
        assert_eq!(st.seedling_density(t, 0).unwrap(), &[0.0, 1.0, 0.25, 0.0]);
        assert_eq!(st.seedling_density(t, 1).unwrap(), &[0.0, 0.0, 0.0, 0.25]);
        assert_eq!(st.seedling_density(t, 3).unwrap(), &[0.0; 4]);
    }
    assert_eq!(st.seed_density(2, 0), None);
    assert_eq!(st.seed_density(0, 4), None);
    // Axes: regular centres, the south block's bounds stop at the grid's edge.
    assert_eq!(st.x_axis(), (vec![1.0, 3.0], vec![0.0, 2.0, 2.0, 4.0]));
    assert_eq!(st.y_axis(), (vec![0.0, 2.0], vec![0.0, 1.0, 1.0, 3.0]));
}

#[test]
fn k_of_one_copies_the_counts() {
    let params = test_support::params();
    let mut st = DensityStack::new(&grid(), 1, test_support::names(), 1).unwrap();
    let (seeds, trees) = (seeds(), trees());
    st.push(&year(1, &seeds, &trees), &params).unwrap();
    let want: Vec<f32> = [
        9.0, 10.0, 11.0, 12.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0,
    ]
    .to_vec();
    assert_eq!(st.seed_density(0, 0).unwrap(), &want[..]);
}

#[test]
fn a_year_that_does_not_fit_is_refused_when_writing() {
    let params = test_support::params();
    let (seeds, trees) = (seeds(), trees());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.nc");
    // Empty.
    let st = stack(1);
    assert!(write_density_nc(&path, &st, None, &[]).is_err());
    // Too many years.
    let mut st = stack(1);
    st.push(&year(0, &[], &trees), &params).unwrap();
    st.push(&year(1, &seeds, &trees), &params).unwrap();
    assert!(st.problem().unwrap().contains("one more than the 1 years"));
    assert_eq!(st.years(), &[0]);
    let err = write_density_nc(&path, &st, None, &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("incomplete"), "{err}");
    assert!(!path.exists());
    // Seeds of the wrong shape.
    let mut st = stack(3);
    st.push(&year(1, &seeds[..2], &trees), &params).unwrap();
    assert!(st.problem().unwrap().contains("seed counts of 2 species"));
    // Another species list.
    let mut st = DensityStack::new(&grid(), 2, vec!["a".into()], 3).unwrap();
    st.push(&year(0, &[], &trees), &params).unwrap();
    assert!(st.problem().unwrap().contains("4 species"));
}

#[test]
fn too_large_a_stack_is_refused_before_allocating() {
    let huge = GridSpec {
        x_min_m: 0.0,
        y_max_m: 1e6,
        cell_size_m: 1.0,
        cols: 1_000_000,
        rows: 1_000_000,
    };
    let err = DensityStack::new(&huge, 1, test_support::names(), 1001)
        .unwrap_err()
        .to_string();
    assert!(err.contains("would need") && err.contains("GiB"), "{err}");
    assert!(err.contains("coarser density cell"), "{err}");
    for bad in [0usize, 1] {
        let (k, years) = if bad == 0 { (0, 1) } else { (1, 0) };
        assert!(DensityStack::new(&grid(), k, test_support::names(), years).is_err());
    }
    assert!(DensityStack::new(&grid(), 1, Vec::new(), 1).is_err());
}

/// One variable of a NetCDF header.
#[derive(Debug)]
struct Var {
    name: String,
    dim_ids: Vec<usize>,
    nc_type: u32,
    vsize: usize,
    begin: usize,
    /// Attributes, with the text of the text ones (others empty).
    attrs: Vec<(String, String)>,
}

impl Var {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.0 == k).map(|a| a.1.as_str())
    }
}

/// The parts of a classic NetCDF header the tests look at.
#[derive(Debug, Default)]
struct Header {
    dims: Vec<(String, usize)>,
    globals: Vec<(String, String)>,
    vars: Vec<Var>,
}

/// Parse a CDF-1 header (the format of geofield-io's NetCDF writer for small files).
fn parse(b: &[u8]) -> Header {
    assert_eq!(&b[..4], b"CDF\x01");
    let mut at = 8;
    let int = |at: &mut usize| {
        let v = u32::from_be_bytes(b[*at..*at + 4].try_into().unwrap());
        *at += 4;
        v as usize
    };
    let name = |at: &mut usize| {
        let n = int(at);
        let s = String::from_utf8(b[*at..*at + n].to_vec()).unwrap();
        *at += n.div_ceil(4) * 4;
        s
    };
    let attrs = |at: &mut usize| {
        let mut out = Vec::new();
        let _tag = int(at);
        for _ in 0..int(at) {
            let k = name(at);
            let ty = int(at);
            let n = int(at);
            let size = [0, 1, 1, 2, 4, 4, 8][ty] * n;
            let v = if ty == 2 {
                String::from_utf8(b[*at..*at + n].to_vec()).unwrap()
            } else {
                String::new()
            };
            *at += size.div_ceil(4) * 4;
            out.push((k, v));
        }
        out
    };
    let mut h = Header::default();
    let _tag = int(&mut at);
    for _ in 0..int(&mut at) {
        let n = name(&mut at);
        let len = int(&mut at);
        h.dims.push((n, len));
    }
    h.globals = attrs(&mut at);
    let _tag = int(&mut at);
    for _ in 0..int(&mut at) {
        let n = name(&mut at);
        let ids = (0..int(&mut at)).map(|_| int(&mut at)).collect();
        let a = attrs(&mut at);
        let nc_type = int(&mut at) as u32;
        let vsize = int(&mut at);
        let begin = int(&mut at);
        h.vars.push(Var {
            name: n,
            dim_ids: ids,
            nc_type,
            vsize,
            begin,
            attrs: a,
        });
    }
    h
}

#[test]
fn netcdf_header_and_data_read_back() {
    let params = test_support::params();
    let mut st = stack(2);
    let (seeds, trees) = (seeds(), trees());
    st.push(&year(0, &[], &trees), &params).unwrap();
    st.push(&year(1, &seeds, &trees), &params).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("density.nc");
    let prov = vec![
        ("created".to_string(), "2025-01-01T00:00:00Z".to_string()),
        (
            "command_line".to_string(),
            "geofield forest --density d.nc".to_string(),
        ),
        ("method".to_string(), "exact".to_string()),
    ];
    write_density_nc(&path, &st, Some(32610), &prov).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let h = parse(&bytes);
    let dims: Vec<(&str, usize)> = h.dims.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    assert_eq!(
        dims,
        [("time", 2), ("species", 4), ("y", 2), ("x", 2), ("nv", 2)]
    );
    let names: Vec<&str> = h.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "time",
            "species",
            "x",
            "x_bnds",
            "y",
            "y_bnds",
            "crs",
            "seed_density",
            "seedling_density"
        ]
    );
    let global = |k: &str| h.globals.iter().find(|g| g.0 == k).map(|g| g.1.as_str());
    assert_eq!(global("Conventions"), Some("CF-1.8"));
    assert_eq!(
        global("history"),
        Some("2025-01-01T00:00:00Z geofield forest --density d.nc")
    );
    assert_eq!(global("method"), Some("exact"));
    assert_eq!(global("crs"), Some("EPSG:32610"));
    let var = |n: &str| h.vars.iter().find(|v| v.name == n).unwrap();
    let sd = var("seed_density");
    assert_eq!(sd.dim_ids, [0, 1, 2, 3]);
    assert_eq!(sd.nc_type, 5); // NC_FLOAT
    assert_eq!(sd.attr("units"), Some("m-2"));
    assert_eq!(sd.attr("grid_mapping"), Some("crs"));
    let sp = var("species");
    assert_eq!(
        sp.attr("species_names"),
        Some(test_support::names().join("\n").as_str())
    );
    assert_eq!(
        var("y").attr("standard_name"),
        Some("projection_y_coordinate")
    );
    // Sizes: every variable where the header says, the file ends with the last one.
    let n = 2 * 4 * 2 * 2;
    assert_eq!(sd.vsize, 4 * n);
    for w in h.vars.windows(2) {
        assert_eq!(
            w[1].begin,
            w[0].begin + w[0].vsize.div_ceil(4) * 4,
            "{}",
            w[1].name
        );
    }
    let last = h.vars.last().unwrap();
    assert_eq!(bytes.len(), last.begin + last.vsize);
    // The data read back equal the stack, and y increases northwards.
    let floats = |v: &Var| {
        bytes[v.begin..v.begin + v.vsize]
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect::<Vec<f32>>()
    };
    assert_eq!(floats(sd), st.seed);
    assert_eq!(floats(var("seedling_density")), st.seedling);
    let yv = var("y");
    let y: Vec<f64> = bytes[yv.begin..yv.begin + yv.vsize]
        .chunks_exact(8)
        .map(|c| f64::from_be_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(y, [0.0, 2.0]);
    // Without a CRS: no grid mapping.
    write_density_nc(&path, &st, None, &[]).unwrap();
    let h = parse(&std::fs::read(&path).unwrap());
    assert!(h.vars.iter().all(|v| v.name != "crs"));
}
