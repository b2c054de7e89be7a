// Saving and loading models: a versioned text format, readable by eye.
//
//   fnn-model 1
//   # comment lines start with '#'
//   inputs 5
//   hidden <m>                                   1 <= m <= kMaxHidden
//   outputs 2
//   membership <F|M|P|UF|UM> <a_low> <c_low> <a_high> <c_high>    five lines, input order
//   hidden_unit <j> <theta_j> <w_j1> ... <w_j10>                  m lines, j = 0..m-1
//   output_unit <k> <theta'_k> <w'_k1> ... <w'_km>                k = 0 (CPL), 1 (CPH)
//   decode <w''_L> <w''_H>
//   checksum fnv1a64 <16 hex digits>
//
// Numbers are written in the shortest form that reads back to the same double, so a saved
// model predicts bit for bit as the original. The checksum (FNV-1a, 64 bit, over every byte
// before its line) catches corruption that still parses; the reader also refuses any missing,
// extra or malformed line, naming it.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>

#include "fnn/fnn.hpp"

namespace fnn {

constexpr int kFormatVersion = 1;

// A model file that cannot be read: the message names the source and the line.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void write_model(const Model& m, std::ostream& out);

// `source` names the stream in error messages (usually the file's path).
Model read_model(std::istream& in, const std::string& source);

// Writes to a temporary file next to `path`, then renames it over `path`, so a reader never
// sees half a model. Throws std::runtime_error when the file cannot be written.
void save_model(const Model& m, const std::string& path);

// Throws std::runtime_error when the file cannot be opened, FormatError when it is not a valid
// model.
Model load_model(const std::string& path);

}  // namespace fnn
