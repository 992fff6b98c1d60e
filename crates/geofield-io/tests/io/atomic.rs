use geofield_io::atomic::{write_atomic, write_atomic_many};

use crate::dir_entries;

#[test]
fn writes_whole_file_and_leaves_no_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("out.txt");
    write_atomic(&p, |w| w.write_all(b"hello\n")).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"hello\n");
    assert_eq!(dir_entries(dir.path()), ["out.txt"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_ne!(
            mode & 0o044,
            0,
            "output should be readable by others, mode {mode:o}"
        );
    }
}

#[test]
fn failing_writer_leaves_nothing_and_keeps_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("out.bin");
    let e = write_atomic(&p, |w| {
        w.write_all(b"partial")?;
        Err(std::io::Error::other("simulated failure"))
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("cannot write {}: simulated failure", p.display())
    );
    assert!(
        dir_entries(dir.path()).is_empty(),
        "{:?}",
        dir_entries(dir.path())
    );

    std::fs::write(&p, b"old").unwrap();
    assert!(write_atomic(&p, |_| Err(std::io::Error::other("boom"))).is_err());
    assert_eq!(std::fs::read(&p).unwrap(), b"old");
    assert_eq!(dir_entries(dir.path()), ["out.bin"]);
}

#[test]
fn missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such");
    let p = missing.join("x.tif");
    let e = write_atomic(&p, |w| w.write_all(b"x"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "cannot write {}: directory {}",
            p.display(),
            missing.display()
        )),
        "{e}"
    );
    assert!(e.contains("does not exist"), "{e}");
    assert!(!missing.exists());
    assert!(dir_entries(dir.path()).is_empty());
}

#[test]
fn group_write_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<_> = ["a.asc", "b.asc", "c.asc"]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
    let e = write_atomic_many(&paths, |i, w| {
        if i == 2 {
            return Err(std::io::Error::other("disk full"));
        }
        w.write_all(b"data")
    })
    .unwrap_err();
    assert!(
        e.to_string().contains("c.asc") && e.to_string().contains("disk full"),
        "{e}"
    );
    assert!(
        dir_entries(dir.path()).is_empty(),
        "{:?}",
        dir_entries(dir.path())
    );

    let written = write_atomic_many(&paths, |i, w| write!(w, "{i}")).unwrap();
    assert_eq!(written, paths);
    assert_eq!(std::fs::read_to_string(&paths[2]).unwrap(), "2");
    assert_eq!(dir_entries(dir.path()), ["a.asc", "b.asc", "c.asc"]);
}
