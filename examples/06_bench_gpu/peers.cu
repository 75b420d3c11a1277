// Hand-written peers of the 7-point Jacobi with a right-hand side, timed beside the generated
// kernels: v = (u[x±1] + u[y±1] + u[z±1] + h2·f) / 6 on the interior of an n³ grid.
// -DREAL=float|double selects the element type.
#ifndef REAL
#define REAL float
#endif
typedef REAL real;

// One thread per point.
extern "C" __global__ void peer_point(const real* __restrict__ u, const real* __restrict__ f, real* __restrict__ v,
                                      const int n, const real h2) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y, k = blockIdx.z;
    if (i < 1 || j < 1 || k < 1 || i >= n - 1 || j >= n - 1 || k >= n - 1) return;
    const size_t s = (size_t)n * n, p = (size_t)k * s + (size_t)j * n + i;
    v[p] = (u[p - 1] + u[p + 1] + u[p - n] + u[p + n] + u[p - s] + u[p + s] + h2 * f[p]) / (real)6;
}

// Columns of threads from the array's origin marching MARCH planes along z, the column's
// planes in a register queue (Giles).
template <int MARCH>
__device__ void march(const real* __restrict__ u, const real* __restrict__ f, real* __restrict__ v, const int n,
                      const real h2) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < 1 || j < 1 || i >= n - 1 || j >= n - 1) return;
    const int k0 = 1 + blockIdx.z * MARCH;
    if (k0 >= n - 1) return;
    const size_t s = (size_t)n * n;
    size_t p = (size_t)k0 * s + (size_t)j * n + i;
    real lo = u[p - s], c = u[p];
#pragma unroll
    for (int t = 0; t < MARCH; t++) {
        if (k0 + t >= n - 1) break;
        const real hi = u[p + s];
        v[p] = (u[p - 1] + u[p + 1] + u[p - n] + u[p + n] + lo + hi + h2 * f[p]) / (real)6;
        lo = c;
        c = hi;
        p += s;
    }
}
// Launch with 64 × 4 threads.
extern "C" __global__ void peer_march8(const real* __restrict__ u, const real* __restrict__ f, real* __restrict__ v,
                                       const int n, const real h2) {
    march<8>(u, f, v, n, h2);
}
// Launch with 32 × 8 threads.
extern "C" __global__ void peer_march16(const real* __restrict__ u, const real* __restrict__ f, real* __restrict__ v,
                                        const int n, const real h2) {
    march<16>(u, f, v, n, h2);
}
