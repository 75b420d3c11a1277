#!/usr/bin/env python3
"""Predicted parallel efficiency of a distributed `Plain` run (docs/scaling.md).

A rank owns L planes of A points; one iteration of its planes takes L*A/R. Every `depth`
iterations it exchanges m = depth*r*A*b bytes with each neighbour, staged through host
memory, overlapped with the update of its middle planes in the last iteration of the phase;
between exchanges it updates r*depth*(depth-1) extra planes (the pyramid). Edit the figures
below and run `python3 docs/scaling_model.py`.
"""

# Network and host figures (assumed for a cluster; see docs/scaling.md).
ALPHA = 3e-6  # s, MPI latency between nodes
BETA_NET = 40e9  # B/s, MPI bandwidth between nodes (one 400 Gb/s NIC per GPU)
BETA_HOST = 50e9  # B/s, page-locked device<->host copies (measured on the H200 machine)
ALLREDUCE_EVERY = 100  # iterations between residual checks
SYNC = 10e-6  # s per exchange that nothing hides (host waits, launches): measured, 2 H200s, d = 1


def efficiency(planes_per_rank, plane_points, rate, depth, ranks, radius=1, elem=4):
    """Time of one iteration on one rank against the same rank with no neighbours."""
    if planes_per_rank < max(depth * radius, 1):
        return None  # the cut is impossible: a rank must own its neighbours' ghost planes
    compute = planes_per_rank * plane_points / rate
    message = depth * radius * plane_points * elem
    exchange = 2 * ALPHA + 2 * message / BETA_NET + 2 * message / BETA_HOST
    middle = max(planes_per_rank - 2 * depth * radius, 0) * plane_points / rate
    pyramid = radius * depth * (depth - 1) * plane_points / rate
    checks = 2 * ALPHA * max(ranks - 1, 0).bit_length() / ALLREDUCE_EVERY
    per_iteration = compute + (pyramid + max(exchange - middle, 0) + SYNC) / depth + checks
    return compute / per_iteration


def table(title, case, depths=(1, 2, 4, 8), ranks=(8, 32, 128, 512, 1024)):
    print(f"\n{title}\n")
    print("| GPUs | " + " | ".join(f"d = {d}" for d in depths) + " |")
    print("|---:|" + "---:|" * len(depths))
    for p in ranks:
        cells = []
        for d in depths:
            e = efficiency(*case(p), d, p)
            cells.append("cut impossible" if e is None else f"{100 * e:.0f} %")
        print(f"| {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    table("Weak, jacobi7 f32, 768^3 per GPU (R = 262 Gpoint/s)", lambda p: (768, 768 * 768, 262e9))
    table("Strong, jacobi7 f32, 1024^3 (R = 246 Gpoint/s)", lambda p: (1022 // p, 1024 * 1024, 246e9))
    table("Strong, jacobi7 f32, 4096^3 (R = 246 Gpoint/s)", lambda p: (4094 // p, 4096 * 4096, 246e9))
    table("Strong, jacobi5 f32, 65536^2 (R = 236 Gpoint/s)", lambda p: (65534 // p, 65536, 236e9))
    table("Strong, jacobi5 f32, 16384^2 (R = 236 Gpoint/s)", lambda p: (16382 // p, 16384, 236e9))
