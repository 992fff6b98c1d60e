use std::path::{Path, PathBuf};

use geofield_io::IoError;
use geofield_io::csv_input::{CsvChunks, CsvRecord, CsvTable};

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

/// Every record of `path` by the parallel reader, as (line, fields); the error as text.
fn all_chunked(path: &Path) -> Result<Vec<(u64, Vec<String>)>, String> {
    let t = CsvChunks::open(path).map_err(|e| e.to_string())?;
    records(&t)
}

/// Every record `t` folds, as (line, fields); the error as text.
fn records(t: &CsvChunks) -> Result<Vec<(u64, Vec<String>)>, String> {
    let parts = t
        .fold(|acc: &mut Vec<(u64, Vec<String>)>, row| {
            let n = t.headers.len();
            let fields = (0..n).map(|i| row.str(i).map(str::to_string));
            acc.push((row.line(), fields.collect::<Result<_, IoError>>()?));
            Ok::<(), IoError>(())
        })
        .map_err(|e| e.to_string())?;
    Ok(parts.into_iter().flatten().collect())
}

/// The streaming reader's records, the error as text.
fn all_streamed(path: &Path) -> Result<Vec<(u64, Vec<String>)>, String> {
    let mut t = CsvTable::read(path).map_err(|e| e.to_string())?;
    all(&mut t).map_err(|e| e.to_string())
}

/// A stem-map-like file of `rows` records over several 4 MiB chunks, with CRLF line ends,
/// blank lines (plain and CRLF), padded fields and a byte-order mark.
fn big_file(rows: usize) -> Vec<u8> {
    let mut s = String::from("\u{feff}x_m, y_m ,dbh_cm,species\n");
    for i in 0..rows {
        let end = if i % 7 == 0 { "\r\n" } else { "\n" };
        s.push_str(&format!(
            "{}.25, {} ,{}.5,sp{}{end}",
            i,
            i * 3,
            i % 90,
            i % 4
        ));
        match i % 1000 {
            10 => s.push('\n'),
            500 => s.push_str("\r\n\n"),
            _ => {}
        }
    }
    s.into_bytes()
}

#[test]
fn the_parallel_reader_gives_the_streaming_readers_records_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = big_file(600_000); // about 15 MB: four chunks
    assert!(bytes.len() > 3 * (1 << 22));
    let p = write(dir.path(), "big.csv", &bytes);
    let t = CsvChunks::open(&p).unwrap();
    assert!(t.is_parallel());
    assert_eq!(t.headers, ["x_m", "y_m", "dbh_cm", "species"]);
    assert_eq!(t.column_any(&["x", "X_M"]).unwrap(), 0);
    let (fast, slow) = (all_chunked(&p).unwrap(), all_streamed(&p).unwrap());
    assert_eq!(fast.len(), 600_000);
    assert_eq!(fast, slow);
    // A quote anywhere: read serially, with the same records.
    let mut quoted = bytes.clone();
    quoted.extend_from_slice(b"\"1\",2,3,\"sp,1\"\n");
    let p = write(dir.path(), "quoted.csv", &quoted);
    assert!(!CsvChunks::open(&p).unwrap().is_parallel());
    let fast = all_chunked(&p).unwrap();
    assert_eq!(fast.last().unwrap().1[3], "sp,1");
    assert_eq!(fast, all_streamed(&p).unwrap());
    // Old Mac line ends (a lone CR): serially too.
    let p = write(dir.path(), "cr.csv", b"a,b\r1,2\r3,4\r");
    assert!(!CsvChunks::open(&p).unwrap().is_parallel());
    assert_eq!(all_chunked(&p).unwrap(), all_streamed(&p).unwrap());
}

#[test]
fn the_parallel_reader_reports_the_first_error_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let good = big_file(600_000);
    // Errors deep in the second and the third chunk: the earlier one is reported, with the
    // line the streaming reader names.
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<&str> = text.split('\n').collect();
    let (a, b) = (lines.len() / 2, lines.len() * 3 / 4);
    lines[b] = "1,2,3";
    lines[a] = "1,2,3,4,5";
    let p = write(dir.path(), "fields.csv", lines.join("\n").as_bytes());
    assert!(CsvChunks::open(&p).unwrap().is_parallel());
    let (fast, slow) = (all_chunked(&p).unwrap_err(), all_streamed(&p).unwrap_err());
    assert_eq!(fast, slow);
    assert!(
        fast.contains(&format!(":{}:", a + 1)) && fast.contains("5 field(s)"),
        "{fast}"
    );
    // Invalid UTF-8 in a later chunk.
    let mut bytes = text.clone().into_bytes();
    let at = bytes.len() * 2 / 3;
    let at = at + bytes[at..].iter().position(|&c| c == b',').unwrap() + 1;
    bytes.insert(at, 0xff);
    let p = write(dir.path(), "utf8.csv", &bytes);
    let (fast, slow) = (all_chunked(&p).unwrap_err(), all_streamed(&p).unwrap_err());
    assert_eq!(fast, slow);
    assert!(fast.contains("is not valid UTF-8"), "{fast}");
    // Empty and header-only files, and a last line without a line end.
    for (name, body) in [
        ("e.csv", ""),
        ("h.csv", "a,b\n"),
        ("n.csv", "a,b\n1,2\n\n3,4"),
    ] {
        let p = write(dir.path(), name, body.as_bytes());
        assert_eq!(all_chunked(&p), all_streamed(&p), "{name}");
    }
}

/// Parts as threads: `all_gather` through a shared slot per part and a barrier.
struct Gather {
    slots: std::sync::Mutex<Vec<Vec<f64>>>,
    barrier: std::sync::Barrier,
}

impl Gather {
    fn new(n: usize) -> Self {
        Self {
            slots: std::sync::Mutex::new(vec![Vec::new(); n]),
            barrier: std::sync::Barrier::new(n),
        }
    }
    fn call(&self, p: usize, mine: &[f64]) -> Vec<f64> {
        self.slots.lock().unwrap()[p] = mine.to_vec();
        self.barrier.wait();
        let all = self.slots.lock().unwrap().concat();
        self.barrier.wait();
        all
    }
}

/// `path` read by `parts` parts together (`CsvChunks::open_part`): each part's records, in part
/// order, or its error as text (`Ok(None)`: another part failed).
#[allow(clippy::type_complexity)]
fn all_parts(path: &Path, parts: usize) -> Vec<Result<Option<Vec<(u64, Vec<String>)>>, String>> {
    let g = Gather::new(parts);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..parts)
            .map(|p| {
                let g = &g;
                s.spawn(move || {
                    let gather = |m: &[f64]| g.call(p, m);
                    let Some(t) =
                        CsvChunks::open_part(path, p, parts, &gather).map_err(|e| e.to_string())?
                    else {
                        return Ok(None);
                    };
                    records(&t).map(Some)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Parts reading their byte ranges give, in part order, the streaming reader's records and
/// line numbers (CRLF and blank lines, a byte-order mark, chunks of several MiB, more parts
/// than lines); a quoted file is read serially, each part keeping its share; the first error
/// in file order is the lowest failing part's.
#[test]
fn parts_reading_byte_ranges_give_the_files_records_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = big_file(300_000);
    let p = write(dir.path(), "big.csv", &bytes);
    let want = all_streamed(&p).unwrap();
    let small = write(dir.path(), "small.csv", b"a,b\n1,2\r\n\n3,4\n5,6");
    let want_small = all_streamed(&small).unwrap();
    let mut quoted = bytes.clone();
    quoted.extend_from_slice(b"\"1\",2,3,\"sp,1\"\n");
    let q = write(dir.path(), "quoted.csv", &quoted);
    let want_quoted = all_streamed(&q).unwrap();
    for parts in [1, 2, 3, 5] {
        for (path, want) in [(&p, &want), (&small, &want_small), (&q, &want_quoted)] {
            let got: Vec<_> = all_parts(path, parts)
                .into_iter()
                .flat_map(|r| r.unwrap().unwrap())
                .collect();
            assert_eq!(&got, want, "{} parts of {}", parts, path.display());
        }
    }
    // An error in the last third: the part whose range holds it reports the streaming reader's
    // error; the parts before it read fine.
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<&str> = text.split('\n').collect();
    let bad = lines.len() * 5 / 6;
    lines[bad] = "1,2,3";
    let e = write(dir.path(), "bad.csv", lines.join("\n").as_bytes());
    let slow = all_streamed(&e).unwrap_err();
    let got = all_parts(&e, 3);
    assert!(got[0].as_ref().is_ok_and(Option::is_some) && got[1].is_ok());
    assert_eq!(got[2].as_ref().unwrap_err(), &slow);
    assert!(slow.contains(&format!(":{}:", bad + 1)), "{slow}");
}
