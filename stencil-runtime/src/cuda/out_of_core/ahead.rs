//! The seam between two out-of-core passes: a measured pass's check kept in host memory as
//! the pass ends, and the next pass's first skewed slab computed before the host has read
//! that check, so that the device does not idle while the host waits for the last
//! write-back and decides whether to go on.

use super::check::{Ahead, CheckHost};
use super::pyramid::Pyramid;
use crate::cuda::device::driver_error;
use crate::engine::{Difference, PassPlan};
use crate::{Real, Result, Stencil};

impl<S: Stencil<N>, T: Real, const N: usize> Pyramid<'_, S, T, N> {
    /// The next pass's first slab, if the pass before computed it for a pass of `len` that
    /// measures as `measure` says; else, where it guessed wrong, its copies up are spent and
    /// go up again once that computation is done.
    pub(super) fn take_ahead(&mut self, len: usize, measure: bool) -> Result<Option<Ahead>> {
        match self.ahead.take() {
            Some(ahead) if ahead.len == len && ahead.measure == measure => Ok(Some(ahead)),
            Some(_) => {
                self.order.forget_prefetched();
                self.up.join(&self.compute).map_err(driver_error("ordering the copies"))?;
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Sets the check's buffers for a measured pass: no non-finite value, no change.
    pub(super) fn reset_check(&mut self) -> Result<()> {
        let flags = vec![u64::MAX; self.slabs.own.len()];
        let compute = &self.compute;
        compute.memcpy_htod(&flags, &mut self.first_bad).map_err(driver_error("resetting the check"))?;
        // A skewed slab's measured level may use fewer blocks than reserved.
        compute.memset_zeros(&mut self.block_max).map_err(driver_error("resetting the check"))?;
        compute.memset_zeros(&mut self.block_sum).map_err(driver_error("resetting the check"))
    }

    /// Copies a measured pass's check into page-locked host memory once its last slab has
    /// run (allocated at the first measured pass).
    pub(super) fn keep_check(&mut self) -> Result<()> {
        if self.check_host.is_none() {
            let ctx = &self.gpu.ctx;
            self.check_host = Some(CheckHost {
                first_bad: CheckHost::pinned(ctx, self.first_bad.len())?,
                block_max: CheckHost::pinned(ctx, self.block_max.len())?,
                block_sum: CheckHost::pinned(ctx, self.block_sum.len())?,
            });
        }
        let kept = self.check_host.as_mut().expect("allocated above");
        let compute = &self.compute;
        let failed = || driver_error("reading the check");
        compute.memcpy_dtoh(&self.first_bad, &mut kept.first_bad).map_err(failed())?;
        compute.memcpy_dtoh(&self.block_max, &mut kept.block_max).map_err(failed())?;
        compute.memcpy_dtoh(&self.block_sum, &mut kept.block_sum).map_err(failed())
    }

    /// The next pass's first skewed slab, computed now on a guess that the next pass is like
    /// `pass` (its length, and whether it is measured), so that the device runs it while the
    /// host waits for this pass's last write-back and reads its check. It writes only its
    /// slot and the skirts' store, which the next pass would write the same way; the next
    /// pass keeps it if the guess holds, and computes it again if not. Its upload is the
    /// one [`prefetch`](Self::prefetch) just enqueued; the second slab's is enqueued after
    /// it (its fields once the compute stream is done with its slot's, its unknowns once this
    /// pass's last write-back has left the slot), so that the first slab's short computation
    /// does not wait for the host to reach the second.
    pub(super) fn compute_ahead(&mut self, host: &[&mut [T]], inputs: &[Option<&[T]>], pass: PassPlan) -> Result<()> {
        let Some(s) = self.slabs.order().next() else { return Ok(()) };
        if !self.slabs.skewed || !self.order.is_prefetched(pass.len) {
            return Ok(());
        }
        let position = self.order.next_position();
        self.order.wait_for_slot(position, &[&self.compute])?;
        if pass.measure {
            // After `keep_check` on the same stream: this pass's check is copied first.
            self.reset_check()?;
        }
        let last = self.skewed_compute(s, position, pass)?;
        self.ahead = Some(Ahead { len: pass.len, measure: pass.measure, last });
        if let Some(second) = self.slabs.order().nth(1) {
            self.upload(second, position + 1, host, inputs, pass.len, true)?;
            self.order.prefetched(pass.len, 2);
        }
        Ok(())
    }

    /// Waits for a checked pass of `len` iterations and reads its measurement (kept by
    /// [`keep_check`](Self::keep_check)), once its write-backs are done.
    pub(super) fn measured(&mut self, len: usize) -> Result<Difference> {
        self.down.synchronize().map_err(driver_error("waiting for the device"))?;
        let kept = self.check_host.as_ref().expect("kept as the measured pass ended");
        let slabs = &self.slabs;
        let bad = kept.first_bad.as_slice().map_err(driver_error("reading the check"))?;
        let first_non_finite = bad
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b != u64::MAX)
            .map(|(s, &b)| {
                let view_start = if slabs.skewed {
                    slabs.level(s, len, len).start - slabs.radius
                } else {
                    slabs.region(s, len, len - 1).start
                };
                b as usize + view_start * slabs.plane_len
            })
            .min();
        let maxes = kept.block_max.as_slice().map_err(driver_error("reading the residual"))?;
        let sums = kept.block_sum.as_slice().map_err(driver_error("reading the residual"))?;
        Ok(Difference {
            max_abs: maxes.iter().copied().fold(0.0, f64::max),
            sum_sq: sums.iter().sum::<f64>(),
            first_non_finite,
        })
    }
}
