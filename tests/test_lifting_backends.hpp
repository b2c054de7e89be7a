// Backends of the lifting tests (tests/test_lifting.cpp): each exposes codelets/lifting.hpp's
// per-unit passes on host buffers, so one test source runs every backend (Thrust's testing/
// style). Arguments mirror lwt::cpu's with each pointer replaced by a buffer (a null halo stays
// null); passing the same buffer as input and output means in place. CudaOps (defined in
// tests/test_lifting_cuda.cu) copies every buffer to the device, runs lwt::cuda on one stream,
// synchronises, checks errors and copies every buffer back.
#pragma once

#include <string>
#include <vector>

#include "codelets/lifting.hpp"

namespace lwt_test {

template <typename T>
using Buf = std::vector<T>;

template <typename T>
struct CudaOps {
  static void rows_forward(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n);
  static void rows_inverse(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n);
  static void cols_forward(Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                           const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out);
  static void cols_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                           const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out);
  static void rows_split(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n);
  static void rows_merge(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n);
  static void rows_lift(Buf<T>& data, int ld, int rows, int n, lwt::Step step, lwt::Direction dir);
  static void cols_gather(const Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                          const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win);
  static void cols_lift(Buf<T>& win, int ld_win, int n_win, int w, lwt::Step step,
                        lwt::Direction dir);
  static void cols_scatter(const Buf<T>& win, int ld_win, int h, int w, bool above, bool below,
                           Buf<T>& out, int ld_out);
  static void cols_gather_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                                  const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win);
  static void cols_scatter_inverse(const Buf<T>& win, int ld_win, int h, int w, bool above,
                                   bool below, Buf<T>& out, int ld_out);
  static void write_halos(const Buf<T>& unit, int ld, int h, int w, lwt::Direction layout,
                          Buf<T>* top, Buf<T>* bottom, int ld_halo);
  static void copy_levels(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int h, int w,
                          int levels, std::uint32_t keep);
};

// True where a CUDA device can run the tests; otherwise false with the reason in *why.

}  // namespace lwt_test
