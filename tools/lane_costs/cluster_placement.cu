// Where a cluster launch puts the lane kernel's blocks (224 threads, 45, 90 or 120 KB of shared memory,
// a grid of 64): how many multiprocessors, the most blocks on one, and the clusters that fit at once.
// Measured in docs/performance.md.
//   nvcc -arch=sm_90 -O3 -o cluster_placement tools/lane_costs/cluster_placement.cu && ./cluster_placement
#include <cstdio>
#include <cuda_runtime.h>
__global__ void probe(int* smid) {
  extern __shared__ char s[];
  unsigned id; asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  if (threadIdx.x == 0) { smid[blockIdx.x] = id; s[0] = 1; }
  long long t0 = clock64(); while (clock64() - t0 < 200000) {}
}
int main() {
  int* d; cudaMalloc(&d, 1024 * 4); int h[1024];
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  for (int bytes : {45 * 1024, 90 * 1024, 120 * 1024}) for (int c : {1, 2, 4, 8}) {
    const int grid = 64;
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = 224; cfg.dynamicSmemBytes = bytes;
    cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeClusterDimension; a[0].val.clusterDim.x = c; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
    cfg.attrs = a; cfg.numAttrs = 1;
    int clusters = 0; cudaOccupancyMaxActiveClusters(&clusters, probe, &cfg);
    cudaError_t e = cudaLaunchKernelEx(&cfg, probe, d); cudaDeviceSynchronize();
    cudaMemcpy(h, d, grid * 4, cudaMemcpyDeviceToHost);
    int count[256] = {0}, distinct = 0, most = 0;
    for (int b = 0; b < grid; ++b) { if (!count[h[b]]++) ++distinct; if (count[h[b]] > most) most = count[h[b]]; }
    printf("smem %3d KB cluster %d: %s, max active clusters %d, %d blocks on %d SMs, at most %d on one; first cluster's SMs:", bytes / 1024, c, cudaGetErrorString(e), clusters, grid, distinct, most);
    for (int b = 0; b < 8; ++b) printf(" %d", h[b]); printf("\n");
  }
}
