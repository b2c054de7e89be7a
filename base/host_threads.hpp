// Threads for the work the apps do on the host beside StarPU's workers: sums over a surface,
// a reference product, a synthetic surface.
//
// A thread inherits the CPU affinity of the thread that starts it, and StarPU binds the
// program's main thread to one reserved core (STARPU_MAIN_THREAD_BIND, which the apps set on
// hosts of 8 cores or more): helpers started from it would all share that core. These run on
// the cores the process was given when it started (its affinity before main).
#pragma once

#include <functional>

namespace base {

// The cores the process started with (its affinity mask before main), at least 1.
unsigned host_threads();

// f(0) .. f(threads - 1), each on a thread of its own allowed the process's starting cores;
// returns when all have ended and rethrows the first exception one of them threw. A thread that
// cannot start is run by the caller after the others.
void run_on_host_threads(unsigned threads, const std::function<void(unsigned)>& f);

}  // namespace base
