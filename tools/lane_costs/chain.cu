// Latency of the lane kernel's step chain and of its parts: one warp, clock64 around N steps of each
// variant (a shuffle, an add, the exact division's conversions and double multiply, the whole
// alternate-triangular step with either division, with the window's loads and store, fast mode's step).
// Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 --fmad=false -o chain tools/lane_costs/chain.cu && ./chain
#include <cstdio>
#define N 4096
__device__ __forceinline__ float markstein(float a, float y, float b) {
  float q0 = __fmul_rn(a, y);
  float r = __fmaf_rn(-b, q0, a);
  float q = __fmaf_rn(r, y, q0);
  return __uint_as_float((__float_as_uint(q) & 0x7fffffffu) | (__float_as_uint(q0) & 0x80000000u));
}
__device__ __noinline__ float rare(const float a, const float b) { return a / b; }
__device__ __forceinline__ float markstein_checked(const float a, const float y, const float b) {
  const float q0 = __fmul_rn(a, y);
  float q = __uint_as_float((__float_as_uint(__fmaf_rn(__fmaf_rn(-b, q0, a), y, q0)) & 0x7fffffffu) | (__float_as_uint(q0) & 0x80000000u));
  const unsigned ma = __float_as_uint(a) & 0x7fffffffu, mb = __float_as_uint(b) & 0x7fffffffu;
  const bool within = mb - 0x2b800000u <= 0x27ffffffu && (ma - 0x17800000u <= 0x4fffffffu || ma == 0);
  asm volatile("" : "+f"(q));
  return within ? q : rare(a, b);
}
__device__ __forceinline__ float markstein_v(const float a, const float y, const float b, const double yd, const int how) {
  const float q0 = __fmul_rn(a, y);
  float q = __uint_as_float((__float_as_uint(__fmaf_rn(__fmaf_rn(-b, q0, a), y, q0)) & 0x7fffffffu) | (__float_as_uint(q0) & 0x80000000u));
  if (how == 10) {  // float compares on a, out-of-line IEEE
    const float m = fabsf(a);
    if (!((m >= 0x1p-80f && m < 0x1p80f) || m == 0.0f)) q = rare(a, b);
    return q;
  }
  if (how == 11) {  // float compares on a, the double product in line
    const float m = fabsf(a);
    if (!((m >= 0x1p-80f && m < 0x1p80f) || m == 0.0f)) q = (float)((double)a * yd);
    return q;
  }
  if (how == 12) {  // both, selected
    const float m = fabsf(a);
    const float d = (float)((double)a * yd);
    return ((m >= 0x1p-80f && m < 0x1p80f) || m == 0.0f) ? q : d;
  }
  return q;
}
template <int V>
__global__ void chain(const float* in, float* out, long long* cyc) {
  __shared__ float sm[N + 64];
  const int lane = threadIdx.x;
  for (int i = lane; i < N + 64; i += 32) sm[i] = in[i & 127];
  __syncwarp();
  float h = in[lane], c1 = in[32], c2 = in[33], c3 = in[34], q = in[35 + lane], e = in[70 + lane], s = in[40 + lane];
  const float b = in[36];
  const double y = 1.0 / (double)b;
  const float yf = __frcp_rn(b);
  const float bef = in[37];
  const float ff = in[38];
  float acc = 0;
  long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < N; ++i) {
    if (V == 0) { h = __shfl_up_sync(~0u, h, 1); }                       // SHFL alone
    else if (V == 1) { h = __fadd_rn(h, ff); }                              // FADD alone
    else if (V == 2) { h = (float)((double)h * y); }                        // F2F DMUL F2F
    else if (V == 3) { float up = __shfl_up_sync(~0u, h, 1); h = lane == 0 ? bef : up; }  // SHFL + FSEL
    else if (V >= 4) {
      float up = __shfl_up_sync(~0u, h, 1);
      up = lane == 0 ? bef : up;
      float E = e, S = s, Q = q;
      if (V == 6 || V == 7) { E = sm[(i + lane) & (N - 1)]; S = sm[(i + 2 * lane + 1) & (N - 1)]; Q = sm[(i + 3 * lane + 2) & (N - 1)]; }
      float a;
      if (V == 8) {  // fast: contracted, approximate division
        a = fmaf(up, c1, h * c2); a = a + E; a = a + S; a = a + Q; a = fmaf(a, c3, Q); h = a * yf;
      } else {
        a = __fadd_rn(__fmul_rn(h, c2), __fmul_rn(up, c1));
        a = __fadd_rn(a, E); a = __fadd_rn(a, S); a = __fadd_rn(a, Q);
        a = __fmul_rn(a, c3); a = __fadd_rn(a, Q);
        if (V == 9) h = markstein_checked(a, yf, b);
        else if (V >= 10) h = markstein_v(a, yf, b, y, V);
        else if (V == 5 || V == 7) h = markstein(a, yf, b);
        else h = (float)((double)a * y);
      }
      if (V == 6 || V == 7) sm[(i + lane + 17) & (N - 1)] = h;
    }
  }
  long long t1 = clock64();
  out[lane] = h + acc;
  if (lane == 0) cyc[V] = t1 - t0;
}
int main() {
  float *in, *out; long long* cyc;
  cudaMallocManaged(&in, 256 * 4); cudaMallocManaged(&out, 64 * 4); cudaMallocManaged(&cyc, 16 * 8); // up to 16 variants
  for (int i = 0; i < 256; ++i) in[i] = 0.5f + 0.001f * i;
  const char* names[] = {"SHFL", "FADD", "F2F.F64+DMUL+F2F.F32", "SHFL+FSEL", "exact step (F2F/DMUL division)",
                         "exact step (Markstein f32 division)", "exact step + 3 LDS + STS", "Markstein step + 3 LDS + STS", "fast step", "Markstein step, range checked", "Markstein, float checks, out of line", "Markstein, float checks, double product in line", "Markstein or double product, selected"};
  for (int rep = 0; rep < 2; ++rep) {
    chain<0><<<1, 32>>>(in, out, cyc); chain<1><<<1, 32>>>(in, out, cyc); chain<2><<<1, 32>>>(in, out, cyc);
    chain<3><<<1, 32>>>(in, out, cyc); chain<4><<<1, 32>>>(in, out, cyc); chain<5><<<1, 32>>>(in, out, cyc);
    chain<6><<<1, 32>>>(in, out, cyc); chain<7><<<1, 32>>>(in, out, cyc); chain<8><<<1, 32>>>(in, out, cyc); chain<9><<<1, 32>>>(in, out, cyc); chain<10><<<1, 32>>>(in, out, cyc); chain<11><<<1, 32>>>(in, out, cyc); chain<12><<<1, 32>>>(in, out, cyc);
    cudaDeviceSynchronize();
  }
  for (int v = 0; v < 13; ++v) printf("%-40s %6.1f cycles per step\n", names[v], (double)cyc[v] / N);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
