//! `geofield wind` refusing what it cannot do well: bad inputs and solves that do not converge
//! end with a clear message, exit code 2 and no output at all.

use super::wind::{asc, hill, listing, stations, wind};
use super::{geofield, s, text};

#[test]
fn wind_solver_modes_converge_or_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = hill(d);
    let out = d.join("w.npz");
    // The paper's fixed sweeps: reported, fine even if not converged.
    let json = d.join("r.json");
    let o = wind(
        &dem,
        &st,
        &out,
        &[
            "--model",
            "west",
            "--fixed-iterations",
            "--iterations",
            "3",
            "--json",
            s(&json),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["report"]["iterations"], 3);
    assert_eq!(j["report"]["method"], "west");
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(&json).unwrap();
    // A tolerance the iteration cap cannot reach: an error, and nothing written.
    let o = wind(
        &dem,
        &st,
        &out,
        &[
            "--solver",
            "sor",
            "--iterations",
            "2",
            "--tolerance",
            "1e-9",
            "--json",
            s(&json),
        ],
    );
    let m = text(&o);
    assert_eq!(o.status.code(), Some(2), "{m}");
    assert!(m.contains("converge"), "{m}");
    assert!(!out.exists() && !json.exists());
}

#[test]
fn wind_bad_input_is_a_clear_error_with_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, _) = hill(d);
    let out = d.join("w.npz");
    let png = d.join("m.png");
    let good = "a,300,300,10,5,270,\n";
    let cases: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
        (
            "x,9000,9000,10,5,270,\n".into(),
            vec![],
            vec!["no usable station"],
        ),
        (good.into(), vec!["--nz", "4"], vec!["model top", "row"]),
        (
            good.into(),
            vec!["--cell-size-m", "45"],
            vec!["mismatched cell size", "30", "45"],
        ),
        (good.into(), vec!["--nz", "2000000000"], vec!["memory"]),
        (
            "a,300,300,10,fast,270,\n".into(),
            vec![],
            vec!["st.csv:2", "speed_m_per_s", "fast"],
        ),
        (
            "a,NaN,300,10,5,270,\n".into(),
            vec![],
            vec!["st.csv:2", "x_m"],
        ),
        (
            "a,300,300,10,-1,270,\n".into(),
            vec![],
            vec!["st.csv:2", "negative"],
        ),
        (
            "a,300,300,0,5,270,\n".into(),
            vec![],
            vec!["st.csv:2", "height_agl_m"],
        ),
        (
            "a,300,300,10,5,400,\n".into(),
            vec![],
            vec!["st.csv:2", "direction_deg"],
        ),
        (
            "a,300,300,10,5,270,G\n".into(),
            vec![],
            vec!["st.csv:2", "stability", "G"],
        ),
        (
            format!("{good}a,310,300,10,5,270,\n"),
            vec![],
            vec!["st.csv:3", "twice"],
        ),
        (String::new(), vec![], vec!["no stations"]),
        (good.into(), vec!["--stability", "Q"], vec!["--stability"]),
        (
            good.into(),
            vec!["--fixed-iterations"],
            vec!["--model west"],
        ),
        (good.into(), vec!["--omega", "2.5"], vec!["--omega"]),
    ];
    for (body, args, want) in cases {
        let st = stations(d, &body);
        let args: Vec<&str> = [&args[..], &["--png", s(&png)]].concat();
        let o = wind(&dem, &st, &out, &args);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?} {body:?}: {m}");
        for w in want {
            assert!(m.contains(w), "{args:?} {body:?}: missing {w:?} in {m}");
        }
        assert!(
            !out.exists() && !png.exists(),
            "{args:?}: no output on error"
        );
    }
    // A missing column, a DEM without data, an unknown output format, a stretched .vti.
    std::fs::write(
        d.join("st.csv"),
        "id,x_m,y_m,height_agl_m,speed_m_per_s\na,1,1,10,5\n",
    )
    .unwrap();
    let o = wind(&dem, &d.join("st.csv"), &out, &[]);
    assert!(
        text(&o).contains("direction_deg") && o.status.code() == Some(2),
        "{}",
        text(&o)
    );
    let st = stations(d, good);
    let empty = asc(d, 3, 2, &[-9999.0; 6]);
    let o = wind(&empty, &st, &out, &[]);
    assert!(
        text(&o).contains("nodata") && o.status.code() == Some(2),
        "{}",
        text(&o)
    );
    let o = wind(&dem, &st, &d.join("w.h5"), &[]);
    assert!(text(&o).contains(".npz, .nc or .vti"), "{}", text(&o));
    let vti = d.join("w.vti");
    let o = geofield(&[
        "wind",
        "--dem",
        s(&dem),
        "--stations",
        s(&st),
        "--levels-m",
        "10,20,40,80,160",
        "--out",
        s(&vti),
    ]);
    assert!(
        text(&o).contains("uniform layers") && !vti.exists(),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
    // Nothing but the inputs is left, not even a staging folder.
    assert_eq!(listing(d), ["dem.asc", "dem.tif", "st.csv"]);
}
