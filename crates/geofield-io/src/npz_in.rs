//! Reading `.npz` archives back: stored (uncompressed) members only, as `numpy.savez` and
//! [`write_npz`](crate::npz::write_npz) write them; compressed members are refused with a
//! message. ZIP64 records are followed. See [`crate::npz`] for the layout.

use std::path::Path;

use crate::IoError;
use crate::npy::{NpyArray, parse_npy};
use crate::npz::{
    CENTRAL_SIG, END_SIG, END64_SIG, LOCAL_SIG, LOCATOR64_SIG, U32_LIMIT, ZIP64_EXTRA_ID,
};

/// Read the arrays of a stored (uncompressed) `.npz` archive, in directory order, with the
/// `.npy` suffix removed from the names.
pub fn read_npz(path: &Path) -> Result<Vec<(String, NpyArray)>, IoError> {
    let bytes = std::fs::read(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| IoError::BadNpy {
        path: path.to_path_buf(),
        reason,
    };
    let le16 = |at: usize| -> Option<u64> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?) as u64)
    };
    let le32 = |at: usize| -> Option<u64> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as u64)
    };
    let le64 = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    let truncated = || bad("the ZIP structure is cut short or inconsistent".into());
    // The end of central directory record has no comment when written by numpy or us; search
    // back over a possible comment anyway.
    let end = (0..=bytes.len().saturating_sub(22))
        .rev()
        .take(65_557)
        .find(|&i| le32(i) == Some(END_SIG as u64))
        .ok_or_else(|| bad("not a ZIP archive (no end of central directory record)".into()))?;
    let (mut n, mut at) = (
        le16(end + 10).ok_or_else(truncated)?,
        le32(end + 16).ok_or_else(truncated)?,
    );
    if (n == 0xFFFF || at == U32_LIMIT) && end >= 20 && le32(end - 20) == Some(LOCATOR64_SIG as u64)
    {
        let e64 = le64(end - 12).ok_or_else(truncated)? as usize;
        if le32(e64) != Some(END64_SIG as u64) {
            return Err(truncated());
        }
        n = le64(e64 + 32).ok_or_else(truncated)?;
        at = le64(e64 + 48).ok_or_else(truncated)?;
    }
    let mut out = Vec::new();
    let mut p = at as usize;
    for _ in 0..n {
        if le32(p) != Some(CENTRAL_SIG as u64) {
            return Err(truncated());
        }
        let method = le16(p + 10).ok_or_else(truncated)?;
        let mut size = le32(p + 24).ok_or_else(truncated)?;
        let name_len = le16(p + 28).ok_or_else(truncated)? as usize;
        let extra_len = le16(p + 30).ok_or_else(truncated)? as usize;
        let comment_len = le16(p + 32).ok_or_else(truncated)? as usize;
        let mut offset = le32(p + 42).ok_or_else(truncated)?;
        let name = bytes.get(p + 46..p + 46 + name_len).ok_or_else(truncated)?;
        let name = String::from_utf8_lossy(name).into_owned();
        // ZIP64 extra: the 64-bit values of the fields set to 0xFFFFFFFF, in order.
        let mut x = p + 46 + name_len;
        let x_end = x + extra_len;
        while x + 4 <= x_end {
            let (id, len) = (
                le16(x).ok_or_else(truncated)?,
                le16(x + 2).ok_or_else(truncated)? as usize,
            );
            if id == ZIP64_EXTRA_ID as u64 {
                let mut f = x + 4;
                if size == U32_LIMIT {
                    size = le64(f).ok_or_else(truncated)?; // uncompressed
                    f += 8;
                    f += 8; // compressed (equal for stored members)
                }
                if offset == U32_LIMIT {
                    offset = le64(f).ok_or_else(truncated)?;
                }
            }
            x += 4 + len;
        }
        if method != 0 {
            return Err(bad(format!(
                "member {name} is compressed (method {method}); only stored archives \
                 (numpy.savez) are read here"
            )));
        }
        let lo = offset as usize;
        if le32(lo) != Some(LOCAL_SIG as u64) {
            return Err(truncated());
        }
        let data = lo
            + 30
            + le16(lo + 26).ok_or_else(truncated)? as usize
            + le16(lo + 28).ok_or_else(truncated)? as usize;
        // A member's declared size is checked against the archive's bytes before it is read.
        let end = usize::try_from(size)
            .ok()
            .and_then(|n| data.checked_add(n))
            .ok_or_else(truncated)?;
        let member = bytes.get(data..end).ok_or_else(truncated)?;
        let array = parse_npy(member, &path.join(&name))?;
        out.push((name.trim_end_matches(".npy").to_string(), array));
        p = x_end + comment_len;
    }
    Ok(out)
}
