//! `geofield cokrige`: the prediction and variance written are the library's cokriging with the
//! coregionalisation the command fitted (read back from its JSON summary), which the library's
//! tests check against a dense solve of the cokriging system; bad input exits 2 and writes
//! nothing.

use geofield::kriging::SampleSet;
use geofield::kriging::Target;
use geofield::kriging::cokriging::{CoKind, CoParams, Lmc, cokrige};
use geofield::kriging::variogram::{Model, Structure};
use geofield_io::{NpyData, read_npy};

use super::{geofield, s, text};

/// 30 wells; the primary `a` at every third, the secondary `b` at all but every seventh.
fn samples() -> (String, SampleSet) {
    let mut t = String::from("x,y,a,b\n");
    let (mut xs, mut ys, mut av, mut bv) = (vec![], vec![], vec![], vec![]);
    for i in 0..30 {
        let (x, y) = ((i * 37 % 100) as f64 + 0.5, (i * 61 % 100) as f64 + 0.25);
        let c = (x / 17.0).sin() + (y / 23.0).cos();
        let a = (i % 3 == 0).then_some(c + 0.1 * ((i * 7 % 5) as f64));
        let b = (i % 7 != 6).then_some(2.0 * c + 0.05 * ((i * 3 % 4) as f64));
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        t += &format!("{x},{y},{},{}\n", cell(a), cell(b));
        xs.push(x);
        ys.push(y);
        av.push(a.unwrap_or(f64::NAN));
        bv.push(b.unwrap_or(f64::NAN));
    }
    (t, SampleSet::new(xs, ys, vec![av, bv]))
}

fn floats(v: &serde_json_value::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

mod serde_json_value {
    pub use serde_json::Value;
}

#[test]
fn writes_the_librarys_cokriging_with_the_fitted_model() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (csv, set) = samples();
    std::fs::write(d.join("s.csv"), csv).unwrap();
    let o = geofield(&[
        "cokrige",
        "--samples",
        s(&d.join("s.csv")),
        "--values",
        "a,b",
        "--model",
        "spherical",
        "--range",
        "60",
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "10",
        "--out",
        s(&d.join("co.npy")),
        "--variance",
        s(&d.join("var.npy")),
        "--json",
        s(&d.join("co.json")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("co.json")).unwrap()).unwrap();
    let l = &j["lmc"];
    let lmc = Lmc {
        variables: 2,
        structures: vec![Structure::new(Model::Spherical, 1.0, 60.0)],
        nugget: floats(&l["nugget"]),
        sills: vec![floats(&l["sills"][0])],
    };
    assert_eq!(j["samples_per_variable"], serde_json::json!([10, 26]));
    let grid = geofield_core::GridSpec::from_extent(
        geofield_core::Extent::new(0.0, 0.0, 100.0, 100.0).unwrap(),
        10.0,
    )
    .unwrap();
    let want = cokrige(
        &set,
        &CoParams {
            lmc,
            kind: CoKind::Ordinary,
            anisotropy: None,
            variance: true,
            target: Target::Grid(grid),
        },
    )
    .unwrap();
    for (file, w) in [
        ("co.npy", &want.values),
        ("var.npy", want.variance.as_ref().unwrap()),
    ] {
        let got = read_npy(&d.join(file)).unwrap();
        assert_eq!(got.shape, vec![1, 10, 10]);
        let NpyData::F64(v) = got.data else {
            panic!("{file}: f64 expected")
        };
        for (a, b) in v.iter().zip(w) {
            // The same f64 computation; the LMC read back from JSON is exact (round trip).
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{file}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn refusals_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let csv = d.join("s.csv");
    std::fs::write(&csv, samples().0).unwrap();
    let run = |extra: &[&str], want: &str| {
        let out = d.join("o.tif");
        let mut a = vec![
            "cokrige",
            "--samples",
            s(&csv),
            "--extent",
            "0,0,100,100",
            "--cell-size-m",
            "10",
            "--out",
            s(&out),
        ];
        a.extend_from_slice(extra);
        let o = geofield(&a);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{extra:?}: {}", text(&o));
        assert!(!out.exists());
    };
    run(
        &["--values", "a", "--model", "spherical"],
        "at least one secondary",
    );
    run(
        &["--values", "a,b", "--model", "power:1.5", "--range", "10"],
        "bounded",
    );
    run(
        &[
            "--values",
            "a,b",
            "--model",
            "spherical",
            "--range",
            "10,20",
        ],
        "one range per structure",
    );
    run(
        &[
            "--values",
            "a,b",
            "--model",
            "spherical",
            "--kind",
            "simple",
            "--mean",
            "1",
        ],
        "one mean per value column",
    );
    run(&["--values", "a,nope", "--model", "spherical"], "nope");
}
