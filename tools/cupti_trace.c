// A timeline of every kernel, copy and memset a CUDA process runs, with its stream, start and
// end (GPU nanoseconds), written as CSV: the activity records of CUPTI, loaded into the
// process by the driver, so that no profiler is needed where only the toolkit is installed.
//
//   C=/usr/local/cuda/targets/x86_64-linux
//   gcc -shared -fPIC -O2 -o libcupti_trace.so tools/cupti_trace.c -I$C/include -L$C/lib -lcupti
//   CUDA_INJECTION64_PATH=$PWD/libcupti_trace.so TRACE_OUT=trace.csv ./06_out_of_core --size 800 ...
//
// Rows: K,start,end,stream,gridX,gridY,gridZ,kernel — M,start,end,stream,copy kind (1 up, 2 down,
// 8 device to device),bytes — S,start,end,stream,0,bytes (a memset). The gaps between kernels
// are where the device computes nothing (docs/performance.md, "the seam between passes").
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static FILE* out;
enum { BUFFER = 8 << 20 };

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = (uint8_t*)aligned_alloc(8, BUFFER);
  *size = BUFFER;
  *max_records = 0;
}

static void CUPTIAPI completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  CUpti_Activity* record = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      CUpti_ActivityKernel9* k = (CUpti_ActivityKernel9*)record;
      fprintf(out, "K,%llu,%llu,%u,%d,%d,%d,%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
              k->streamId, k->gridX, k->gridY, k->gridZ, k->name);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      CUpti_ActivityMemcpy5* m = (CUpti_ActivityMemcpy5*)record;
      fprintf(out, "M,%llu,%llu,%u,%d,%llu\n", (unsigned long long)m->start, (unsigned long long)m->end,
              m->streamId, (int)m->copyKind, (unsigned long long)m->bytes);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      CUpti_ActivityMemset4* m = (CUpti_ActivityMemset4*)record;
      fprintf(out, "S,%llu,%llu,%u,0,%llu\n", (unsigned long long)m->start, (unsigned long long)m->end,
              m->streamId, (unsigned long long)m->bytes);
    }
  }
  free(buffer);
}

static void flush(void) {
  cuptiActivityFlushAll(1);
  fclose(out);
}

// Called by the driver when it loads this library (CUDA_INJECTION64_PATH).
int InitializeInjection(void) {
  const char* path = getenv("TRACE_OUT");
  out = fopen(path ? path : "trace.csv", "w");
  if (!out) return 0;
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  atexit(flush);
  return 1;
}
