//! Which 2-D sweeps the lane kernel runs (`lanes.rs`), and where it finds each read of the
//! point function: its own outputs, the line before's, or a window in shared memory. A point
//! at oriented offset (a, b) from a lane's point is computed a + b steps later, so the lanes
//! run a sweep whose hyperplane is (1, 1) and whose unknown is read at most a line away: new
//! values from the line before only, old ones from the line after only, and the line after
//! only together with the line before.

use super::slope::Slopes;
use crate::ir::Stencil;

/// Steps between two meetings of a compute warp and its helpers. At most 16: the loader's 32
/// lanes load a group's rows of the line before and of the line after, one each.
pub(crate) const GROUP: usize = 16;
/// Groups of rows the loader copies ahead of the compute warp's group.
pub(crate) const LEAD: usize = 4;
/// Lines a lane may own (`LN_LINES`, chosen by the runtime): lane j of a block owns lines
/// j·M … j·M + M − 1 of its 32·M and computes the same row of each in a step, a step behind
/// lane j − 1.
pub(crate) const LINES: [usize; 2] = [1, 2];
/// Rows of the line-before ring in which the receiver puts the line before's rows for the
/// compute warp, each in a tagged 64-bit word per 32 bits (two reals in either precision):
/// the receiver runs at most this many rows ahead.
pub(crate) const EDGE: usize = 256;
/// Window columns a lane's line i takes in a row: lines i, M + i, 2·M + i, … of the block's
/// (lanes 0 … 31) at columns 34·i + 1 … 34·i + 32, so the lanes' skewed reads of a line (row
/// t − j·M − i, column 34·i + 1 + j) fall into 32 different banks for any M; column 0 of
/// the last block of columns is the line before the block's first, column 33 of the first
/// the line after its last.
pub(crate) const COLUMNS: usize = 34;

/// Steps the last lane of a warp runs behind its first (`LN_DEPTH`): lane j is j steps behind
/// lane 0, so a block's lines are one step of the wavefront 31 steps deep.
pub(crate) const DEPTH: usize = 31;

/// Rows of a window's ring: a power of two above the rows in use at once, from the storer's (a
/// group behind lane 31's, DEPTH steps behind lane 0's) to the loader's, LEAD + 1 groups ahead
/// (see the kernel).
pub(crate) const RING: usize = ((LEAD + 2) * GROUP + DEPTH).next_power_of_two();

/// A window's row pitch with `lines` lines a lane.
pub(crate) fn pitch(lines: usize) -> usize {
    COLUMNS * lines
}

/// The largest radius along the walk a lane kernel takes: a window read reaches at most a
/// group of rows before or after the step's row (the DSL's own limit, 8, is within it).
const MAX_WALK_RADIUS: usize = 8;

/// Where the lane kernel finds one read of the point function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// The lane's own output `d` steps ago (the unknown's new value, d rows back).
    History(usize),
    /// The line before at row offset `a ≤ 0`: lane j − 1's output 1 − a steps ago, or lane
    /// 0's line-before ring.
    LineBefore(i64),
    /// A window (index into [`LanePlan::windows`]) at row offset `a` on line offset `b`.
    Window { window: usize, a: i64, b: i64 },
}

/// How a 2-D sweep runs as lanes: its directions, the windows staged in shared memory and
/// where each read of the point function comes from. `None` from [`LanePlan::new`] for a
/// stencil the lanes cannot run (it runs as pencils).
pub(super) struct LanePlan {
    /// Direction signs on the walk axis (stencil axis 0) and the line axis (axis 1).
    pub direction: [i64; 2],
    /// Fields staged in windows: the unknown first (its old values, and its new ones until
    /// the storer stores them), then each read-only field the point function reads.
    pub windows: Vec<usize>,
    /// Rows a window read reaches before and after the step's row.
    pub behind: i64,
    pub ahead: i64,
    /// Rows the line-before reads reach before the step's row.
    pub before: i64,
    /// The lane's outputs kept in registers.
    pub history: usize,
    pub sources: Vec<Source>,
    /// The point function's slopes in the new reads, where it is affine in them (fast mode's
    /// update; `None` else).
    pub slopes: Option<Slopes>,
}

impl LanePlan {
    /// The read slots of the unknown's new values (a lane's own and the line before's), in
    /// the order a step knows them: its own older outputs, its last, then the line before's
    /// (shuffled after the last step's output).
    pub fn new_reads(&self) -> Vec<usize> {
        let mut slots: Vec<(usize, (u8, i64))> = (self.sources.iter().enumerate())
            .filter_map(|(slot, source)| match *source {
                Source::History(d) => Some((slot, (0, -(d as i64)))),
                Source::LineBefore(a) => Some((slot, (1, a))),
                Source::Window { .. } => None,
            })
            .collect();
        slots.sort_by_key(|&(_, order)| order);
        slots.into_iter().map(|(slot, _)| slot).collect()
    }

    pub fn new(s: &Stencil) -> Option<Self> {
        let sweep = s.sweep.as_ref()?;
        if s.dim != 2 || s.is_system() || sweep.hyperplane != [1, 1] {
            return None;
        }
        if s.radius[0] > MAX_WALK_RADIUS || s.radius[1] > 1 {
            return None;
        }
        let direction = [0, 1].map(|k| if sweep.ascending[k] { 1 } else { -1 });
        let windows: Vec<usize> = std::iter::once(s.unknown)
            .chain((0..s.fields.len()).filter(|&f| f != s.unknown && s.reads.iter().any(|r| r.field == f)))
            .collect();
        let mut sources = Vec::new();
        for read in &s.reads {
            let a = read.offset[0] as i64 * direction[0];
            let b = read.offset[1] as i64 * direction[1];
            let window = windows.iter().position(|&f| f == read.field).expect("every read field has a window");
            // The hyperplane (1, 1) puts the unknown's new reads at a + b < 0, its old ones
            // at a + b > 0.
            let new = a + b < 0;
            let source = match b {
                _ if read.field != s.unknown || (a, b) == (0, 0) => Source::Window { window, a, b },
                // New: the own line's earlier rows, or the line before's.
                0 if new => Source::History((-a) as usize),
                -1 if new => Source::LineBefore(a),
                // Old: the own line's later rows, or the line after's (not yet computed).
                0 | 1 if !new => Source::Window { window, a, b },
                // A new read of the line after would reach lane 31 from the next warp, which
                // runs behind it; an old read of the line before would reach lane 0 from the
                // previous warp, which has already overwritten it.
                _ => return None,
            };
            sources.push(source);
        }
        // The line after's old values are read from global memory: only the lag that the line
        // before's reads impose between warps keeps the next warp from storing new ones first.
        let line_after = sources.iter().any(|s| matches!(*s, Source::Window { window: 0, b: 1, .. }));
        if line_after && !sources.iter().any(|s| matches!(s, Source::LineBefore(_))) {
            return None;
        }
        let reach = |f: &dyn Fn(&Source) -> Option<i64>| sources.iter().filter_map(f).max().unwrap_or(0).max(0);
        let behind = reach(&|s| if let Source::Window { a, .. } = s { Some(-a) } else { None });
        let ahead = reach(&|s| if let Source::Window { a, .. } = s { Some(*a) } else { None });
        let before = reach(&|s| if let Source::LineBefore(a) = s { Some(-a) } else { None });
        let history = sources
            .iter()
            .filter_map(|s| match *s {
                Source::History(d) => Some(d),
                Source::LineBefore(a) => Some((1 - a) as usize),
                Source::Window { .. } => None,
            })
            .max()
            .unwrap_or(0)
            .max(1);
        let mut plan = Self { direction, windows, behind, ahead, before, history, sources, slopes: None };
        plan.slopes = Slopes::new(s, &plan.new_reads());
        Some(plan)
    }

    /// Values of a step fast mode computes a group ahead (its parts): the point function with
    /// the new reads at zero, and each slope that varies from point to point; none where the
    /// point function is not affine in the new reads.
    pub fn parts(&self) -> usize {
        self.slopes.as_ref().map_or(0, |slopes| 1 + slopes.varying().iter().filter(|&&v| v).count())
    }

    /// Whether window `window` is read on line offset `side` (−1: column 0, the line before
    /// the warp's first; +1: column 33, the line after its last).
    pub fn reads_side(&self, window: usize, side: i64) -> bool {
        self.sources.iter().any(|s| matches!(*s, Source::Window { window: x, b, .. } if x == window && b == side))
    }

    /// Whether the unknown is read on the line before (its new values pass between lanes).
    pub fn reads_line_before(&self) -> bool {
        self.sources.iter().any(|s| matches!(s, Source::LineBefore(_)))
    }

    /// Rows of a window a group's reads span for one lane.
    fn span(&self) -> usize {
        (self.behind + self.ahead) as usize + GROUP
    }

    /// Reals of a block's shared memory with `lines` lines a lane: its windows, its
    /// line-before ring and fast mode's two groups of parts.
    pub fn block_reals(&self, lines: usize) -> usize {
        self.windows.len() * (RING + self.span()) * pitch(lines) + 2 * EDGE + 2 * self.parts() * GROUP * 32 * lines
    }

    /// The point function's arguments in a compute warp's step of line `m`: a line's line
    /// before is the lane's line m − 1 (at the same row: its output of this step, computed
    /// first, or its history), or for line 0 lane j − 1's last line (shuffled) or, for lane 0,
    /// the ring's.
    pub fn step_args(&self) -> Vec<String> {
        (self.sources.iter())
            .map(|source| match *source {
                Source::History(d) => format!("hist[m][{d}]"),
                Source::LineBefore(a) => {
                    let own = if a == 0 {
                        "v[m > 0 ? m - 1 : 0]".to_string()
                    } else {
                        format!("hist[m > 0 ? m - 1 : 0][{}]", -a)
                    };
                    format!("(m == 0 ? ln_pick(lane == 0, bw[LN_BEFORE + ({a})], up{}) : {own})", -a)
                }
                Source::Window { window, a, b } => format!("{}[m][u + LN_BEHIND + ({a})]", array(window, b)),
            })
            .collect()
    }

    /// The (window, b) pairs the compute warp reads, with the rows each reaches: the lowest
    /// and highest index into its group's array (row t0 − lane − behind + index).
    pub fn window_reads(&self) -> Vec<(usize, i64, i64, i64)> {
        let mut reads: Vec<(usize, i64, i64, i64)> = Vec::new();
        for source in &self.sources {
            if let Source::Window { window, a, b } = *source {
                let (lo, hi) = (self.behind + a, self.behind + (GROUP as i64 - 1) + a);
                match reads.iter_mut().find(|r| (r.0, r.1) == (window, b)) {
                    Some(r) => (r.2, r.3) = (r.2.min(lo), r.3.max(hi)),
                    None => reads.push((window, b, lo, hi)),
                }
            }
        }
        reads
    }
}

/// The array a compute warp holds a window's group of rows of line offset `b` in.
pub(super) fn array(window: usize, b: i64) -> String {
    format!("ln_w{window}_{}", b + 1)
}

/// A read of window `window`'s column of line offset `b` from line `m` (the CUDA variable of
/// the step's line) at `slot` slots past that line's column `column`.
pub(super) fn window_read(column: &str, window: usize, b: i64, slot: &str) -> String {
    format!("{column}[({window} * LN_SLOTS + {slot}) * LN_PITCH + LN_OFF(m, {b})]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tokens: proc_macro2::TokenStream) -> Option<LanePlan> {
        let item = syn::parse2(tokens).expect("parses");
        LanePlan::new(&crate::validate::lower(&item).expect("lowers"))
    }

    #[test]
    fn the_five_point_sweep_reads_its_history_the_line_before_and_two_windows() {
        let p = plan(quote::quote! {
            sweep(+, -) fn at(mut u: Field2, q: Field2) -> Real {
                (u[0, 0] + u[-1, 0] + u[0, 1] + u[1, 0] + u[0, -1] + q[0, 0]) / 6.0
            }
        })
        .expect("a lane kernel");
        assert_eq!(p.direction, [1, -1]);
        assert_eq!(p.windows, [0, 1]);
        assert_eq!(
            p.sources,
            [
                Source::Window { window: 0, a: 0, b: 0 },
                Source::History(1),
                // u[0, 1] on a descending axis 1 is the line before.
                Source::LineBefore(0),
                Source::Window { window: 0, a: 1, b: 0 },
                Source::Window { window: 0, a: 0, b: 1 },
                Source::Window { window: 1, a: 0, b: 0 },
            ]
        );
        assert_eq!((p.behind, p.ahead, p.before, p.history), (0, 1, 0, 1));
        // Affine in its new reads with slopes the same everywhere: one part.
        assert_eq!(p.parts(), 1);
        assert_eq!(p.block_reals(1), 2 * (128 + GROUP + 1) * 34 + 2 * EDGE + 2 * GROUP * 32);
        // Two lines a lane: twice the columns, the same ring (the lanes' skew is the same).
        assert_eq!(p.block_reals(2), 2 * (128 + GROUP + 1) * 68 + 2 * EDGE + 2 * GROUP * 64);
        assert_eq!(p.window_reads(), [(0, 0, 0, 16), (0, 1, 0, 15), (1, 0, 0, 15)]);
    }

    #[test]
    fn a_line_reads_its_lane_s_line_before_at_the_same_row() {
        let p = plan(quote::quote! {
            sweep(+, +) fn back(mut u: Field2) -> Real { (u[0, -1] + u[-1, 0] + u[-1, -1]) / 3.0 }
        })
        .expect("a lane kernel");
        assert_eq!(
            p.step_args(),
            [
                // The line before at the step's row: line m − 1's output of this step (computed first).
                "(m == 0 ? ln_pick(lane == 0, bw[LN_BEFORE + (0)], up0) : v[m > 0 ? m - 1 : 0])",
                "hist[m][1]",
                // A row back: line m − 1's output a step ago; lane j − 1's two steps ago.
                "(m == 0 ? ln_pick(lane == 0, bw[LN_BEFORE + (-1)], up1) : hist[m > 0 ? m - 1 : 0][1])",
            ]
        );
    }

    #[test]
    fn reaches_along_the_walk_set_the_history_and_the_window_span() {
        let p = plan(quote::quote! {
            sweep(-, +) fn far(mut u: Field2, f: Field2) -> Real {
                (u[2, -1] + u[1, 0] + u[-2, 0] + u[-1, 1] + f[1, 1] + f[-2, -1]) / 6.0
            }
        })
        .expect("a lane kernel");
        // Walking down: u[2, −1] is two rows back on the line before, read from lane j − 1's
        // output three steps ago.
        assert_eq!(p.sources[0], Source::LineBefore(-2));
        assert_eq!((p.behind, p.ahead, p.before, p.history), (1, 2, 2, 3));
        assert!(p.reads_side(1, 1) && p.reads_side(1, -1) && p.reads_side(0, 1) && !p.reads_side(0, -1));
    }

    #[test]
    fn sweeps_the_lanes_cannot_run_are_left_to_the_pencils() {
        // The 9-point sweep: u[−1, 1] is new and on the lanes' own step.
        assert!(
            plan(quote::quote! {
                sweep(+, +) fn nine(mut u: Field2) -> Real { (u[-1, 0] + u[0, -1] + u[-1, 1] + u[1, 0]) / 4.0 }
            })
            .is_none()
        );
        // A read two lines away, the line after without the line before (nothing would keep
        // the next warp behind), 3-D, 1-D.
        for tokens in [
            quote::quote! { sweep(+, +) fn wide(mut u: Field2) -> Real { (u[-1, 0] + u[0, -2]) / 2.0 } },
            quote::quote! { sweep(+, +) fn after(mut u: Field2) -> Real { (u[-1, 0] + u[1, 0] + u[0, 1]) / 3.0 } },
            quote::quote! { sweep(+, +, +) fn cube(mut u: Field3) -> Real { (u[-1, 0, 0] + u[0, 0, -1]) / 2.0 } },
            quote::quote! { sweep(+) fn line(mut u: Field1) -> Real { (u[-1] + u[1]) / 2.0 } },
        ] {
            assert!(plan(tokens).is_none());
        }
        // A Jacobi stencil is no sweep.
        assert!(plan(quote::quote! { fn jacobi(mut u: Field2) -> Real { (u[-1, 0] + u[0, 1]) / 2.0 } }).is_none());
    }
}
