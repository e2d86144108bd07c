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
//! Reading and reducing overlap on two threads when there are several
//! tiles and cores ([`for_each_tile`]); the consumer still sees the tiles
//! one at a time and in order.
//!
//! Memory: two tile buffers (one when reading serially), reused for every
//! tile, each of at most `TILE_BYTES + BLOCK_BYTES` bytes for a contiguous variable (or one row —
//! every value of the dimensions after the second — when a row is larger),
//! and at most [`CHUNK_TILE_MAX_BYTES`] for a chunked one; never more
//! whatever the number of time steps.

use netcdf::{Extent, NcTypeDescriptor, Variable};

/// Bytes of one time step's contiguous run in a tile, at least: twice
/// HDF5's default sieve buffer (64 KiB), below which contiguous reads are
/// staged through it (one more copy).
pub(crate) const BLOCK_BYTES: usize = 128 << 10;
/// Bytes of a tile of a contiguous variable, about: below the 1 MiB L2
/// cache of a core, so a serial kernel reads what the library just wrote
/// there (overlapped, the worker's core fetches it from the shared L3).
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

/// Reads `var` tile by tile and calls `f` with each tile, time-step groups
/// outer and row bands inner, `T` converted by the library when the file
/// holds another type.
///
/// With more than one tile and more than one core, reading and reducing
/// overlap: this thread reads (every netCDF/HDF5 call stays on it) into
/// one of two tile buffers while a scoped worker thread runs `f` on the
/// other. The tiles reach `f` one at a time and in the same order as the
/// serial loop, so a fold gives the same bits either way. Memory: two tile
/// buffers instead of one.
pub(crate) fn for_each_tile<T, F>(var: &Variable, tiling: &Tiling, f: F) -> Result<(), String>
where
    T: NcTypeDescriptor + Copy + Default + Send,
    F: FnMut(&Tile, &[T]) + Send,
{
    let several_tiles = tiling.nt > tiling.k || tiling.ny > tiling.h;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if several_tiles && cores > 1 {
        for_each_tile_overlapped(var, tiling, f)
    } else {
        for_each_tile_serial(var, tiling, f)
    }
}

/// The tiles of [`for_each_tile`] in visiting order, each with its first
/// row and its number of rows.
fn tiles(tiling: &Tiling) -> impl Iterator<Item = (Tile, usize, usize)> + '_ {
    (0..tiling.nt).step_by(tiling.k).flat_map(move |t0| {
        let k = tiling.k.min(tiling.nt - t0);
        (0..tiling.ny).step_by(tiling.h).map(move |y0| {
            let h = tiling.h.min(tiling.ny - y0);
            let tile = Tile {
                t0,
                k,
                c0: y0 * tiling.row,
                cells: h * tiling.row,
            };
            (tile, y0, h)
        })
    })
}

/// Reads the tile of `k` steps from `t0` × `h` rows from `y0` into the
/// front of `buf` (one `nc_get_vara`-equivalent call) and returns the
/// filled part.
fn read_tile<'b, T: NcTypeDescriptor + Copy>(
    var: &Variable,
    (tile, y0, h): (Tile, usize, usize),
    buf: &'b mut [T],
) -> Result<&'b [T], String> {
    let ndims = var.dimensions().len();
    let (t0, k) = (tile.t0, tile.k);
    let mut ext: Vec<Extent> = vec![(t0..t0 + k).into()];
    if ndims >= 2 {
        ext.push((y0..y0 + h).into());
    }
    for _ in 2..ndims {
        ext.push((..).into());
    }
    let raw = &mut buf[..k * tile.cells];
    var.get_values_into(&mut *raw, ext)
        .map_err(|e| format!("NetCDF `{}`[{t0}..{}]: {e}", var.name(), t0 + k))?;
    Ok(raw)
}

/// [`for_each_tile`] on this thread alone, into one reused buffer.
fn for_each_tile_serial<T: NcTypeDescriptor + Copy + Default>(
    var: &Variable,
    tiling: &Tiling,
    mut f: impl FnMut(&Tile, &[T]),
) -> Result<(), String> {
    let mut buf = vec![T::default(); tiling.tile_values()];
    for at in tiles(tiling) {
        let raw = read_tile(var, at, &mut buf)?;
        f(&at.0, raw);
    }
    Ok(())
}

/// [`for_each_tile`] with reading on this thread and `f` on a worker: two
/// buffers go round between them through two channels (filled ones to the
/// worker, used ones back), so at most one tile is read ahead.
fn for_each_tile_overlapped<T, F>(var: &Variable, tiling: &Tiling, mut f: F) -> Result<(), String>
where
    T: NcTypeDescriptor + Copy + Default + Send,
    F: FnMut(&Tile, &[T]) + Send,
{
    use std::sync::mpsc::sync_channel;
    let (filled_tx, filled_rx) = sync_channel::<(Tile, Vec<T>)>(2);
    let (used_tx, used_rx) = sync_channel::<Vec<T>>(2);
    for _ in 0..2 {
        used_tx
            .send(vec![T::default(); tiling.tile_values()])
            .map_err(|_| "tile buffer channel closed".to_owned())?;
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for (tile, buf) in filled_rx {
                f(&tile, &buf[..tile.k * tile.cells]);
                // The reader may have stopped (an error): nothing to return to.
                let _ = used_tx.send(buf);
            }
        });
        for at in tiles(tiling) {
            let Ok(mut buf) = used_rx.recv() else {
                return Err("the tile worker stopped".to_owned());
            };
            read_tile(var, at, &mut buf)?;
            if filled_tx.send((at.0, buf)).is_err() {
                return Err("the tile worker stopped".to_owned());
            }
        }
        // Dropping the sender ends the worker's loop; the scope joins it.
        drop(filled_tx);
        Ok(())
    })
}
