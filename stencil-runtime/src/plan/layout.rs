//! Where a stencil's reads land in a grid's memory.

use crate::grid::strides_of;
use crate::{Error, Result, StencilMeta};

/// A stencil laid over a grid shape: flat offsets of its reads and the interior box.
#[derive(Clone, Debug)]
pub(crate) struct Layout<const N: usize> {
    pub shape: [usize; N],
    pub strides: [usize; N],
    /// Width of the boundary layer per axis (the stencil's radius).
    pub radius: [usize; N],
    /// Per read slot: the field it reads and its flat offset in elements.
    pub reads: Vec<(usize, isize)>,
}

impl<const N: usize> Layout<N> {
    /// Checks that every axis has an interior point and computes the flat offsets.
    pub fn new(meta: &'static StencilMeta, shape: [usize; N]) -> Result<Self> {
        debug_assert_eq!(meta.dim, N);
        let strides = strides_of(shape);
        let mut radius = [0usize; N];
        for axis in 0..N {
            radius[axis] = meta.radius[axis];
            let min = 2 * radius[axis] + 1;
            if shape[axis] < min {
                return Err(Error::GridTooSmall {
                    stencil: meta.name,
                    axis,
                    size: shape[axis],
                    radius: radius[axis],
                    min,
                });
            }
        }
        let reads = meta
            .reads
            .iter()
            .map(|r| {
                let flat = (0..N).map(|a| r.offset[a] as isize * strides[a] as isize).sum();
                (r.field, flat)
            })
            .collect();
        Ok(Self { shape, strides, radius, reads })
    }

    /// Points updated by one pass (the interior).
    pub fn interior_points(&self) -> usize {
        (0..N).map(|a| self.shape[a] - 2 * self.radius[a]).product()
    }

    /// Length of one interior row (the last axis without its boundary layer).
    pub fn row_len(&self) -> usize {
        self.shape[N - 1] - 2 * self.radius[N - 1]
    }

    /// Elements in one plane of axis 0 (the whole grid for 1-D).
    pub fn plane_len(&self) -> usize {
        if N == 1 { self.shape[0] } else { self.strides[0] }
    }

    /// Calls `f(offset)` with the in-plane offset of the first interior point of every
    /// interior row of one plane of axis 0 (for 1-D, the single row).
    pub fn for_each_row_in_plane(&self, mut f: impl FnMut(usize)) {
        if N <= 2 {
            f(if N == 1 { self.radius[0] } else { self.radius[1] });
            return;
        }
        // Odometer over axes 1..N-1 (the row's own axis N-1 is walked by the caller).
        let mut index = [0usize; N];
        index[1..N - 1].copy_from_slice(&self.radius[1..N - 1]);
        loop {
            let offset: usize = (1..N - 1).map(|a| index[a] * self.strides[a]).sum::<usize>() + self.radius[N - 1];
            f(offset);
            let mut a = N - 2;
            loop {
                index[a] += 1;
                if index[a] < self.shape[a] - self.radius[a] {
                    break;
                }
                index[a] = self.radius[a];
                if a == 1 {
                    return;
                }
                a -= 1;
            }
        }
    }

    /// In-plane offsets of the first interior point and one past the last interior point
    /// of a plane of axis 0 (for 1-D, of the whole interior).
    pub fn plane_span(&self) -> (usize, usize) {
        let (mut first, mut last) = (usize::MAX, 0);
        self.for_each_row_in_plane(|start| {
            first = first.min(start);
            last = last.max(start + self.row_len());
        });
        (first, last)
    }

    /// Calls `f` with the in-plane range of boundary points between consecutive interior
    /// rows of a plane of axis 0.
    pub fn for_each_gap_in_plane(&self, mut f: impl FnMut(std::ops::Range<usize>)) {
        let mut previous_end: Option<usize> = None;
        self.for_each_row_in_plane(|start| {
            if let Some(end) = previous_end
                && end < start
            {
                f(end..start);
            }
            previous_end = Some(start + self.row_len());
        });
    }
}
