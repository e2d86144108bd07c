//! Streaming a NetCDF variable in tiles of whole rows, time steps outer.
//!
//! A variable of dimensions `(time, y, rest…)` is read in tiles of `k` time
//! steps × `h` rows of `y` × every value of the remaining dimensions, with
//! one `nc_get_vara`-equivalent call per tile. The tiles visit the time
//! steps in groups of `k` and, inside a group, the row bands in order, so a
//! consumer that folds each cell (or each time step) in order sees its
//! values in file order.
//!
//! The tile shape follows the file's storage:
//! * **contiguous** variables (NetCDF-3, and NetCDF-4 without chunking):
//!   each time step of a tile is one contiguous run of at least
//!   [`BLOCK_BYTES`] (so HDF5 copies it straight into the tile instead of
//!   going through its 64 KiB sieve buffer), and a tile holds at most about
//!   [`TILE_BYTES`] (so it is still in the core's L2 cache when the kernel
//!   reads it) and [`MAX_STEPS`] time steps;
//! * **chunked** variables (NetCDF-4 chunking, usually with compression):
//!   a tile covers whole chunks — `k` is the chunk's time extent and `h` a
//!   multiple of its row extent — so every chunk is read and decompressed
//!   once, whatever the chunk cache holds, as long as one band of chunks
//!   fits in [`CHUNK_TILE_MAX_BYTES`]; larger chunks fall back to the
//!   contiguous shape.
//!
//! Memory: one tile buffer, reused for every tile, of at most
//! `TILE_BYTES + BLOCK_BYTES` bytes for a contiguous variable (or one row —
//! every value of the dimensions after the second — when a row is larger),
//! and at most [`CHUNK_TILE_MAX_BYTES`] for a chunked one; never more
//! whatever the number of time steps.

use netcdf::{Extent, NcTypeDescriptor, Variable};

/// Bytes of one time step's contiguous run in a tile, at least: twice
/// HDF5's default sieve buffer (64 KiB), below which contiguous reads are
/// staged through it (one more copy).
pub(crate) const BLOCK_BYTES: usize = 128 << 10;
/// Bytes of a tile of a contiguous variable, about: below the 1 MiB L2
/// cache of a core, so the kernel reads what the library just wrote there.
pub(crate) const TILE_BYTES: usize = 768 << 10;
/// Time steps of a tile of a contiguous variable, at most.
pub(crate) const MAX_STEPS: usize = 16;
/// Time steps of a tile of a contiguous variable are a multiple of this
/// when there are more (kernels sum this many steps side by side).
pub(crate) const STEP_MULTIPLE: usize = 4;
/// A band of chunks (chunk time extent × chunk rows × the whole rest) is
/// one tile when it takes at most this many bytes.
pub(crate) const CHUNK_TILE_MAX_BYTES: usize = 64 << 20;

/// The tile shape of a variable: `nt` steps of `ny` rows of `row` values,
/// read `k` steps × `h` rows at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tiling {
    /// Length of the first dimension (time).
    pub nt: usize,
    /// Length of the second dimension (1 for a 1-D variable).
    pub ny: usize,
    /// Values per row: the product of the dimensions after the second.
    pub row: usize,
    /// Time steps per tile.
    pub k: usize,
    /// Rows per tile.
    pub h: usize,
}

impl Tiling {
    /// The tiling of `var` read as values of `value_bytes` bytes each.
    pub fn of(var: &Variable, value_bytes: usize) -> Self {
        let dims = var.dimensions();
        let nt = dims.first().map(|d| d.len()).unwrap_or(0);
        let ny = if dims.len() >= 2 { dims[1].len() } else { 1 };
        let row: usize = dims.iter().skip(2).map(|d| d.len()).product();
        let row_bytes = (row * value_bytes).max(1);
        let chunks = var.chunking().ok().flatten();
        if let Some(ch) = chunks.filter(|c| c.len() == dims.len() && !c.is_empty()) {
            let ct = ch[0].max(1);
            let cy = if dims.len() >= 2 { ch[1].max(1) } else { 1 };
            let band = ct * cy * row_bytes;
            if band <= CHUNK_TILE_MAX_BYTES {
                // As many chunk rows as fit in the contiguous tile size.
                let m = (TILE_BYTES / band).max(1);
                return Self {
                    nt,
                    ny,
                    row,
                    k: ct.clamp(1, nt.max(1)),
                    h: (cy * m).clamp(1, ny.max(1)),
                };
            }
        }
        let h = BLOCK_BYTES.div_ceil(row_bytes).clamp(1, ny.max(1));
        let mut k = (TILE_BYTES / (h * row_bytes)).clamp(1, MAX_STEPS);
        if k > STEP_MULTIPLE {
            k -= k % STEP_MULTIPLE;
        }
        let k = k.min(nt.max(1));
        Self { nt, ny, row, k, h }
    }

    /// Values of one time step.
    pub fn cells(&self) -> usize {
        self.ny * self.row
    }

    /// Values of the largest tile.
    pub fn tile_values(&self) -> usize {
        self.k * self.h * self.row
    }
}

/// One tile: time steps `t0..t0 + k`, cells `c0..c0 + cells` of each step
/// (whole rows), stored step after step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tile {
    /// First time step.
    pub t0: usize,
    /// Time steps.
    pub k: usize,
    /// First cell of each step (row start × row length).
    pub c0: usize,
    /// Cells of each step.
    pub cells: usize,
}

/// Reads `var` tile by tile into one reused buffer of `T` (converted by
/// the library when the file holds another type) and calls `f` with each
/// tile, time-step groups outer and row bands inner.
pub(crate) fn for_each_tile<T: NcTypeDescriptor + Copy + Default>(
    var: &Variable,
    tiling: &Tiling,
    mut f: impl FnMut(&Tile, &[T]),
) -> Result<(), String> {
    let ndims = var.dimensions().len();
    let mut buf = vec![T::default(); tiling.tile_values()];
    let mut t0 = 0;
    while t0 < tiling.nt {
        let k = tiling.k.min(tiling.nt - t0);
        let mut y0 = 0;
        while y0 < tiling.ny {
            let h = tiling.h.min(tiling.ny - y0);
            let mut ext: Vec<Extent> = vec![(t0..t0 + k).into()];
            if ndims >= 2 {
                ext.push((y0..y0 + h).into());
            }
            for _ in 2..ndims {
                ext.push((..).into());
            }
            let cells = h * tiling.row;
            let raw = &mut buf[..k * cells];
            var.get_values_into(raw, ext)
                .map_err(|e| format!("NetCDF `{}`[{t0}..{}]: {e}", var.name(), t0 + k))?;
            f(
                &Tile {
                    t0,
                    k,
                    c0: y0 * tiling.row,
                    cells,
                },
                raw,
            );
            y0 += h;
        }
        t0 += k;
    }
    Ok(())
}
