// The cluster helpers of the cluster probes (cluster_put.cu, cluster_racecheck.cu): a shared-memory
// address, the block's rank in its cluster, the cluster barrier, and another block's copy of a
// shared variable as a generic address and as an address of the cluster's shared window.
#pragma once
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void csync() { asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory"); }
template <typename T> __device__ __forceinline__ T* gmap(T* p, unsigned r) { u64 q; asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(r)); return (T*)q; }
__device__ __forceinline__ unsigned smap(const void* p, unsigned r) { unsigned q; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(q) : "r"(sa(p)), "r"(r)); return q; }
