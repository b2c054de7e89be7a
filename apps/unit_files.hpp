// A transform's files beside its tasks (lwt::UnitFiles; DESIGN §7): the command's time then
// approaches the larger of its file traffic and its transform, not their sum.
#pragma once

#include <starpu.h>

#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/io/npy.hpp"
#include "codelets/lwt_tasks.hpp"

namespace apps {

// The input is read in row order from construction, in chunks on `readers` threads; a unit's
// first task waits only until the rows read so far cover its own (its input strip acquired in W
// mode, released then). A unit's result is written on `writers` threads as soon as its last
// task ends (its output strip acquired in R mode, released once written). `read` (rows [row0,
// row0 + rows) into the caller's buffer) and `write` (unit k's result) may throw: the first
// error is kept, later reads and writes are skipped, every acquisition is still released, and
// finish() throws it. Without threads (readers 0; under simulation only SimGrid's threads may
// call StarPU) the input is read whole by the constructor and each unit written in its
// acquisition's callback.
class UnitStream {
 public:
  using ReadRows = std::function<void(int row0, int rows)>;
  using WriteUnit = std::function<void(int unit)>;
  // read may be empty (the caller holds the input whole): no fill hook.
  UnitStream(int rows, int chunk_rows, ReadRows read, WriteUnit write, unsigned readers, unsigned writers);
  ~UnitStream();
  UnitStream(const UnitStream&) = delete;
  UnitStream& operator=(const UnitStream&) = delete;

  // The hooks for one transform of `plan` (of this stream's rows); valid while the stream lives.
  const lwt::UnitFiles& hooks(const lwt::Plan& plan);
  // After the transform (every acquisition released): ends the threads; the first error, if any.
  void finish();

 private:
  struct Fill {
    UnitStream* stream;
    int end_row;  // the unit's rows end here
    starpu_data_handle_t h;
  };
  struct Drain {
    UnitStream* stream;
    int unit;
    starpu_data_handle_t h;
  };
  static void filled(void* arg);   // StarPU's acquisition callbacks
  static void drained(void* arg);
  void read_chunks(unsigned t, unsigned readers);
  void write_units();
  void write_one(const Drain& d);
  void fail(std::exception_ptr e);  // under m_
  bool failed();

  int rows_, chunk_;
  ReadRows read_;
  WriteUnit write_;
  unsigned writers_;
  lwt::UnitFiles hooks_;
  std::vector<Fill> fills_;  // per unit: addresses stable while the transform runs
  std::vector<Drain> drains_;

  starpu_pthread_mutex_t m_;
  starpu_pthread_cond_t cv_;
  // Under m_: chunks read (done_[c]), the rows read without a gap from row 0, the fills waiting
  // for them, the units waiting for a writer, whether finish() has begun (reads not begun are
  // skipped), the first error.
  std::vector<char> done_;
  int rows_read_ = 0;
  std::vector<Fill*> waiting_;
  std::deque<Drain*> queue_;
  bool closing_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

// Unit k's result in `units_layout` (the plan's unit layout) into `file`, in the file's layout:
// a forward's coefficients as their blocks of the Mallat layout, an inverse's image as its rows.
void write_unit(const lwt::Plan& plan, int k, bool mallat, const float* units_layout, io::NpyRows& file);

}  // namespace apps
