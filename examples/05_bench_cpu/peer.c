// The CPU peer: the 7-point Jacobi with right-hand side as a C programmer would write it with OpenMP,
// timed by the benchmark beside the twin. -DREAL=float|double selects the element type.
//   cc -O3 -march=x86-64-v3 -fopenmp -DREAL=float -o j7cpu peer.c && ./j7cpu 256 40
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#ifndef REAL
#define REAL float
#endif
typedef REAL real;
int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s N ITERATIONS\n", argv[0]); return 2; }
  int n = atoi(argv[1]), it = atoi(argv[2]); size_t N = (size_t)n*n*n, s = (size_t)n*n;
  size_t bytes = (N * sizeof(real) + 63) / 64 * 64;
  real *u = aligned_alloc(64, bytes), *f = aligned_alloc(64, bytes), *v = aligned_alloc(64, bytes);
  if (!u || !f || !v) { fprintf(stderr, "out of memory\n"); return 1; }
  #pragma omp parallel for
  for (size_t q = 0; q < N; q++) { u[q] = (q % 1013) * (real)1e-3; f[q] = u[q]; v[q] = u[q]; }
  real h2 = (real)1e-3; double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t = omp_get_wtime();
    for (int k = 0; k < it; k++) {
      #pragma omp parallel for schedule(static)
      for (int z = 1; z < n - 1; z++) for (int y = 1; y < n - 1; y++) {
        size_t p = (size_t)z*s + (size_t)y*n;
        #pragma omp simd
        for (int x = 1; x < n - 1; x++) v[p+x] = (u[p+x-s] + u[p+x+s] + u[p+x-n] + u[p+x+n] + u[p+x-1] + u[p+x+1] + h2*f[p+x]) / (real)6;
      }
      real* tmp = u; u = v; v = tmp;
    }
    t = omp_get_wtime() - t; if (t < best) best = t;
  }
  double pts = (double)(n-2)*(n-2)*(n-2)*it;
  printf("%.6f Gpt/s\n", pts/best/1e9);
  return 0;
}
