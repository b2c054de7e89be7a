// Training samples as CSV: a header naming the columns F,M,P,UF,UM and (for training) CP, in
// any order, then one sample per line, every value a number in [0, 1]. The scheduler writes
// its recorded samples in the same form, so `fnn-tool train` reads them directly.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "fnn/fnn.hpp"

namespace fnn {

// Bad sample data: the message names the source, the line and what is wrong.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SampleTable {
  std::vector<Sample> samples;
  bool has_cp = false;  // false: the CP column was absent and every cp is 0
};

// require_cp: the CP column must be present (training). Throws InputError on a missing,
// duplicate or unknown column, a row with the wrong number of fields, a value that is not a
// number or lies outside [0, 1], an empty line inside the data, or no samples at all.
SampleTable read_samples_csv(std::istream& in, const std::string& source, bool require_cp);

// Header F,M,P,UF,UM,CP and one line per sample, numbers in shortest round-trip form.
void write_samples_csv(const std::vector<Sample>& samples, std::ostream& out);

}  // namespace fnn
