// Helpers for the project's small versioned text files (FNN models, samples, DTPS ratios):
// a checksum, exact number formatting, and fields quoted safely in one-line errors.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace fnn::text {

// FNV-1a, 64 bits: detects corrupted files (not an integrity guarantee against tampering).
inline std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

inline std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Shortest text that reads back to the same double.
inline std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A field as quoted in an error message: control characters replaced and long fields
// shortened, so the message stays one short line.
inline std::string shown(std::string_view s) {
  std::string out(s.substr(0, 40));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (s.size() > 40) out.replace(37, 3, "...");
  return out;
}

}  // namespace fnn::text
