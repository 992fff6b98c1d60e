//! NumPy `.npz` archives: a ZIP file of `.npy` members, one per named array, as written by
//! `numpy.savez` and read by `numpy.load`.
//!
//! Layout (PKWARE APPNOTE 6.3.x, "ZIP File Format Specification"): for each member a local file
//! header (signature `PK\x03\x04`, version, flags 0, method 0 = stored, DOS time and date, CRC-32,
//! sizes, the name `NAME.npy`), then the member's bytes (an [`crate::npy`] file); then the central
//! directory (one `PK\x01\x02` record per member with its local header's offset) and the end of
//! central directory record (`PK\x05\x06`). All integers are little-endian.
//!
//! Choices made by this writer:
//!
//! - Members are stored, not compressed (what `numpy.savez` does; `savez_compressed` deflates):
//!   wind and raster fields compress poorly and stored members can be memory-mapped.
//! - The CRC-32 of each member is computed in a first pass over its values, so the data are
//!   streamed out once without a data descriptor.
//! - Time stamps are fixed at 1980-01-01 00:00 (the DOS epoch), so the same arrays give the same
//!   bytes.
//! - ZIP64 (APPNOTE 4.3.14, 4.5.3): a member of 4 GiB or more, or one starting 4 GiB or more
//!   into the file, gets the ZIP64 extra field in both headers (sizes and offset set to
//!   `0xFFFFFFFF`), and the archive then ends with a ZIP64 end of central directory record and
//!   locator before the classic record, as Python's `zipfile` writes them.
//! - Names: non-empty, printable ASCII without `/`, `\` or `.npy` suffix, unique; the member is
//!   `NAME.npy` and `numpy.load(path)[NAME]` returns it.
//!
//! [`read_npz`](crate::npz_in::read_npz) reads back stored archives (this writer's and `numpy.savez`'s), for tests and
//! tools; compressed members are refused with a message.
//!
//! The archive is written atomically ([`write_atomic`]).

use std::io::Write;
use std::path::Path;

use crate::IoError;
use crate::atomic::write_atomic;
use crate::npy::{Element, npy_header};

/// The values of one array, borrowed from the caller, in C (row-major) order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NpzData<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
}

/// One array to store: its shape (`[]` for a 0-d scalar) and values.
#[derive(Debug, Clone, PartialEq)]
pub struct NpzArray<'a> {
    pub shape: Vec<usize>,
    pub data: NpzData<'a>,
}

impl<'a> NpzArray<'a> {
    pub fn new(shape: &[usize], data: NpzData<'a>) -> Self {
        Self {
            shape: shape.to_vec(),
            data,
        }
    }
}

pub(crate) const LOCAL_SIG: u32 = 0x0403_4b50;
pub(crate) const CENTRAL_SIG: u32 = 0x0201_4b50;
pub(crate) const END_SIG: u32 = 0x0605_4b50;
pub(crate) const END64_SIG: u32 = 0x0606_4b50;
pub(crate) const LOCATOR64_SIG: u32 = 0x0706_4b50;
/// Version needed to extract: 2.0 for stored members, 4.5 for ZIP64.
const VERSION_STORED: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// DOS date of 1980-01-01: (year - 1980) << 9 | month << 5 | day.
const DOS_DATE: u16 = (1 << 5) | 1;
pub(crate) const U32_LIMIT: u64 = 0xFFFF_FFFF;
pub(crate) const ZIP64_EXTRA_ID: u16 = 0x0001;
/// Values converted per write call.
const CHUNK_VALUES: usize = 1 << 16;

/// What the central directory needs of a member.
struct Entry {
    name: Vec<u8>,
    crc: u32,
    size: u64,
    offset: u64,
    zip64: bool,
}

/// Write `arrays` (name, array) as an `.npz` archive at `path`, atomically. Errors name the
/// archive and the offending array (bad name, duplicate, shape and length disagreeing).
pub fn write_npz(path: &Path, arrays: &[(&str, NpzArray)]) -> Result<(), IoError> {
    write_npz_with(path, arrays, false)
}

/// [`write_npz`], optionally forcing the ZIP64 records on every member (to test them without
/// writing 4 GiB).
#[doc(hidden)]
pub fn write_npz_with(
    path: &Path,
    arrays: &[(&str, NpzArray)],
    force_zip64: bool,
) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let mut headers = Vec::with_capacity(arrays.len());
    for (i, (name, a)) in arrays.iter().enumerate() {
        let printable = name
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'/' && b != b'\\');
        if name.is_empty() || !printable || name.ends_with(".npy") {
            return Err(invalid(format!(
                "array name {name:?} is not usable in an .npz (printable ASCII without / or \\, \
                 no .npy suffix)"
            )));
        }
        if arrays[..i].iter().any(|(n, _)| n == name) {
            return Err(invalid(format!("two arrays are named {name:?}")));
        }
        let n = a
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if n != Some(data_len(&a.data)) {
            return Err(invalid(format!(
                "array {name:?} of shape {:?} needs {} values but {} were given",
                a.shape,
                n.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                data_len(&a.data)
            )));
        }
        headers.push(npy_header(descr(&a.data), &a.shape));
    }
    write_atomic(path, |w| {
        let mut w = Counting { inner: w, at: 0 };
        let mut entries = Vec::with_capacity(arrays.len());
        for ((name, a), header) in arrays.iter().zip(&headers) {
            let mut crc = crc32fast::Hasher::new();
            crc.update(header);
            for_each_chunk(&a.data, |bytes| {
                crc.update(bytes);
                Ok(())
            })?;
            let e = Entry {
                name: format!("{name}.npy").into_bytes(),
                crc: crc.finalize(),
                size: header.len() as u64 + data_bytes(&a.data),
                offset: w.at,
                zip64: false,
            };
            let e = Entry {
                zip64: force_zip64 || e.size >= U32_LIMIT || e.offset >= U32_LIMIT,
                ..e
            };
            local_header(&mut w, &e)?;
            w.write_all(header)?;
            for_each_chunk(&a.data, |bytes| w.write_all(bytes))?;
            entries.push(e);
        }
        central_directory(&mut w, &entries, force_zip64)
    })
}

fn descr(d: &NpzData) -> &'static str {
    match d {
        NpzData::F32(_) => f32::DESCR,
        NpzData::F64(_) => f64::DESCR,
        NpzData::I32(_) => i32::DESCR,
        NpzData::I64(_) => i64::DESCR,
        NpzData::U8(_) => u8::DESCR,
    }
}

fn data_len(d: &NpzData) -> usize {
    match d {
        NpzData::F32(v) => v.len(),
        NpzData::F64(v) => v.len(),
        NpzData::I32(v) => v.len(),
        NpzData::I64(v) => v.len(),
        NpzData::U8(v) => v.len(),
    }
}

fn data_bytes(d: &NpzData) -> u64 {
    let size = match d {
        NpzData::F32(_) => f32::SIZE,
        NpzData::F64(_) => f64::SIZE,
        NpzData::I32(_) => i32::SIZE,
        NpzData::I64(_) => i64::SIZE,
        NpzData::U8(_) => u8::SIZE,
    };
    data_len(d) as u64 * size as u64
}

/// Call `f` on the little-endian bytes of the values, a chunk at a time.
fn for_each_chunk(
    d: &NpzData,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    fn go<T: Element>(
        v: &[T],
        f: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(CHUNK_VALUES * T::SIZE);
        for chunk in v.chunks(CHUNK_VALUES) {
            buf.clear();
            for &x in chunk {
                x.put_le(&mut buf);
            }
            f(&buf)?;
        }
        Ok(())
    }
    match d {
        NpzData::F32(v) => go(v, &mut f),
        NpzData::F64(v) => go(v, &mut f),
        NpzData::I32(v) => go(v, &mut f),
        NpzData::I64(v) => go(v, &mut f),
        NpzData::U8(v) => v.chunks(CHUNK_VALUES * 8).try_for_each(&mut f),
    }
}

/// A writer that counts the bytes written, for the offsets in the central directory.
struct Counting<'w> {
    inner: &'w mut dyn Write,
    at: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.at += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn u16le(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn u32le(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn u64le(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
/// `v` as a 32-bit field, or the ZIP64 marker.
fn field32(v: u64, zip64: bool) -> u32 {
    if zip64 { u32::MAX } else { v as u32 }
}

/// The fields shared by the local and central headers, from "version needed" to the name length.
fn common_fields(b: &mut Vec<u8>, e: &Entry) {
    u16le(
        b,
        if e.zip64 {
            VERSION_ZIP64
        } else {
            VERSION_STORED
        },
    );
    u16le(b, 0); // flags
    u16le(b, 0); // method: stored
    u16le(b, 0); // time 00:00
    u16le(b, DOS_DATE);
    u32le(b, e.crc);
    u32le(b, field32(e.size, e.zip64)); // compressed size
    u32le(b, field32(e.size, e.zip64)); // uncompressed size
    u16le(b, e.name.len() as u16);
}

fn local_header(w: &mut dyn Write, e: &Entry) -> std::io::Result<()> {
    let mut b = Vec::with_capacity(64 + e.name.len());
    u32le(&mut b, LOCAL_SIG);
    common_fields(&mut b, e);
    u16le(&mut b, if e.zip64 { 20 } else { 0 }); // extra length
    b.extend_from_slice(&e.name);
    if e.zip64 {
        u16le(&mut b, ZIP64_EXTRA_ID);
        u16le(&mut b, 16);
        u64le(&mut b, e.size);
        u64le(&mut b, e.size);
    }
    w.write_all(&b)
}

fn central_directory(
    w: &mut Counting,
    entries: &[Entry],
    force_zip64: bool,
) -> std::io::Result<()> {
    let start = w.at;
    let mut b = Vec::new();
    for e in entries {
        u32le(&mut b, CENTRAL_SIG);
        u16le(
            &mut b,
            if e.zip64 {
                VERSION_ZIP64
            } else {
                VERSION_STORED
            },
        ); // made by (MS-DOS)
        common_fields(&mut b, e);
        u16le(&mut b, if e.zip64 { 28 } else { 0 }); // extra length
        u16le(&mut b, 0); // comment length
        u16le(&mut b, 0); // disk number start
        u16le(&mut b, 0); // internal attributes
        u32le(&mut b, 0); // external attributes
        u32le(&mut b, field32(e.offset, e.zip64));
        b.extend_from_slice(&e.name);
        if e.zip64 {
            u16le(&mut b, ZIP64_EXTRA_ID);
            u16le(&mut b, 24);
            u64le(&mut b, e.size);
            u64le(&mut b, e.size);
            u64le(&mut b, e.offset);
        }
    }
    let size = b.len() as u64;
    let n = entries.len() as u64;
    let zip64 = force_zip64 || start >= U32_LIMIT || size >= U32_LIMIT || n >= 0xFFFF;
    if zip64 {
        let end64 = start + size;
        u32le(&mut b, END64_SIG);
        u64le(&mut b, 44); // size of the rest of this record
        u16le(&mut b, VERSION_ZIP64);
        u16le(&mut b, VERSION_ZIP64);
        u32le(&mut b, 0); // this disk
        u32le(&mut b, 0); // disk of the central directory
        u64le(&mut b, n);
        u64le(&mut b, n);
        u64le(&mut b, size);
        u64le(&mut b, start);
        u32le(&mut b, LOCATOR64_SIG);
        u32le(&mut b, 0);
        u64le(&mut b, end64);
        u32le(&mut b, 1); // total disks
    }
    u32le(&mut b, END_SIG);
    u16le(&mut b, 0);
    u16le(&mut b, 0);
    let n16 = if zip64 { u16::MAX } else { n as u16 };
    u16le(&mut b, n16);
    u16le(&mut b, n16);
    u32le(&mut b, field32(size, zip64));
    u32le(&mut b, field32(start, zip64));
    u16le(&mut b, 0); // comment length
    w.write_all(&b)
}
