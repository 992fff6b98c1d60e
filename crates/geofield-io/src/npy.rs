//! NumPy `.npy` arrays (format 1.0, or 2.0 when the header needs more than 64 KiB).
//!
//! Layout (numpy `lib/format.py`): the magic `\x93NUMPY`, major and minor version bytes, the
//! header length (u16 little-endian in 1.0, u32 in 2.0), then an ASCII Python dict literal
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }` padded with spaces and ended
//! by `\n` so that the data starts at a multiple of 64 bytes; then the raw values, little-endian,
//! in C (row-major) order.

use std::path::Path;

use crate::IoError;
use crate::atomic::write_atomic;

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// The data starts at a multiple of this many bytes.
const ALIGN: usize = 64;
/// Values converted per write call when streaming data out.
const CHUNK_VALUES: usize = 1 << 16;

/// The values of an array read by [`read_npy`], in C order.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// `<f4`
    F32(Vec<f32>),
    /// `<f8`
    F64(Vec<f64>),
    /// `<i8`
    I64(Vec<i64>),
    /// `<i4`
    I32(Vec<i32>),
    /// `|u1`
    U8(Vec<u8>),
}

/// An array read from an `.npy` file.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// Length of each axis; `[]` for a scalar.
    pub shape: Vec<usize>,
    /// The values, `shape.iter().product()` of them.
    pub data: NpyData,
}

/// Element types this module reads and writes.
pub(crate) trait Element: Copy {
    const DESCR: &'static str;
    const SIZE: usize;
    fn put_le(self, out: &mut Vec<u8>);
}

macro_rules! element {
    ($t:ty, $descr:literal) => {
        impl Element for $t {
            const DESCR: &'static str = $descr;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
element!(f32, "<f4");
element!(f64, "<f8");
element!(i64, "<i8");
element!(i32, "<i4");
element!(u8, "|u1");

/// Write an f32 array of `shape` (C order) to `path`.
pub fn write_npy_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<(), IoError> {
    write_npy(path, shape, data)
}

/// Write an f64 array of `shape` (C order) to `path`.
pub fn write_npy_f64(path: &Path, shape: &[usize], data: &[f64]) -> Result<(), IoError> {
    write_npy(path, shape, data)
}

/// Write an i64 array of `shape` (C order) to `path`.
pub fn write_npy_i64(path: &Path, shape: &[usize], data: &[i64]) -> Result<(), IoError> {
    write_npy(path, shape, data)
}

fn write_npy<T: Element>(path: &Path, shape: &[usize], data: &[T]) -> Result<(), IoError> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if n != Some(data.len()) {
        return Err(IoError::InvalidOutput {
            path: path.to_path_buf(),
            reason: format!(
                "an array of shape {shape:?} needs {} values but {} were given",
                n.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                data.len()
            ),
        });
    }
    let header = npy_header(T::DESCR, shape);
    write_atomic(path, |w| {
        w.write_all(&header)?;
        let mut buf = Vec::with_capacity(CHUNK_VALUES * T::SIZE);
        for chunk in data.chunks(CHUNK_VALUES) {
            buf.clear();
            for &v in chunk {
                v.put_le(&mut buf);
            }
            w.write_all(&buf)?;
        }
        Ok(())
    })
}

/// The complete header (magic to newline) for an array of `descr` and `shape`.
pub(crate) fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims.join("")),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Version 1.0 has a u16 length after a 10-byte prefix; 2.0 a u32 after a 12-byte prefix.
    let v1_total = (10 + dict.len() + 1).next_multiple_of(ALIGN);
    let (version, prefix) = if v1_total - 10 <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = (prefix + dict.len() + 1).next_multiple_of(ALIGN);
    dict.extend(std::iter::repeat_n(' ', total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    // The lengths fit: version 1 was checked above, and a header over 4 GiB is not produced.
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Read an `.npy` file of dtype `<f4`, `<f8`, `<i8`, `<i4` or `|u1` in C order.
pub fn read_npy(path: &Path) -> Result<NpyArray, IoError> {
    let bytes = std::fs::read(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_npy(&bytes, path)
}

/// Parse the bytes of an `.npy` file; errors name `path` (for an `.npz` member, the archive
/// and member).
pub(crate) fn parse_npy(bytes: &[u8], path: &Path) -> Result<NpyArray, IoError> {
    let bad = |reason: String| IoError::BadNpy {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad(
            "the file does not start with the NPY magic bytes \\x93NUMPY".into(),
        ));
    }
    let (header_len, prefix): (usize, usize) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (usize::try_from(n).unwrap_or(usize::MAX), 12)
        }
        v => {
            return Err(bad(format!(
                "NPY format version {v}.{} is not supported",
                bytes[7]
            )));
        }
    };
    let header = bytes
        .get(prefix..prefix.saturating_add(header_len))
        .ok_or_else(|| bad("the header is cut short; the file is truncated".into()))?;
    let header =
        std::str::from_utf8(header).map_err(|_| bad("the header is not valid text".into()))?;
    let descr = quoted_value(header, "descr").ok_or_else(|| {
        bad(format!(
            "the header has no 'descr' entry: {}",
            header.trim()
        ))
    })?;
    let fortran = value_after(header, "fortran_order")
        .ok_or_else(|| bad("the header has no 'fortran_order' entry".into()))?;
    if fortran.starts_with("True") {
        return Err(bad(
            "the array is in Fortran (column-major) order; save it in C order, e.g. \
             numpy.save(path, numpy.ascontiguousarray(a))"
                .into(),
        ));
    }
    let shape = parse_shape(header).ok_or_else(|| bad("the header has no valid 'shape'".into()))?;
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad(format!("the shape {shape:?} is too large")))?;
    let body = &bytes[prefix + header_len..];
    let size = match descr {
        "|u1" | "<u1" => 1,
        "<f4" | "<i4" => 4,
        "<f8" | "<i8" => 8,
        d if d.starts_with('>') => {
            return Err(bad(format!(
                "big-endian data ({d}) is not supported; convert it with a.astype('<{}')",
                &d[1..]
            )));
        }
        d => {
            return Err(bad(format!(
                "dtype {d:?} is not supported; use one of <f4, <f8, <i4, <i8, |u1"
            )));
        }
    };
    let need = n
        .checked_mul(size)
        .ok_or_else(|| bad("the array is too large".into()))?;
    let body = body.get(..need).ok_or_else(|| {
        bad(format!(
            "the file is truncated: shape {shape:?} needs {need} bytes of data, found {}",
            body.len()
        ))
    })?;
    let data = match descr {
        "<f4" => NpyData::F32(decode(body, f32::from_le_bytes)),
        "<f8" => NpyData::F64(decode(body, f64::from_le_bytes)),
        "<i4" => NpyData::I32(decode(body, i32::from_le_bytes)),
        "|u1" | "<u1" => NpyData::U8(body.to_vec()),
        _ => NpyData::I64(decode(body, i64::from_le_bytes)),
    };
    Ok(NpyArray { shape, data })
}

/// Decode little-endian values of N bytes each.
fn decode<T, const N: usize>(body: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
    body.chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            from(a)
        })
        .collect()
}

/// The text following `'key':` (or `"key":`) in the header dict, leading spaces removed.
fn value_after<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = header[at + key.len() + 2..].trim_start();
    Some(rest.strip_prefix(':')?.trim_start())
}

/// The quoted string value of `key`.
fn quoted_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let rest = value_after(header, key)?;
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &rest[1..];
    Some(&rest[..rest.find(quote)?])
}

/// The `shape` tuple, e.g. `(3, 4)`, `(5,)` or `()`.
fn parse_shape(header: &str) -> Option<Vec<usize>> {
    let rest = value_after(header, "shape")?.strip_prefix('(')?;
    let inner = &rest[..rest.find(')')?];
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_shapes() {
        for (shape, text) in [
            (&[][..], "'shape': (), }"),
            (&[5][..], "'shape': (5,), }"),
            (&[2, 3, 4][..], "'shape': (2, 3, 4), }"),
        ] {
            let h = npy_header("<f4", shape);
            assert_eq!(h.len() % 64, 0);
            let s = std::str::from_utf8(&h[10..]).unwrap();
            assert!(s.contains(text), "{s}");
            assert_eq!(parse_shape(s).unwrap(), shape);
        }
        // A header too long for a u16 length switches to version 2.0.
        let h = npy_header("<f8", &vec![1; 30_000]);
        assert_eq!((h[6], h[7]), (2, 0));
        assert_eq!(h.len() % 64, 0);
        let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        assert_eq!(12 + len, h.len());
    }
}
