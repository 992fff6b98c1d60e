use std::path::{Path, PathBuf};

use geofield_io::IoError;
use geofield_io::csv_input::{CsvRecord, CsvTable};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Read every record, returning (line, fields).
fn all(table: &mut CsvTable) -> Result<Vec<(u64, Vec<String>)>, IoError> {
    let mut out = Vec::new();
    let mut rec = CsvRecord::default();
    while table.next_record(&mut rec)? {
        let fields = (0..rec.len())
            .map(|i| table.str_at(&rec, i).unwrap().to_string())
            .collect();
        out.push((rec.line(), fields));
    }
    Ok(out)
}

#[test]
fn reads_trimmed_fields_case_insensitive_columns_and_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "trees.csv",
        b" X_m , y_M,DBH_cm ,species\n1.5, 2 ,30,Fagus sylvatica\n\n3,4,abc, Abies \n",
    );
    let mut t = CsvTable::read(&p).unwrap();
    assert_eq!(t.headers, ["X_m", "y_M", "DBH_cm", "species"]);
    assert_eq!(t.column("x_m").unwrap(), 0);
    assert_eq!(t.column(" dbh_cm ").unwrap(), 2);
    assert_eq!(t.column_any(&["easting", "Y_m"]).unwrap(), 1);
    let (x, y, dbh, sp) = (0, 1, 2, 3);

    let mut rec = CsvRecord::default();
    assert!(t.next_record(&mut rec).unwrap());
    assert_eq!(rec.line(), 2);
    assert_eq!(
        (t.f64_at(&rec, x).unwrap(), t.f64_at(&rec, y).unwrap()),
        (1.5, 2.0)
    );
    assert_eq!(t.str_at(&rec, sp).unwrap(), "Fagus sylvatica");

    // The blank line 3 is skipped and the next record reports line 4.
    assert!(t.next_record(&mut rec).unwrap());
    assert_eq!(rec.line(), 4);
    assert_eq!(t.str_at(&rec, sp).unwrap(), "Abies");
    let e = t.f64_at(&rec, dbh).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:4: column \"DBH_cm\": \"abc\" is not a number",
            p.display()
        )
    );
    assert!(matches!(e, IoError::BadNumber { line: 4, .. }));
    assert!(!t.next_record(&mut rec).unwrap());
}

#[test]
fn line_numbers_count_blank_lines_crlf_and_quoted_newlines() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "lines.csv",
        b"\"x\",note\r\n1,plain\r\n\r\n2,\"two\nlines\"\n\n\n3,after blanks\n4,x\r\n\r\n5,bad,extra\n",
    );
    let mut t = CsvTable::read(&p).unwrap();
    let mut lines = Vec::new();
    let mut rec = CsvRecord::default();
    let e = loop {
        match t.next_record(&mut rec) {
            Ok(true) => lines.push((rec.line(), t.f64_at(&rec, 0).unwrap())),
            Ok(false) => panic!("expected an error at the last record"),
            Err(e) => break e,
        }
    };
    assert_eq!(lines, [(2, 1.0), (4, 2.0), (8, 3.0), (9, 4.0)]);
    assert!(
        e.to_string()
            .starts_with(&format!("{}:11: malformed CSV", p.display())),
        "{e}"
    );
}

#[test]
fn missing_column_names_file_and_lists_columns() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "stems.csv", b"x,y,dbh\n1,2,3\n");
    let t = CsvTable::read(&p).unwrap();
    let e = t.column("species").unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: no column named \"species\"", p.display())),
        "{e}"
    );
    assert!(e.contains("\"x\", \"y\", \"dbh\""), "{e}");
    let e = t
        .column_any(&["dbh_cm", "diameter"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"dbh_cm\" (also tried \"diameter\")"), "{e}");
}

#[test]
fn wrong_field_count_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.csv",
        b"a,b,c,d\n1,2,3,4\n5,6,7\n8,9,10,11\n",
    );
    let mut t = CsvTable::read(&p).unwrap();
    let e = all(&mut t).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}:3: malformed CSV", p.display())),
        "{msg}"
    );
    assert!(
        msg.contains("3 field(s)") && msg.contains("header has 4"),
        "{msg}"
    );
}

#[test]
fn unclosed_quote_and_invalid_utf8_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "quote.csv", b"a,b,c\n1,2,3\n4,\"5,6\n7,8,9\n");
    let e = all(&mut CsvTable::read(&p).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}:3: malformed CSV", p.display())),
        "{e}"
    );

    let p = write(dir.path(), "latin1.csv", b"name,x\nok,1\nM\xfcller,2\n");
    let e = all(&mut CsvTable::read(&p).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}:3: malformed CSV", p.display())),
        "{e}"
    );
    assert!(e.contains("field 1 is not valid UTF-8"), "{e}");

    let p = write(dir.path(), "badhead.csv", b"n\xffme,x\n1,2\n");
    let e = CsvTable::read(&p).err().unwrap().to_string();
    assert!(
        e.starts_with(&format!("{}:1: malformed CSV", p.display())),
        "{e}"
    );
}

#[test]
fn empty_and_header_only_files_have_no_records() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.csv", b"");
    let mut t = CsvTable::read(&empty).unwrap();
    assert!(t.headers.is_empty());
    assert!(all(&mut t).unwrap().is_empty());
    let e = t.column("x").unwrap_err().to_string();
    assert!(e.contains("no columns (the file is empty)"), "{e}");

    let head = write(dir.path(), "head.csv", b"x,y\n");
    let mut t = CsvTable::read(&head).unwrap();
    assert_eq!(t.headers, ["x", "y"]);
    assert_eq!(t.for_each_record(|_| Ok(())).unwrap(), 0);
}

#[test]
fn for_each_record_streams_values_and_stops_on_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("x_m,y_m,dbh_cm,species\n");
    for i in 0..1000 {
        text.push_str(&format!("{i},{},{}.5,sp{}\n", 2 * i, i % 7, i % 3));
    }
    let p = write(dir.path(), "many.csv", text.as_bytes());
    let mut t = CsvTable::read(&p).unwrap();
    let (x, d, s) = (
        t.column("x_m").unwrap(),
        t.column("dbh_cm").unwrap(),
        t.column("species").unwrap(),
    );
    let (mut sum_x, mut sum_d, mut sp2) = (0.0, 0.0, 0);
    let n = t
        .for_each_record(|row| {
            sum_x += row.f64(x)?;
            sum_d += row.finite_f64(d)?;
            sp2 += usize::from(row.str(s)? == "sp2");
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 1000);
    assert_eq!(sum_x, (0..1000).sum::<i32>() as f64);
    assert_eq!(sum_d, (0..1000).map(|i| (i % 7) as f64 + 0.5).sum::<f64>());
    assert_eq!(sp2, 333);

    // NaN parses as a number but is rejected where finite values are required.
    let p = write(dir.path(), "nan.csv", b"v\n1\nNaN\n");
    let mut t = CsvTable::read(&p).unwrap();
    let e = t
        .for_each_record(|row| row.finite_f64(0).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}:3: column \"v\": \"NaN\" is not a finite number",
            p.display()
        )
    );
}

#[test]
fn missing_file_is_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nope.csv");
    let e = CsvTable::read(&p).err().unwrap().to_string();
    assert!(
        e.starts_with(&format!("cannot read {}: ", p.display())),
        "{e}"
    );
}
