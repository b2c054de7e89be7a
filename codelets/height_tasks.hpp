// The height sums (heights.hpp) as StarPU tasks over a surface's row strips, one task a strip,
// run wherever the policy places them: lwt2d filter sums each band where its inverse left it
// (on the GPU that computed it) instead of on the host after it comes home.
#pragma once

#include <starpu.h>

#include <vector>

#include "codelets/heights.hpp"

namespace heights {

// A strip's handles: float32 rows z (a matrix); optionally a float32 residual of the same shape
// and a mask of one byte a point (matrices with elemsize 1).
struct StripData {
  starpu_data_handle_t z = nullptr, residual = nullptr, mask = nullptr;
};

// One pass over strips: submit() adds a strip's task (in any order, at any time before total()),
// total() waits for them and adds their parts in strip and part order, so that it depends on
// where each strip ran, not on when. What a pass computes is heights::cpu's first_pass or
// moments; the first pass's z is written (STARPU_RW) only where it marks masked points.
class Pass {
 public:
  static Pass first(std::size_t strips, bool mark_invalid) { return Pass(strips, true, mark_invalid, 0.0); }
  static Pass moments(std::size_t strips, double mean) { return Pass(strips, false, false, mean); }
  Pass(Pass&&) = default;
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;
  ~Pass();

  void submit(std::size_t strip, const StripData& d, int priority = 0);
  void submit_all(const std::vector<StripData>& d, int priority = 0);
  Partial total();

 private:
  Pass(std::size_t strips, bool first, bool mark, double mean);
  bool first_, mark_;
  double mean_;
  std::vector<Partial> parts_;                // kParts per strip
  std::vector<starpu_data_handle_t> out_;     // each strip's parts, registered by submit()
};

// The strips of `z` (rows x cols, row stride cols) whose first rows are row0[k], of rows[k]
// rows: registered as matrices (and `mask`'s, of the same layout, where not null); unregister()
// hands them back, without bringing StarPU's copies home (what they hold is not needed after).
std::vector<StripData> register_strips(float* z, const unsigned char* mask, int cols,
                                       const std::vector<int>& row0, const std::vector<int>& rows);
void unregister_no_copy(std::vector<StripData>& strips);

}  // namespace heights
