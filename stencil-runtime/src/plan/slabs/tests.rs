//! The slabs' geometry: cover, regions, windows, memory.

use super::*;

#[test]
fn skewed_streaming_slabs_hold_their_skirts_and_count_them() {
    let skew = Skew { skewed: true, cycle: 3 };
    let wide = Slabs::new(62, 1, 10, 6, 12).skewing(skew);
    assert!(wide.hold_cycle_skirts(6, 3));
    // Windows reach (height + sub) · r below a slab; a slab sets aside 2 · sub · r planes
    // at each of the ⌈6 / 3⌉ + 1 boundaries a pass may have.
    assert_eq!(wide.window(2, 6), 25 - 9..37);
    assert_eq!(wide.skirt_planes(), 3 * 6);
    // Slabs narrower than 2 · sub · r cannot set their skirts aside.
    assert!(!Slabs::new(62, 1, 10, 6, 5).skewing(skew).hold_cycle_skirts(6, 3));
    // In one process, a pass taller than the lowest slabs: their levels stop at the
    // interior's first plane, or empty there, and below it the skirts are boundary planes.
    let tall = Slabs::new(62, 1, 10, 30, 8).skewing(skew);
    assert_eq!((tall.level(0, 30, 7), tall.level(0, 30, 9), tall.level(1, 30, 12)), (1..2, 1..1, 1..5));
    assert!(tall.hold_cycle_skirts(30, 3));
    // Under a rank the planes below the own ones are ghost planes, not constant.
    let cut = Cut { own: 40..80, planes: 120, radius: 1, plane_len: 10 };
    assert!(!Slabs::over(&cut, 30, 8).skewing(skew).hold_cycle_skirts(30, 3));
    assert!(Slabs::over(&cut, 6, 12).skewing(skew).hold_cycle_skirts(6, 3));
    assert_eq!(Slabs::new(62, 1, 10, 6, 12).skewing(Skew::PLAIN).skirt_planes(), 0);
    // Cycles of one iteration set skirts aside too (the kernel writes its whole view).
    let single = Slabs::new(62, 1, 10, 6, 12).skewing(Skew { skewed: true, cycle: 1 });
    assert_eq!((single.window(2, 6), single.skirt_planes()), (25 - 7..37, 7 * 2));
}

#[test]
fn slabs_cover_the_interior_and_regions_shrink_to_the_slab() {
    let slabs = Slabs::new(20, 1, 6, 3, 5);
    assert_eq!(slabs.own, [1..6, 6..11, 11..16, 16..19]);
    assert_eq!(slabs.chunk(0, 3), 0..9);
    assert_eq!(slabs.chunk(1, 3), 3..14);
    assert_eq!(slabs.chunk(3, 3), 13..20);
    assert_eq!(slabs.region(1, 3, 0), 3..14);
    assert_eq!(slabs.region(1, 3, 2), 5..12);
    assert_eq!(slabs.carry(1, 3), 8..11);
    assert_eq!(slabs.chunk(2, 3).start, slabs.carry(1, 3).start);
    assert_eq!(slabs.elements(&(2..4)), 12..24);
    assert_eq!(slabs.max_chunk(), 11);
}

#[test]
fn slabs_over_own_planes_read_the_ghost_planes_and_write_back_only_their_own() {
    // A rank's local grid: 3 ghost planes (depth 3, radius 1) below and above 10 own.
    let slabs = Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 4);
    assert_eq!(slabs.own, [3..7, 7..11, 11..13]);
    assert_eq!(slabs.chunk(0, 3), 0..10);
    assert_eq!(slabs.chunk(2, 3), 8..16);
    // A shorter pass reads fewer ghost planes.
    assert_eq!(slabs.chunk(0, 2), 1..9);
    assert_eq!(slabs.region(0, 3, 2), 2..8);
}

#[test]
fn under_a_rank_pyramids_start_with_the_first_slab_that_reads_no_ghost_plane() {
    // Own planes 3..13 between 3 ghost planes a side; slabs of 2 planes, height 3.
    let slabs = Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 2);
    assert_eq!(slabs.own, [3..5, 5..7, 7..9, 9..11, 11..13]);
    // Slab 2's chunk, 4..12, is the first within the own planes.
    assert_eq!(slabs.first, 2);
    assert_eq!(slabs.order().collect::<Vec<_>>(), [2, 3, 4, 0, 1]);
    // It runs while the ghost planes are exchanged; slab 3's chunk, 6..14, reads one.
    assert!(!slabs.reads_beyond_own(2, 3));
    assert!([3, 4, 0, 1].iter().all(|&s| slabs.reads_beyond_own(s, 3)));
    // Slab 1's chunk ends at 10: planes 7..10, written back before it runs, are carried.
    assert_eq!(slabs.upper_carry(3), 7..10);
    assert_eq!(slabs.upper_carry(1), 7..8);
    // Two carries of 3 planes per unknown: (a − 1) · 3 planes, a = 2 · unknowns + 1 buffers per slot.
    let bytes = |unknowns| slabs.buffer_bytes(Arrays { unknowns, fields: 1 }, 8);
    assert_eq!([bytes(1), bytes(2)], [3, 5].map(|a| (2 * a * slabs.max_chunk() + (a - 1) * 3) * 4 * 8));
    // One process, skewed slabs, and slabs that all read ghost planes keep their order.
    assert_eq!(Slabs::new(16, 1, 4, 3, 2).first, 0);
    assert_eq!(Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 2).skew(true).first, 0);
    assert_eq!(Slabs::over(&Cut { own: 3..13, planes: 16, radius: 1, plane_len: 4 }, 3, 5).first, 0);
    // Slabs written back out of order: the error itself, not StoppedMidPass.
    let error = slabs.interrupted(0..3, 2, None, crate::Error::injected());
    assert!(matches!(error, crate::Error::Cuda { .. }), "{error}");
}

#[test]
fn the_widest_slab_fits_its_limit() {
    let (planes, radius, plane_len, height, elem) = (1000, 1, 100, 4, 4);
    let arrays = Arrays { unknowns: 1, fields: 1 };
    for limit in [10_000, 50_000, 123_456, 10_000_000] {
        let Some(width) =
            Slabs::widest(limit, &Cut::interior(planes, radius, plane_len), height, arrays, elem, Skew::PYRAMID)
        else {
            assert!(Slabs::new(planes, radius, plane_len, height, 1).buffer_bytes(arrays, elem) > limit);
            continue;
        };
        let slabs = Slabs::new(planes, radius, plane_len, height, width);
        assert!(slabs.buffer_bytes(arrays, elem) <= limit, "{limit}: width {width}");
        if width < planes - 2 * radius {
            let wider = Slabs::new(planes, radius, plane_len, height, width + 1);
            assert!(wider.buffer_bytes(arrays, elem) > limit, "{limit}: width {width} is not the widest");
        }
    }
    assert_eq!(
        Slabs::widest(100, &Cut::interior(planes, radius, plane_len), height, arrays, elem, Skew::PYRAMID),
        None
    );
    for limit in [50_000, 123_456, 10_000_000] {
        let width =
            Slabs::widest(limit, &Cut::interior(planes, radius, plane_len), height, arrays, elem, Skew::PLAIN).unwrap();
        let slabs = Slabs::new(planes, radius, plane_len, height, width).skew(true);
        assert!(slabs.buffer_bytes(arrays, elem) <= limit, "{limit}: width {width}");
        let wider = Slabs::new(planes, radius, plane_len, height, width + 1).skew(true);
        let whole = width == planes - 2 * radius;
        assert!(whole || wider.buffer_bytes(arrays, elem) > limit, "{limit}: width {width} is not the widest");
    }
    // Ghost planes clipped at the edge of a small grid: exactly the smallest slabs' bytes fit.
    for skew in [Skew::PYRAMID, Skew::PLAIN, Skew { skewed: true, cycle: 4 }] {
        let (planes, height) = (33, 32);
        let one = Slabs::new(planes, radius, plane_len, height, 1).skewing(skew).buffer_bytes(arrays, elem);
        let cut = Cut::interior(planes, radius, plane_len);
        assert!(Slabs::widest(one, &cut, height, arrays, elem, skew).is_some_and(|w| w >= 1));
        assert_eq!(Slabs::widest(one - 1, &cut, height, arrays, elem, skew), None);
    }
}

#[test]
fn skewed_levels_tile_the_interior_and_windows_hold_what_they_read() {
    let slabs = Slabs::new(40, 2, 3, 4, 7).skew(true);
    for t in 1..=4 {
        let levels: Vec<_> = (0..slabs.own.len()).map(|s| slabs.level(s, 4, t)).collect();
        assert_eq!(levels.first().unwrap().start, 2);
        assert_eq!(levels.last().unwrap().end, 38);
        assert!(levels.windows(2).all(|w| w[0].end == w[1].start), "{levels:?}");
        for (s, level) in levels.iter().enumerate() {
            let window = slabs.window(s, 4);
            assert!(level.is_empty() || (window.start + 2 <= level.start && level.end + 2 <= window.end));
        }
    }
    assert_eq!(slabs.window(2, 4), 6..23);
    assert_eq!(slabs.fresh(0, 4), 0..9);
    assert_eq!(slabs.fresh(slabs.own.len() - 1, 4), 37..40);
}

/// Replays a skewed pass plane by plane: which iterate each plane holds in each of the
/// two buffers, and that every update reads its neighbours at the iterate before.
fn replay_skewed(slabs: &Slabs, len: usize) -> Vec<Option<usize>> {
    let r = slabs.radius;
    // Per plane: the iterate in the even buffer and in the odd one (None: not loaded).
    let mut held: Vec<[Option<usize>; 2]> = vec![[None, None]; slabs.planes];
    let mut grid: Vec<Option<usize>> = vec![Some(0); slabs.planes];
    for s in 0..slabs.own.len() {
        let (window, fresh) = (slabs.window(s, len), slabs.fresh(s, len));
        assert!(window.start <= fresh.start && fresh.end <= slabs.planes, "slab {s}: {window:?} {fresh:?}");
        // Planes of the window below the fresh ones were in the previous window; the
        // rest of the buffers is loaded.
        for (p, h) in held.iter_mut().enumerate() {
            if fresh.contains(&p) {
                *h = [Some(0), Some(0)];
            } else if !window.contains(&p) {
                *h = [None, None];
            }
        }
        for t in 1..=len {
            let level = slabs.level(s, len, t);
            for p in level.clone() {
                for (q, read) in held.iter().enumerate().take(p + r + 1).skip(p - r) {
                    let boundary = q < r || q >= slabs.planes - r;
                    let ok = read[(t - 1) % 2] == Some(t - 1) || (boundary && read[0].is_some());
                    assert!(ok, "slab {s} iteration {t} plane {p} reads plane {q}: {read:?}");
                }
            }
            for p in level {
                held[p][t % 2] = Some(t);
            }
        }
        for p in slabs.level(s, len, len) {
            grid[p] = held[p][len % 2];
        }
    }
    grid
}

#[test]
fn skewed_passes_read_what_they_hold_and_write_back_the_own_planes_at_the_last_iterate() {
    // One process: every interior plane, for every pass length and slab width.
    for width in [1, 2, 3, 7, 40] {
        for len in 1..=4 {
            let slabs = Slabs::new(40, 2, 3, 4, width).skew(true);
            let grid = replay_skewed(&slabs, len);
            assert!(grid[2..38].iter().all(|&i| i == Some(len)), "width {width}, len {len}: {grid:?}");
        }
    }
    // A rank: 8 ghost planes (depth 4, radius 2) on each side of the own planes 8..30, or
    // the boundary layer on one side; the levels shrink over the ghost planes and only
    // the own planes are written back, at iterate len.
    for own in [8..30, 2..30, 8..38] {
        let planes = own.end + if own.end == 38 { 2 } else { 8 };
        for width in [1, 3, 5, 22, 40] {
            for len in 1..=4 {
                let slabs =
                    Slabs::over(&Cut { own: own.clone(), planes, radius: 2, plane_len: 3 }, 4, width).skew(true);
                for t in 1..=len {
                    let span = slabs.span(len, t);
                    let levels: Vec<_> = (0..slabs.own.len()).map(|s| slabs.level(s, len, t)).collect();
                    assert_eq!((levels[0].start, levels.last().unwrap().end), (span.start, span.end));
                    assert!(levels.windows(2).all(|w| w[0].end == w[1].start), "{levels:?}");
                }
                let grid = replay_skewed(&slabs, len);
                for (p, iterate) in grid.iter().enumerate() {
                    let expected = if own.contains(&p) { Some(len) } else { Some(0) };
                    assert_eq!(*iterate, expected, "{own:?} width {width} len {len} plane {p}");
                }
            }
        }
    }
}
