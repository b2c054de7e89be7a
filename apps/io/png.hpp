// PNG views for lwt2d filter, written with Debian's libpng: the subband mosaic of a transform
// and height maps with a colour bar. Large surfaces are shown by nearest-sample reduction to at
// most `max_side` pixels on the longer side. Labels use a built-in 3 x 5 pixel font.
#pragma once

#include <string>

namespace io {

// Mallat-layout coefficients (rows x cols, `levels` levels) as a grey mosaic. Each subband gets
// its own contrast (its mean +- 3 standard deviations to black..white; the approximation its
// min..max), so fine details show beside the coarse ones; each subband carries its level
// ("1" finest; "A" the approximation).
void write_mosaic_png(const std::string& path, const float* mallat, int rows, int cols, int levels,
                      int max_side = 1024, const std::string& protected_input = {});

// Heights as a colour map (blue low .. yellow high, min..max of the finite heights; NaN grey)
// with a colour bar labelled with the min, middle and max value and `unit`.
void write_height_png(const std::string& path, const float* z, int rows, int cols,
                      const std::string& unit, int max_side = 1024,
                      const std::string& protected_input = {});

}  // namespace io
