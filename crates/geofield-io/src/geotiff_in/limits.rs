//! What a file may declare: its first directory against its length, the decoder's limits, and
//! the image's and one chunk's decoded size against the file and the memory.

use super::*;

/// Bytes per value of TIFF field type `t` (TIFF 6.0 and BigTIFF; unknown types count 1).
pub(super) fn type_size(t: u16) -> u64 {
    match t {
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => 1,
    }
}

/// Check the first image file directory against the file's length before the decoder reads it:
/// the directory lies in the file, and so does every tag's value (count x type size bytes).
pub(super) fn precheck_first_ifd(file: &mut File, file_len: u64) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut head = [0u8; 16];
    let n = file
        .read(&mut head)
        .map_err(|e| format!("cannot read the header: {e}"))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| format!("cannot read the header: {e}"))?;
    let le = match head.get(..2) {
        Some(b"II") => true,
        Some(b"MM") => false,
        _ => return Ok(()), // not a TIFF: the decoder says so
    };
    let u16_at = |b: &[u8]| {
        let a = [b[0], b[1]];
        if le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        }
    };
    let u32_at = |b: &[u8]| {
        let a = [b[0], b[1], b[2], b[3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let u64_at = |b: &[u8]| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        if le {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        }
    };
    if n < 8 {
        return Ok(());
    }
    let big = u16_at(&head[2..4]) == 43;
    if big && n < 16 {
        return Ok(());
    }
    let ifd = if big {
        u64_at(&head[8..16])
    } else {
        u64::from(u32_at(&head[4..8]))
    };
    let (count_len, entry_len) = if big { (8u64, 20u64) } else { (2, 12) };
    let truncated = || {
        format!(
            "the first image file directory (at byte {ifd}) lies beyond the file's {file_len} bytes"
        )
    };
    if ifd.saturating_add(count_len) > file_len {
        return Err(truncated());
    }
    file.seek(SeekFrom::Start(ifd)).map_err(|e| e.to_string())?;
    let mut cnt = [0u8; 8];
    file.read_exact(&mut cnt[..count_len as usize])
        .map_err(|_| truncated())?;
    let entries = if big {
        u64_at(&cnt)
    } else {
        u64::from(u16_at(&cnt))
    };
    if entries.saturating_mul(entry_len) > file_len - ifd - count_len {
        return Err(format!(
            "the first image file directory declares {entries} entries, more than the file's {file_len} bytes hold"
        ));
    }
    let mut dir = vec![0u8; (entries * entry_len) as usize];
    file.read_exact(&mut dir).map_err(|_| truncated())?;
    for e in dir.chunks_exact(entry_len as usize) {
        let (tag, typ) = (u16_at(&e[0..2]), u16_at(&e[2..4]));
        let count = if big {
            u64_at(&e[4..12])
        } else {
            u64::from(u32_at(&e[4..8]))
        };
        let bytes = count.saturating_mul(type_size(typ));
        if bytes > file_len {
            return Err(format!(
                "tag {tag} declares {count} values of type {typ} ({bytes} bytes), more than the file's {file_len} bytes"
            ));
        }
    }
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    Ok(())
}

/// Most bytes of decoded samples one byte of compressed data can give: deflate's limit is about
/// 1032 (258-byte matches of 2 bits), LZW's with 12-bit codes about 1300, PackBits' 64; 2048
/// covers them all. Uncompressed data gives exactly one byte per byte.
pub(super) const MAX_EXPANSION: u64 = 2048;

/// [`MAX_EXPANSION`] for Zstandard (`Compression` 50000): an RLE block of 4 bytes (3 of header,
/// 1 of value) gives up to 128 KiB, 32768 per byte.
pub(super) const MAX_EXPANSION_ZSTD: u64 = 1 << 15;

/// Most bytes one byte of data compressed by TIFF `Compression` code `c` can give.
fn expansion(c: u16) -> u64 {
    match c {
        1 => 1,
        50000 => MAX_EXPANSION_ZSTD,
        _ => MAX_EXPANSION,
    }
}

/// Decoder limits for a file of `file_len` bytes: a tag's values lie in the file, and a decoded
/// strip or tile holds at most [`MAX_EXPANSION_ZSTD`] (the largest of any codec read) times the
/// file's bytes (plus a 64 KiB floor for tiny files), never more than the memory available.
pub(super) fn file_limits(file_len: u64) -> Limits {
    let memory = usize::try_from(geofield_core::memory::memory_limit_bytes()).unwrap_or(usize::MAX);
    let cap = |n: u64| usize::try_from(n).unwrap_or(usize::MAX).min(memory);
    let mut limits = Limits::default();
    limits.ifd_value_size = cap(file_len.saturating_add(16));
    limits.decoding_buffer_size = cap(file_len
        .saturating_mul(MAX_EXPANSION_ZSTD)
        .saturating_add(1 << 16));
    limits.intermediate_buffer_size = cap(file_len.saturating_add(16));
    limits
}

pub(super) enum SizeError {
    Bad(String),
    Memory(geofield_core::CoreError),
}

/// Refuse, before anything of that size is allocated, an image whose declared samples cannot be
/// in a file of `file_len` bytes (uncompressed: one byte per byte; compressed: at most
/// [`MAX_EXPANSION`] per byte, [`MAX_EXPANSION_ZSTD`] for Zstandard), or whose decoded values (f32 or f64 per sample) would not fit in
/// the available memory.
pub(super) fn check_declared_size<R: std::io::Read + std::io::Seek>(
    dec: &mut Decoder<R>,
    cols: usize,
    rows: usize,
    samples: usize,
    file_len: u64,
) -> Result<(), SizeError> {
    let bits = dec
        .find_tag_unsigned_vec::<u16>(Tag::BitsPerSample)
        .map_err(|e| SizeError::Bad(format!("BitsPerSample (258): {e}")))?
        .and_then(|v| v.into_iter().max())
        .unwrap_or(1);
    let compression = dec
        .find_tag_unsigned::<u16>(Tag::Compression)
        .map_err(|e| SizeError::Bad(format!("Compression (259): {e}")))?
        .unwrap_or(1);
    let values = cols as u128 * rows as u128 * samples as u128;
    let raw_bytes = (values * u128::from(bits)).div_ceil(8);
    let expansion = expansion(compression);
    let can_hold = u128::from(file_len) * u128::from(expansion);
    if raw_bytes > can_hold {
        return Err(SizeError::Bad(format!(
            "the image declares {cols} x {rows} pixels x {samples} sample(s) of {bits} bits =              {raw_bytes} bytes of data (ImageWidth 256 / ImageLength 257 / SamplesPerPixel 277),              more than the file's {file_len} bytes can hold{}; the file is truncated or its              header is corrupt",
            if compression == 1 {
                String::new()
            } else {
                format!(" even compressed (at most {expansion}:1)")
            }
        )));
    }
    // One strip or tile is decoded whole, padding included: a tile declared far larger than the
    // image (a corrupt TileWidth 322 / TileLength 323) must fit what the file can hold too.
    let (cw, ch) = dec.chunk_dimensions();
    // A strip holds at most the image's rows (RowsPerStrip may say "all", 2^32 - 1); a tile is
    // decoded whole.
    let ch = match dec.get_chunk_type() {
        ChunkType::Strip => ch.min(u32::try_from(rows).unwrap_or(u32::MAX)),
        ChunkType::Tile => ch,
    };
    let chunk_raw =
        (u128::from(cw) * u128::from(ch) * samples as u128 * u128::from(bits)).div_ceil(8);
    if chunk_raw > can_hold.max(1 << 16) {
        return Err(SizeError::Bad(format!(
            "one strip or tile declares {cw} x {ch} pixels = {chunk_raw} bytes of data \
             (TileWidth 322 / TileLength 323 / RowsPerStrip 278), more than the file's {file_len} \
             bytes can hold; its header is corrupt"
        )));
    }
    let out_bytes = if bits <= 16 || bits == 32 && is_float(dec) {
        4
    } else {
        8
    };
    geofield_core::check_memory(
        || {
            format!(
                "the image's {cols} x {rows} pixels x {samples} band(s) as {out_bytes}-byte values"
            )
        },
        values * out_bytes,
    )
    .map_err(SizeError::Memory)
}

/// True when SampleFormat (339) says IEEE floating point.
pub(super) fn is_float<R: std::io::Read + std::io::Seek>(dec: &mut Decoder<R>) -> bool {
    matches!(dec.find_tag_unsigned::<u16>(Tag::SampleFormat), Ok(Some(3)))
}
