#!/usr/bin/env python3
"""Predicted parallel efficiency of a distributed `Plain` run (docs/scaling.md).

A rank owns L planes of A points; one iteration of its planes takes L*A/R. Every `depth`
iterations it exchanges m = depth*r*A*b bytes with each neighbour, overlapped with the update
of its middle planes in the last iteration of the phase; between exchanges it updates
r*depth*(depth-1) extra planes a side (the pyramid). The planes travel through host memory
(`host`: device -> host, MPI, host -> device) or device to device over NCCL (`nccl`). Edit
the figures below and run `python3 docs/scaling_model.py`.
"""

# Network and host figures (assumed for a cluster; see docs/scaling.md).
ALPHA = 3e-6  # s, message latency between nodes
BETA_NET = 40e9  # B/s, bandwidth between nodes (one 400 Gb/s NIC per GPU)
BETA_HOST = 50e9  # B/s, page-locked device<->host copies (measured on the H200 machine)
ALLREDUCE_EVERY = 100  # iterations between residual checks
SYNC = {"host": 10e-6, "nccl": 20e-6}  # s per exchange that nothing hides: measured (H200s; H100s)

# One host: MPI through shared memory, NCCL over NVLink (fitted to docs/performance.md).
NODE = {
    "host": dict(alpha=0.0, beta=5e9),  # 2 H200s, 2026-11-22
    "nccl": dict(alpha=10e-6, beta=150e9),  # 4 H100s (NV18), 2026-11-26
}


def efficiency(planes_per_rank, plane_points, rate, depth, ranks, radius=1, elem=4, transport="host", node=False):
    """Time of one iteration on one rank against the same rank with no neighbours: (efficiency,
    seconds per iteration), or None when the cut is impossible. `node`: the ranks share one
    host (the NODE figures) instead of a cluster's network."""
    if planes_per_rank < max(depth * radius, 1):
        return None  # the cut is impossible: a rank must own its neighbours' ghost planes
    neighbours = 1 if ranks == 2 else 2
    compute = planes_per_rank * plane_points / rate
    message = depth * radius * plane_points * elem
    alpha, beta = (NODE[transport]["alpha"], NODE[transport]["beta"]) if node else (ALPHA, BETA_NET)
    # The message sent and the message received pass over the link (and, staged through the
    # host, over PCIe); the two neighbours' exchanges run at once, over links of their own.
    passes = 2
    exchange = 2 * alpha + passes * message / beta
    if transport == "host":
        exchange += passes * message / BETA_HOST
    middle = max(planes_per_rank - 2 * depth * radius, 0) * plane_points / rate
    pyramid = neighbours * radius * depth * (depth - 1) / 2 * plane_points / rate
    checks = 2 * alpha * max(ranks - 1, 0).bit_length() / ALLREDUCE_EVERY
    per_iteration = compute + (pyramid + max(exchange - middle, 0) + SYNC[transport]) / depth + checks
    return compute / per_iteration, per_iteration


def table(title, case, transport, depths=(1, 2, 4, 8), ranks=(8, 32, 128, 512, 1024)):
    """Up to 8 GPUs in one host (the NODE figures), more over the cluster's network."""
    print(f"\n{title}, {transport}\n")
    print("| GPUs | " + " | ".join(f"d = {d}" for d in depths) + " |")
    print("|---:|" + "---:|" * len(depths))
    for p in ranks:
        cells = []
        for d in depths:
            e = efficiency(*case(p), d, p, transport=transport, node=p <= 8)
            cells.append("cut impossible" if e is None else f"{100 * e[0]:.0f} %")
        print(f"| {p} | " + " | ".join(cells) + " |")


# Measured on 4 H100s of one host, 2026-11-26 (docs/performance.md): ms per iteration.
WEAK_768 = {1: 2.064, ("host", 2): (2.055, 2.053, 2.724, 2.912), ("nccl", 2): (2.103, 2.099, 2.094, 2.093),
            ("host", 4): (2.080, 2.149, 2.511, 3.723), ("nccl", 4): (2.135, 2.121, 2.111, 2.113)}
STRONG_1024 = {1: 4.923, ("host", 2): (2.478, 2.268, 2.886, 3.544), ("nccl", 2): (2.518, 2.503, 2.507, 2.505),
               ("host", 4): (2.674, 2.402, 2.905, 3.690), ("nccl", 4): (1.330, 1.311, 1.300, 1.312)}


def checked():
    """The model beside the measured 2- and 4-GPU figures."""
    print("\n| run | GPUs | exchange | d = 1 | d = 2 | d = 4 | d = 8 |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, data, planes, points in [("weak, 768³ per GPU", WEAK_768, lambda p: 768, 768 * 768),
                                       ("strong, 1024³", STRONG_1024, lambda p: 1022 // p, 1024 * 1024)]:
        one = data[1]
        rate = planes(1) * points / (one * 1e-3)
        for (transport, p), times in [(k, v) for k, v in data.items() if k != 1]:
            cells = []
            for d, t in zip((1, 2, 4, 8), times):
                model = efficiency(planes(p), points, rate, d, p, transport=transport, node=True)[1] * 1e3
                if name.startswith("weak"):
                    cells.append(f"{100 * one / t:.1f} % ({100 * one / model:.1f} %)")
                else:
                    cells.append(f"{one / t:.2f}× ({one / model:.2f}×)")
            print(f"| {name} | {p} | {transport} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    checked()
    for transport in ("host", "nccl"):
        table("Weak, jacobi7 f32, 768^3 per GPU (R = 262 Gpoint/s)", lambda p: (768, 768 * 768, 262e9), transport)
        table("Strong, jacobi7 f32, 1024^3 (R = 246 Gpoint/s)", lambda p: (1022 // p, 1024 * 1024, 246e9), transport)
        table("Strong, jacobi7 f32, 2048^3 (R = 246 Gpoint/s)", lambda p: (2046 // p, 2048 * 2048, 246e9), transport)
        table("Strong, jacobi5 f32, 16384^2 (R = 236 Gpoint/s)", lambda p: (16382 // p, 16384, 236e9), transport)
