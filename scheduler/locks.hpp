// The policy's locks: StarPU's own (SimGrid needs starpu_pthread ones), and a worker's thread
// relaxed while it waits for one (StarPU's convention for a policy lock taken inside a
// scheduling operation, as eager does), so that StarPU can still hand it work or block it.
#pragma once

#include <starpu.h>

namespace sched {

// starpu_pthread mutexes (SimGrid needs StarPU's own) behind std::lock_guard.
struct Mutex {
  starpu_pthread_mutex_t m;
  Mutex() { starpu_pthread_mutex_init(&m, nullptr); }
  ~Mutex() { starpu_pthread_mutex_destroy(&m); }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() { STARPU_PTHREAD_MUTEX_LOCK(&m); }
  void unlock() { STARPU_PTHREAD_MUTEX_UNLOCK(&m); }
  bool try_lock() { return starpu_pthread_mutex_trylock(&m) == 0; }
};

// A queue's mutex, taken from any thread: a worker's own thread is relaxed while it waits
// (StarPU's convention for a policy lock inside a scheduling operation, as eager does).
class QueueLock {
 public:
  explicit QueueLock(Mutex& m) : m_(m) {
    starpu_worker_relax_on();
    m_.lock();
    starpu_worker_relax_off();
  }
  ~QueueLock() { m_.unlock(); }
  QueueLock(const QueueLock&) = delete;
  QueueLock& operator=(const QueueLock&) = delete;

 private:
  Mutex& m_;
};

// A read-write lock of StarPU's (SimGrid needs them), relaxed while waiting as QueueLock.
struct RwLock {
  starpu_pthread_rwlock_t l;
  RwLock() { starpu_pthread_rwlock_init(&l, nullptr); }
  ~RwLock() { starpu_pthread_rwlock_destroy(&l); }
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;
};
template <int (*Take)(starpu_pthread_rwlock_t*)>
class RwGuard {
 public:
  explicit RwGuard(RwLock& r) : r_(r) {
    starpu_worker_relax_on();
    Take(&r_.l);
    starpu_worker_relax_off();
  }
  ~RwGuard() { starpu_pthread_rwlock_unlock(&r_.l); }
  RwGuard(const RwGuard&) = delete;
  RwGuard& operator=(const RwGuard&) = delete;

 private:
  RwLock& r_;
};
using ReadLock = RwGuard<starpu_pthread_rwlock_rdlock>;
using WriteLock = RwGuard<starpu_pthread_rwlock_wrlock>;

}  // namespace sched
