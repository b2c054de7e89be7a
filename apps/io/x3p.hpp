// ISO 25178-72 X3P files: a zip holding main.xml (the ISO5436_2 record) and the binary heights.
// Read with Debian's libzip and tinyxml2; only areal surfaces (FeatureType SUR) on a regular
// grid (X and Y axes incremental) are accepted.
//
// What is read (ISO 25178-72 §5):
//   Record1/FeatureType                    SUR
//   Record1/Axes/CX, CY: AxisType I, Increment (metres), Offset (optional)
//   Record1/Axes/CZ: AxisType A, DataType I (int16), L (int32), F (float32) or D (float64),
//                    Increment and Offset (optional: 1 and 0); height = Offset + Increment * value
//   Record3/MatrixDimension/SizeX, SizeY, SizeZ (SizeZ 1): SizeX columns, SizeY rows, X fastest
//   Record3/DataLink/PointDataLink         the data file inside the zip, little-endian
//   Record3/DataLink/ValidPointsLink       optional: one bit per point, least significant bit
//                                          first, 1 = valid
// Invalid points (a 0 bit in the valid-points file, or a NaN or infinite float height) come back
// as NaN and are counted. Record3's MD5ChecksumPointData, where given, must match the data file;
// main.xml's own checksum (Record4) is not checked.
//
// Bad input: every defect is one InputError "<path>: <what is wrong>" (npy.hpp's convention).
#pragma once

#include <cstddef>
#include <string>

#include "apps/io/npy.hpp"

namespace io {

struct X3pSurface {
  Array2D z;              // heights in metres, row r = Y index, column c = X index; NaN = invalid
  double dx = 0, dy = 0;  // X and Y increments, metres
  std::size_t invalid = 0;
};

X3pSurface read_x3p(const std::string& path);

// Writes rows x cols heights (metres, NaN = invalid) as an X3P file with float64 heights, the
// data file's MD5 in Record3 and main.xml's in md5checksum.hex (Record4), atomically (temporary file, then rename). Throws OutputError for a bad destination or where
// `path` names `protected_input`.
void write_x3p(const std::string& path, int rows, int cols, const float* z, double dx, double dy,
               const std::string& protected_input = {});

}  // namespace io
