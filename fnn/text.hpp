// Helpers for the project's small versioned text files (FNN models, samples, DTPS ratios):
// a bounded read, a checksum, exact number formatting, fields quoted safely in one-line
// errors, and an atomic replace of a file.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <stdexcept>
#include <string>
#include <cmath>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/atomic_file.hpp"

namespace fnn::text {

// `in` to its end, or its first `most` + 1 bytes where it is longer (the caller refuses a text
// whose size() > most). In blocks: a file of a few KB costs a few KB, not a `most`-sized
// buffer zeroed (a policy reads its models on a program's first task of each codelet).
inline std::string read_at_most(std::istream& in, std::size_t most) {
  std::string text;
  char block[16384];
  while (text.size() <= most && (in.read(block, sizeof block), in.gcount() > 0))
    text.append(block, static_cast<std::size_t>(in.gcount()));
  if (text.size() > most + 1) text.resize(most + 1);
  return text;
}

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

// Replaces the file at `path` with `text` through a temporary file renamed over it: a reader
// (another process loading a model) never sees half a file, and a failed write leaves the old
// one. Throws std::runtime_error naming the file.
inline void replace_file(const std::string& path, const std::string& text) {
  if (const int err = base::replace_file(path, text))
    throw std::runtime_error("cannot replace " + path + ": " + std::strerror(err));
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

// Whitespace-separated tokens of one line.
inline std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (i < s.size()) {
    while (i < s.size() && space(s[i])) ++i;
    const std::size_t b = i;
    while (i < s.size() && !space(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

struct Line {
  std::size_t number = 0;  // 1-based
  std::size_t offset = 0;  // byte offset of its first character
  std::string_view text;
  std::vector<std::string_view> tokens;
};

// Reads "keyword value..." lines, skipping blank lines and '#' comments. Every defect throws
// Error("<prefix>:<line>: <what>"), one line.
template <typename Error>
class Parser {
 public:
  Parser(std::string_view text, std::string prefix) : text_(text), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw Error(prefix_ + ":" + std::to_string(line) + ": " + what);
  }

  // The next line that is neither blank nor a comment; `expected` names what should come
  // when the text ends first.
  Line next(const std::string& expected) {
    while (pos_ < text_.size()) {
      Line l;
      l.offset = pos_;
      l.number = ++line_;
      const std::size_t end = text_.find('\n', pos_);
      const std::size_t stop = end == std::string_view::npos ? text_.size() : end;
      l.text = text_.substr(pos_, stop - pos_);
      pos_ = end == std::string_view::npos ? text_.size() : end + 1;
      l.tokens = split(l.text);
      if (l.tokens.empty() || l.tokens[0][0] == '#') continue;
      return l;
    }
    throw Error(prefix_ + ": truncated after line " + std::to_string(line_) + ": expected " + expected);
  }

  // True when only blank lines are left.
  bool at_end() {
    while (pos_ < text_.size()) {
      const std::size_t end = text_.find('\n', pos_);
      const std::size_t stop = end == std::string_view::npos ? text_.size() : end;
      ++line_;
      if (!split(text_.substr(pos_, stop - pos_)).empty()) return false;
      pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    }
    return true;
  }
  std::size_t line() const { return line_; }

  // `what`, when given, names the field in the message.
  double real(const Line& l, std::string_view tok, const char* what = nullptr) const {
    double v = 0.0;
    const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size() || !std::isfinite(v))
      fail(l.number, named(what) + "'" + shown(tok) + "' is not a finite number");
    return v;
  }

  std::size_t count(const Line& l, std::string_view tok, const char* what = nullptr) const {
    std::size_t v = 0;
    const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size())
      fail(l.number, named(what) + "'" + shown(tok) + "' is not a non-negative integer");
    return v;
  }

  // Checks that l is `keyword` followed by `fields` values (`noun` in the message).
  void expect(const Line& l, std::string_view keyword, std::size_t fields, const std::string& shape,
              const char* noun = "values") const {
    if (l.tokens[0] != keyword) fail(l.number, "expected " + shape + ", found '" + shown(l.text) + "'");
    if (l.tokens.size() != fields + 1)
      fail(l.number, "expected " + shape + " (" + std::to_string(fields) + " " + noun + " after '" +
                         std::string(keyword) + "'), found " + std::to_string(l.tokens.size() - 1));
  }

 private:
  static std::string named(const char* what) { return what ? std::string(what) + " " : std::string(); }

  std::string_view text_;
  std::string prefix_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
};

}  // namespace fnn::text
