//! VTK XML image data (`.vti`) for ParaView: a regular 3-D grid with arrays on its cells and on
//! its points.
//!
//! File layout (VTK XML file formats, "ImageData" with a zlib-compressed appended section):
//!
//! ```text
//! <?xml version="1.0"?>
//! <VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64"
//!          compressor="vtkZLibDataCompressor">
//!   <ImageData WholeExtent="0 nx 0 ny 0 nz" Origin="x y z" Spacing="dx dy dz">
//!     <FieldData> <DataArray type="String" Name=".." NumberOfTuples="1" format="ascii"> .. </DataArray> ... </FieldData>
//!     <Piece Extent="0 nx 0 ny 0 nz">
//!       <PointData> <DataArray type=".." Name=".." NumberOfComponents=".." format="appended" offset=".."/> ... </PointData>
//!       <CellData> ... </CellData>
//!     </Piece>
//!   </ImageData>
//!   <AppendedData encoding="raw">
//!    _[header][zlib blocks][header][zlib blocks]...
//!   </AppendedData>
//! </VTKFile>
//! ```
//!
//! Each array's `offset` counts bytes from the one after the `_` to its header. The header is
//! VTK's compression header in UInt64: the number of blocks, the uncompressed block size
//! ([`BLOCK_BYTES`]), the uncompressed size of the last block when it is partial (else 0), and
//! the compressed size of each block; then each block's bytes as a zlib stream.
//!
//! `field_data` (whole-dataset metadata such as units and the CRS) is written as VTK string
//! arrays of one tuple each in ASCII form (the characters' codes, then 0), which ParaView shows
//! under "Field Data" and `vtkImageData.GetFieldData()` returns. Values are
//! little-endian whatever the host. The image has `nx x ny x nz` cells of `Spacing` metres and
//! `(nx+1)(ny+1)(nz+1)` points, the first point at `Origin`; point `(i, j, k)` is at
//! `origin + (i dx, j dy, k dz)`. Arrays are in VTK order, x fastest, then y, then z:
//! the value of cell (or point) `(i, j, k)` is at index `i + nx * (j + ny * k)` (with
//! `nx + 1`, `ny + 1` for points); a 3-component array holds the three components of each
//! tuple together (`u0 v0 w0 u1 v1 w1 ...`).
//!
//! A dimension of zero cells makes a flat image (e.g. a 2-D raster with `nz = 0`): as in VTK,
//! such a dimension counts as one cell layer, so `[nx, ny, 0]` has `nx * ny` cells and
//! `(nx+1)(ny+1)` points.
//!
//! Note that geofield's 2-D grids count rows down from the north edge, while VTK's `j` index
//! grows with y (northwards): write a raster's rows in reverse order, with the origin at its
//! south-west corner `(x_min_m, y_min_m)`.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::ZlibEncoder;
use rayon::prelude::*;

use crate::IoError;
use crate::atomic::write_atomic;
use crate::raster_out::format_f64;

/// One array of values, borrowed from the caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VtkArray<'a> {
    /// Unsigned bytes (VTK `UInt8`), one component.
    U8(&'a [u8]),
    /// 32-bit integers (VTK `Int32`), one component.
    I32(&'a [i32]),
    /// 32-bit floats (VTK `Float32`), one component.
    F32(&'a [f32]),
    /// 64-bit floats (VTK `Float64`), one component.
    F64(&'a [f64]),
    /// 3-component vectors of 32-bit floats (e.g. wind velocity), `x y z` per tuple.
    F32x3(&'a [f32]),
    /// 3-component vectors of 64-bit floats, `x y z` per tuple.
    F64x3(&'a [f64]),
}

impl<'a> VtkArray<'a> {
    /// Components per tuple (1 or 3).
    pub fn components(&self) -> usize {
        match self {
            VtkArray::F32x3(_) | VtkArray::F64x3(_) => 3,
            _ => 1,
        }
    }

    /// Number of values (tuples times components).
    pub fn len(&self) -> usize {
        match self {
            VtkArray::U8(v) => v.len(),
            VtkArray::I32(v) => v.len(),
            VtkArray::F32(v) | VtkArray::F32x3(v) => v.len(),
            VtkArray::F64(v) | VtkArray::F64x3(v) => v.len(),
        }
    }

    /// True when the array holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The VTK type name.
    fn vtk_type(&self) -> &'static str {
        match self {
            VtkArray::U8(_) => "UInt8",
            VtkArray::I32(_) => "Int32",
            VtkArray::F32(_) | VtkArray::F32x3(_) => "Float32",
            VtkArray::F64(_) | VtkArray::F64x3(_) => "Float64",
        }
    }

    /// Bytes per value.
    fn value_bytes(&self) -> usize {
        match self {
            VtkArray::U8(_) => 1,
            VtkArray::I32(_) | VtkArray::F32(_) | VtkArray::F32x3(_) => 4,
            VtkArray::F64(_) | VtkArray::F64x3(_) => 8,
        }
    }

    /// The values in `range` (of values, not tuples), as an array of the same kind.
    fn slice(&self, range: std::ops::Range<usize>) -> VtkArray<'a> {
        match *self {
            VtkArray::U8(v) => VtkArray::U8(&v[range]),
            VtkArray::I32(v) => VtkArray::I32(&v[range]),
            VtkArray::F32(v) => VtkArray::F32(&v[range]),
            VtkArray::F64(v) => VtkArray::F64(&v[range]),
            VtkArray::F32x3(v) => VtkArray::F32x3(&v[range]),
            VtkArray::F64x3(v) => VtkArray::F64x3(&v[range]),
        }
    }

    /// Write the values little-endian.
    fn write_le(&self, w: &mut dyn Write) -> std::io::Result<()> {
        match self {
            VtkArray::U8(v) => w.write_all(v),
            VtkArray::I32(v) => write_chunked(w, v, |x| x.to_le_bytes()),
            VtkArray::F32(v) | VtkArray::F32x3(v) => write_chunked(w, v, |x| x.to_le_bytes()),
            VtkArray::F64(v) | VtkArray::F64x3(v) => write_chunked(w, v, |x| x.to_le_bytes()),
        }
    }
}

/// Uncompressed size of each compressed block of an array (VTK's own default is 32 KiB).
pub const BLOCK_BYTES: usize = 1 << 16;

/// Values per chunk converted to bytes before writing.
const CHUNK_VALUES: usize = 8192;

/// Write `values` as bytes through a small buffer (no copy of the whole array).
pub(crate) fn write_chunked<T: Copy, const N: usize>(
    w: &mut dyn Write,
    values: &[T],
    bytes: impl Fn(T) -> [u8; N],
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK_VALUES * N);
    for chunk in values.chunks(CHUNK_VALUES) {
        buf.clear();
        for &v in chunk {
            buf.extend_from_slice(&bytes(v));
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

/// A regular grid of `cells[0] x cells[1] x cells[2]` cells with named arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct VtkImage<'a> {
    /// World position of point (0, 0, 0), in metres.
    pub origin: [f64; 3],
    /// Cell size along x, y and z, in metres (finite and positive).
    pub spacing: [f64; 3],
    /// Cells along x, y and z (nx, ny, nz).
    pub cells: [usize; 3],
    /// Arrays with one tuple per cell, index `i + nx * (j + ny * k)`.
    pub cell_data: Vec<(String, VtkArray<'a>)>,
    /// Arrays with one tuple per point (`(nx+1)(ny+1)(nz+1)`), index
    /// `i + (nx+1) * (j + (ny+1) * k)`.
    pub point_data: Vec<(String, VtkArray<'a>)>,
    /// Whole-dataset text items (name, value), e.g. `("crs", "EPSG:32633")`, `("units_speed",
    /// "m s-1")`, written as one-tuple string arrays in `<FieldData>`.
    pub field_data: Vec<(String, String)>,
}

impl VtkImage<'_> {
    /// Number of cells (a dimension of zero cells counts as one layer, as in VTK); `None` on
    /// overflow.
    pub fn n_cells(&self) -> Option<usize> {
        self.cells
            .iter()
            .try_fold(1usize, |n, &c| n.checked_mul(c.max(1)))
    }

    /// Number of points; `None` on overflow.
    pub fn n_points(&self) -> Option<usize> {
        self.cells.iter().try_fold(1usize, |n, &c| {
            c.checked_add(1).and_then(|c1| n.checked_mul(c1))
        })
    }
}

/// Write `image` as VTK XML image data (`.vti`) at `path`, written atomically. Errors name the
/// array whose length does not match the grid, or the bad origin or spacing.
pub fn write_vti(path: &Path, image: &VtkImage) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    if image.origin.iter().any(|v| !v.is_finite()) {
        return Err(invalid(format!(
            "the VTK image origin {:?} is not finite",
            image.origin
        )));
    }
    if image.spacing.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(invalid(format!(
            "the VTK image spacing {:?} must be finite and positive",
            image.spacing
        )));
    }
    let [nx, ny, nz] = image.cells;
    let too_large = || {
        invalid(format!(
            "a VTK image of {nx} x {ny} x {nz} cells is too large"
        ))
    };
    let n_cells = image.n_cells().ok_or_else(too_large)?;
    let n_points = image.n_points().ok_or_else(too_large)?;

    // Check every array, compress it and lay out the appended section.
    let sections = [
        ("PointData", "point", &image.point_data, n_points),
        ("CellData", "cell", &image.cell_data, n_cells),
    ];
    let mut offset: u64 = 0;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut xml = String::new();
    xml.push_str("<?xml version=\"1.0\"?>\n");
    xml.push_str(
        "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
         header_type=\"UInt64\" compressor=\"vtkZLibDataCompressor\">\n",
    );
    let extent = format!("0 {nx} 0 {ny} 0 {nz}");
    let triple = |v: [f64; 3]| v.map(format_f64).join(" ");
    xml.push_str(&format!(
        "  <ImageData WholeExtent=\"{extent}\" Origin=\"{}\" Spacing=\"{}\">\n",
        triple(image.origin),
        triple(image.spacing)
    ));
    if !image.field_data.is_empty() {
        xml.push_str("    <FieldData>\n");
        for (name, value) in &image.field_data {
            if name.is_empty() {
                return Err(invalid("a VTK field data item has an empty name".into()));
            }
            let mut codes: Vec<String> = value
                .bytes()
                .filter(|&b| b != 0)
                .map(|b| b.to_string())
                .collect();
            codes.push("0".into());
            xml.push_str(&format!(
                "      <DataArray type=\"String\" Name=\"{}\" NumberOfTuples=\"1\" \
                 format=\"ascii\">\n        {}\n      </DataArray>\n",
                escape(name),
                codes.join(" ")
            ));
        }
        xml.push_str("    </FieldData>\n");
    }
    xml.push_str(&format!("    <Piece Extent=\"{extent}\">\n"));
    for (tag, kind, arrays, tuples) in sections {
        let mut seen: Vec<&str> = Vec::with_capacity(arrays.len());
        for (name, array) in arrays.iter() {
            if name.is_empty() {
                return Err(invalid(format!("a VTK {kind} array has an empty name")));
            }
            if seen.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "two VTK {kind} arrays are named \"{name}\""
                )));
            }
            seen.push(name);
            let components = array.components();
            let expected = tuples.checked_mul(components).ok_or_else(too_large)?;
            if array.len() != expected {
                let per = if components == 1 {
                    String::new()
                } else {
                    format!(" with {components} components each")
                };
                return Err(invalid(format!(
                    "VTK {kind} array \"{name}\" has {} values but the {nx} x {ny} x {nz} cell \
                     image has {tuples} {kind}s, which need {expected}{per}",
                    array.len()
                )));
            }
        }
        let first = |components: usize| {
            arrays
                .iter()
                .find(|(_, a)| a.components() == components)
                .map(|(n, _)| escape(n))
        };
        let mut attrs = String::new();
        if let Some(n) = first(1) {
            attrs.push_str(&format!(" Scalars=\"{n}\""));
        }
        if let Some(n) = first(3) {
            attrs.push_str(&format!(" Vectors=\"{n}\""));
        }
        xml.push_str(&format!("      <{tag}{attrs}>\n"));
        for (name, array) in arrays.iter() {
            xml.push_str(&format!(
                "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" \
                 format=\"appended\" offset=\"{offset}\"/>\n",
                array.vtk_type(),
                escape(name),
                array.components()
            ));
            let block =
                compress(array).map_err(|e| invalid(format!("VTK array \"{name}\": {e}")))?;
            offset = offset
                .checked_add(block.len() as u64)
                .ok_or_else(too_large)?;
            blocks.push(block);
        }
        xml.push_str(&format!("      </{tag}>\n"));
    }
    xml.push_str("    </Piece>\n  </ImageData>\n  <AppendedData encoding=\"raw\">\n   _");

    write_atomic(path, |w| {
        w.write_all(xml.as_bytes())?;
        for b in &blocks {
            w.write_all(b)?;
        }
        w.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
    })
}

/// An array as VTK's compressed form: the UInt64 header (block count, block size, partial
/// last block size, compressed sizes) followed by the zlib stream of each block.
/// Blocks are compressed in parallel, each from its own slice of the values (no copy of the
/// whole array).
fn compress(array: &VtkArray) -> std::io::Result<Vec<u8>> {
    // BLOCK_BYTES is a multiple of every value size, so blocks hold whole values.
    let per_block = BLOCK_BYTES / array.value_bytes();
    let n_blocks = array.len().div_ceil(per_block);
    let blocks: Vec<Vec<u8>> = (0..n_blocks)
        .into_par_iter()
        .map(|b| {
            let part = array.slice(b * per_block..((b + 1) * per_block).min(array.len()));
            let mut raw = Vec::with_capacity(BLOCK_BYTES);
            part.write_le(&mut raw)?;
            let mut enc = ZlibEncoder::new(Vec::new(), Compression::default());
            enc.write_all(&raw)?;
            enc.finish()
        })
        .collect::<std::io::Result<_>>()?;
    let mut out = Vec::new();
    let raw_len = array.len() * array.value_bytes();
    let header = [
        blocks.len() as u64,
        BLOCK_BYTES as u64,
        (raw_len % BLOCK_BYTES) as u64,
    ];
    for v in header
        .into_iter()
        .chain(blocks.iter().map(|b| b.len() as u64))
    {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for b in &blocks {
        out.extend_from_slice(b);
    }
    Ok(out)
}

/// `text` with the XML special characters escaped, for an attribute value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cells_and_points_like_vtk() {
        let image = |cells| VtkImage {
            origin: [0.0; 3],
            spacing: [1.0; 3],
            cells,
            cell_data: vec![],
            point_data: vec![],
            field_data: vec![],
        };
        assert_eq!(image([4, 3, 2]).n_cells(), Some(24));
        assert_eq!(image([4, 3, 2]).n_points(), Some(60));
        // A flat image: one layer of cells, one layer of points.
        assert_eq!(image([4, 3, 0]).n_cells(), Some(12));
        assert_eq!(image([4, 3, 0]).n_points(), Some(20));
        assert_eq!(image([usize::MAX, 2, 1]).n_points(), None);
        assert_eq!(image([usize::MAX, 2, 1]).n_cells(), None);
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(escape("speed (m/s)"), "speed (m/s)");
    }
}
