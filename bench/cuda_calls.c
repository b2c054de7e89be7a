/* What a process's CUDA runtime calls cost: an LD_PRELOAD library that times the calls which
 * allocate, pin, free or wait (the ones that can hold the driver's locks and stall other
 * threads' launches), and at exit writes, per call, its count, total and longest time, and
 * every call longer than CUDA_CALLS_SLOW_US (default 500) with its thread and start time.
 *
 *   LD_PRELOAD=libcuda_calls.so CUDA_CALLS_OUT=calls.txt ./program ...
 *
 * Only calls made through the shared libcudart (StarPU's) are seen. Not thread-hostile: the
 * counters are atomics, the slow-call log a fixed array with an atomic cursor. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int cuda_status; /* cudaError_t */

enum {
  HOST_ALLOC, MALLOC_HOST, FREE_HOST, MALLOC, FREE, HOST_REGISTER, HOST_UNREGISTER,
  STREAM_SYNC, EVENT_SYNC, DEVICE_SYNC, MEMCPY, NCALLS
};
static const char *const names[NCALLS] = {
  "cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaMalloc", "cudaFree", "cudaHostRegister",
  "cudaHostUnregister", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize",
  "cudaMemcpy"};

static atomic_long counts[NCALLS];
static atomic_llong total_ns[NCALLS], max_ns[NCALLS], bytes[NCALLS];
enum { kSlowMax = 4096 };
static struct { int call; long tid; long long start_ns, ns; unsigned long long size; } slow[kSlowMax];
static atomic_int nslow;
static long long t0_ns, slow_ns = 500000;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((constructor)) static void start(void) {
  t0_ns = now_ns();
  const char *s = getenv("CUDA_CALLS_SLOW_US");
  if (s) slow_ns = atoll(s) * 1000LL;
}

static void note(int call, long long start_ns, unsigned long long size) {
  const long long ns = now_ns() - start_ns;
  atomic_fetch_add(&counts[call], 1);
  atomic_fetch_add(&total_ns[call], ns);
  atomic_fetch_add(&bytes[call], (long long)size);
  long long m = atomic_load(&max_ns[call]);
  while (ns > m && !atomic_compare_exchange_weak(&max_ns[call], &m, ns)) {}
  if (ns >= slow_ns) {
    const int i = atomic_fetch_add(&nslow, 1);
    if (i < kSlowMax) {
      slow[i].call = call, slow[i].tid = syscall(SYS_gettid);
      slow[i].start_ns = start_ns - t0_ns, slow[i].ns = ns, slow[i].size = size;
    }
  }
}

#define WRAP(call, sym, params, args, size)                         \
  cuda_status sym params {                                          \
    static cuda_status(*real) params;                               \
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, #sym);            \
    const long long t_ = now_ns();                                 \
    const cuda_status r = real args;                                \
    note(call, t_, size);                                          \
    return r;                                                       \
  }

WRAP(HOST_ALLOC, cudaHostAlloc, (void **p, size_t n, unsigned f), (p, n, f), n)
WRAP(MALLOC_HOST, cudaMallocHost, (void **p, size_t n), (p, n), n)
WRAP(FREE_HOST, cudaFreeHost, (void *p), (p), 0)
WRAP(MALLOC, cudaMalloc, (void **p, size_t n), (p, n), n)
WRAP(FREE, cudaFree, (void *p), (p), 0)
WRAP(HOST_REGISTER, cudaHostRegister, (void *p, size_t n, unsigned f), (p, n, f), n)
WRAP(HOST_UNREGISTER, cudaHostUnregister, (void *p), (p), 0)
WRAP(STREAM_SYNC, cudaStreamSynchronize, (void *s), (s), 0)
WRAP(EVENT_SYNC, cudaEventSynchronize, (void *e), (e), 0)
WRAP(DEVICE_SYNC, cudaDeviceSynchronize, (void), (), 0)
WRAP(MEMCPY, cudaMemcpy, (void *d, const void *s, size_t n, int k), (d, s, n, k), n)

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("CUDA_CALLS_OUT");
  FILE *f = path ? fopen(path, "w") : stderr;
  if (!f) return;
  fprintf(f, "# call count total_ms max_ms MiB\n");
  for (int c = 0; c < NCALLS; ++c)
    if (counts[c])
      fprintf(f, "%-22s %6ld %10.3f %8.3f %10.1f\n", names[c], (long)counts[c], total_ns[c] / 1e6,
              max_ns[c] / 1e6, bytes[c] / 1048576.0);
  const int n = nslow < kSlowMax ? nslow : kSlowMax;
  fprintf(f, "# calls over %.3f ms: call tid start_ms ms MiB\n", slow_ns / 1e6);
  for (int i = 0; i < n; ++i)
    fprintf(f, "slow %-22s %7ld %10.3f %8.3f %8.2f\n", names[slow[i].call], slow[i].tid,
            slow[i].start_ns / 1e6, slow[i].ns / 1e6, slow[i].size / 1048576.0);
  if (f != stderr) fclose(f);
}
