#include "apps/io/x3p.hpp"

#include <openssl/evp.h>
#include <tinyxml2.h>
#include <unistd.h>
#include <zip.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "apps/io/output.hpp"

namespace io {
namespace {

namespace fs = std::filesystem;
using tinyxml2::XMLElement;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

ZipPtr open_zip(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such file");
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    fail(path, "not a readable X3P file (zip: " + why + ")");
  }
  return ZipPtr(z);
}

// The whole of zip entry `name`; its size must be `expected` bytes where that is not 0.
std::vector<unsigned char> read_entry(zip_t* z, const std::string& path, const std::string& name,
                                      std::uint64_t expected = 0) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, name.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    fail(path, "the zip holds no " + name);
  if (expected != 0 && st.size != expected)
    fail(path, name + " holds " + std::to_string(st.size) + " bytes, but main.xml's axes and data type need " +
                   std::to_string(expected));
  std::vector<unsigned char> buf(st.size);
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (!f) fail(path, "cannot open " + name + " in the zip (" + zip_strerror(z) + ")");
  std::uint64_t done = 0;
  while (done < st.size) {
    const zip_int64_t got = zip_fread(f, buf.data() + done, st.size - done);
    if (got <= 0) {
      const std::string why = zip_file_strerror(f);
      zip_fclose(f);
      fail(path, name + " is damaged (zip: " + why + ")");
    }
    done += std::uint64_t(got);
  }
  // libzip checks the entry's CRC-32 when a read meets its end: the read past the last byte
  // is what catches a damaged entry (the only check where main.xml carries no MD5).
  unsigned char past = 0;
  if (zip_fread(f, &past, 1) != 0) {
    const std::string why = zip_file_strerror(f);
    zip_fclose(f);
    fail(path, name + " is damaged (zip: " + why + ")");
  }
  zip_fclose(f);
  return buf;
}

// Element at a '/'-separated path below `e`, or null.
const XMLElement* find(const XMLElement* e, const std::string& at) {
  std::stringstream parts(at);
  std::string part;
  while (e && std::getline(parts, part, '/')) e = e->FirstChildElement(part.c_str());
  return e;
}

std::string text(const std::string& path, const XMLElement* root, const std::string& at) {
  const XMLElement* e = find(root, at);
  if (!e || !e->GetText()) fail(path, "main.xml lacks " + at);
  std::string t = e->GetText();
  const auto b = t.find_first_not_of(" \t\r\n"), end = t.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : t.substr(b, end - b + 1);
}

double number(const std::string& path, const XMLElement* root, const std::string& at) {
  const std::string t = text(path, root, at);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !std::isfinite(v)) fail(path, "main.xml's " + at + " is not a number: '" + t + "'");
  return v;
}

// An optional field: `fallback` where main.xml lacks it.
double number_or(const std::string& path, const XMLElement* root, const std::string& at, double fallback) {
  return find(root, at) ? number(path, root, at) : fallback;
}

long long count(const std::string& path, const XMLElement* root, const std::string& at) {
  const std::string t = text(path, root, at);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno == ERANGE || v < 1)
    fail(path, "main.xml's " + at + " must be a positive integer, got '" + t + "'");
  return v;
}

// MD5 (the checksum ISO 25178-72 uses) through OpenSSL, which libzip already links.
std::string md5_hex(const void* data, std::size_t n) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(data, n, d, &len, EVP_md5(), nullptr) != 1) throw std::runtime_error("MD5 is not available");
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

bool same_hex(std::string a, std::string b) {
  for (auto* s : {&a, &b})
    for (char& ch : *s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return a == b;
}

template <typename T>
T load_le(const unsigned char* p) {  // little-endian hosts only (npy.cpp checks the same)
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

[[noreturn]] void fail_out(const std::string& path, const std::string& what) {
  throw OutputError(path + ": " + what);
}

}  // namespace

namespace {

// What main.xml says about the heights (ISO 25178-72 Record1 and Record3).
struct Header {
  double dx = 0, dy = 0, z_inc = 1, z_off = 0;
  char type = 0;  // I, L, F or D
  std::size_t bytes = 0;
  int rows = 0, cols = 0;
  std::string data_name, data_md5, valid_name;  // md5 and valid_name may be empty
};

Header parse_main_xml(const std::string& path, const std::vector<unsigned char>& xml) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(reinterpret_cast<const char*>(xml.data()), xml.size()) != tinyxml2::XML_SUCCESS)
    fail(path, std::string("main.xml is not well-formed XML (") + doc.ErrorStr() + ")");
  const XMLElement* root = doc.RootElement();
  const std::string root_name = root ? root->Name() : "";
  if (root_name.size() < 9 || root_name.compare(root_name.size() - 9, 9, "ISO5436_2") != 0)
    fail(path, "main.xml's root is '" + root_name + "', not ISO5436_2");
  if (const std::string t = text(path, root, "Record1/FeatureType"); t != "SUR")
    fail(path, "FeatureType is " + t + "; only areal surfaces (SUR) are supported");
  for (const char* axis : {"CX", "CY"})
    if (text(path, root, std::string("Record1/Axes/") + axis + "/AxisType") != "I")
      fail(path, std::string("axis ") + axis + " is not incremental (AxisType I): not a regular grid");
  Header h;
  h.dx = number(path, root, "Record1/Axes/CX/Increment");
  h.dy = number(path, root, "Record1/Axes/CY/Increment");
  if (!(h.dx > 0) || !(h.dy > 0)) fail(path, "the X and Y increments must be positive");
  const std::string type = text(path, root, "Record1/Axes/CZ/DataType");
  h.bytes = type == "I" ? 2 : type == "L" ? 4 : type == "F" ? 4 : type == "D" ? 8 : 0;
  if (h.bytes == 0) fail(path, "CZ DataType '" + type + "' is not I, L, F or D");
  h.type = type[0];
  h.z_inc = number_or(path, root, "Record1/Axes/CZ/Increment", 1.0);
  h.z_off = number_or(path, root, "Record1/Axes/CZ/Offset", 0.0);
  const long long cols = count(path, root, "Record3/MatrixDimension/SizeX");
  const long long rows = count(path, root, "Record3/MatrixDimension/SizeY");
  if (count(path, root, "Record3/MatrixDimension/SizeZ") != 1)
    fail(path, "SizeZ is not 1: only one layer of heights is supported");
  if (rows > std::numeric_limits<int>::max() || cols > std::numeric_limits<int>::max() ||
      double(rows) * double(cols) > 1e12)
    fail(path, "the matrix " + std::to_string(cols) + " x " + std::to_string(rows) + " is too large");
  h.rows = int(rows);
  h.cols = int(cols);
  h.data_name = text(path, root, "Record3/DataLink/PointDataLink");
  auto optional = [&](const char* at) {
    const XMLElement* e = find(root, at);
    return e && e->GetText() ? text(path, root, at) : std::string();
  };
  h.data_md5 = optional("Record3/DataLink/MD5ChecksumPointData");
  h.valid_name = optional("Record3/DataLink/ValidPointsLink");
  return h;
}

// Heights = offset + increment * value; a point is invalid where its valid bit is 0 or its
// value is not finite. A valid height beyond float32's range (the transform's type) is refused
// with its place, not made invalid. Returns the invalid points.
template <typename T>
std::size_t decode(const std::string& path, const Header& h, const unsigned char* data,
                   const std::vector<unsigned char>& valid, float* out) {
  const std::size_t n = std::size_t(h.rows) * std::size_t(h.cols);
  std::size_t invalid = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double raw = double(load_le<T>(data + i * sizeof(T)));
    const bool ok = std::isfinite(raw) && (valid.empty() || (valid[i / 8] >> (i % 8)) & 1u);
    const double z = h.z_off + h.z_inc * raw;
    if (ok && !(std::fabs(z) <= double(std::numeric_limits<float>::max()))) {
      char at[160];
      std::snprintf(at, sizeof at, "the height %.6g at row %zu, column %zu is beyond float32's range (lwt2d computes in float32)",
                    z, i / std::size_t(h.cols), i % std::size_t(h.cols));
      fail(path, at);
    }
    out[i] = ok ? float(z) : std::numeric_limits<float>::quiet_NaN();
    invalid += !ok;
  }
  return invalid;
}

}  // namespace

X3pSurface read_x3p(const std::string& path) {
  ZipPtr zip = open_zip(path);
  const Header h = parse_main_xml(path, read_entry(zip.get(), path, "main.xml"));
  const std::size_t n = std::size_t(h.rows) * std::size_t(h.cols);
  const std::vector<unsigned char> data = read_entry(zip.get(), path, h.data_name, n * h.bytes);
  if (!h.data_md5.empty() && !same_hex(h.data_md5, md5_hex(data.data(), data.size())))
    fail(path, h.data_name + " does not match its MD5 checksum in main.xml: the file is damaged");
  std::vector<unsigned char> valid;
  if (!h.valid_name.empty()) valid = read_entry(zip.get(), path, h.valid_name, (n + 7) / 8);
  X3pSurface s;
  s.dx = h.dx;
  s.dy = h.dy;
  s.z.rows = h.rows;
  s.z.cols = h.cols;
  s.z.data.resize(n);
  float* out = s.z.data.data();
  s.invalid = h.type == 'I'   ? decode<std::int16_t>(path, h, data.data(), valid, out)
              : h.type == 'L' ? decode<std::int32_t>(path, h, data.data(), valid, out)
              : h.type == 'F' ? decode<float>(path, h, data.data(), valid, out)
                              : decode<double>(path, h, data.data(), valid, out);
  return s;
}

namespace {

std::string main_xml(int rows, int cols, double dx, double dy, const std::string& data_md5) {
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration("xml version=\"1.0\" encoding=\"UTF-8\""));
  XMLElement* root = doc.NewElement("p:ISO5436_2");
  root->SetAttribute("xmlns:p", "http://www.opengps.eu/2008/ISO5436_2");
  doc.InsertEndChild(root);
  auto add = [&](XMLElement* parent, const char* name, const std::string& value = {}) {
    XMLElement* e = doc.NewElement(name);
    if (!value.empty()) e->SetText(value.c_str());
    parent->InsertEndChild(e);
    return e;
  };
  auto num = [](double v) {  // the shortest of 15-17 digits that reads back as v
    char b[32];
    for (int digits = 15; digits <= 17; ++digits) {
      std::snprintf(b, sizeof b, "%.*g", digits, v);
      if (std::strtod(b, nullptr) == v) break;
    }
    return std::string(b);
  };
  XMLElement* r1 = add(root, "Record1");
  add(r1, "Revision", "ISO5436 - 2000");
  add(r1, "FeatureType", "SUR");
  XMLElement* axes = add(r1, "Axes");
  for (auto [name, inc] : {std::pair{"CX", dx}, std::pair{"CY", dy}}) {
    XMLElement* a = add(axes, name);
    add(a, "AxisType", "I");
    add(a, "DataType", "D");
    add(a, "Increment", num(inc));
    add(a, "Offset", "0");
  }
  XMLElement* cz = add(axes, "CZ");
  add(cz, "AxisType", "A");
  add(cz, "DataType", "D");
  // Record2 as the schema orders it; the "instrument" is this program.
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  XMLElement* r2 = add(root, "Record2");
  add(r2, "Date", date);
  add(r2, "Creator", "lwt2d");
  XMLElement* inst = add(r2, "Instrument");
  add(inst, "Manufacturer", "fnndtps");
  add(inst, "Model", "lwt2d");
  add(inst, "Serial", "-");
  add(inst, "Version", "0.1");
  add(r2, "CalibrationDate", date);
  XMLElement* probe = add(r2, "ProbingSystem");
  add(probe, "Type", "Software");
  add(probe, "Identification", "lwt2d wavelet filter");
  add(r2, "Comment", "written by lwt2d (CDF 9/7 wavelet filtering, synthetic surfaces)");
  XMLElement* r3 = add(root, "Record3");
  XMLElement* dim = add(r3, "MatrixDimension");
  add(dim, "SizeX", std::to_string(cols));
  add(dim, "SizeY", std::to_string(rows));
  add(dim, "SizeZ", "1");
  XMLElement* link = add(r3, "DataLink");
  add(link, "PointDataLink", "bindata/data.bin");
  add(link, "MD5ChecksumPointData", data_md5);
  add(add(root, "Record4"), "ChecksumFile", "md5checksum.hex");
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
}

}  // namespace

void write_x3p(const std::string& path, int rows, int cols, const float* z, double dx, double dy,
               const std::string& protected_input) {
  if (rows <= 0 || cols <= 0 || !z) fail_out(path, "nothing to write");
  if (!protected_input.empty() && same_file(path, protected_input))
    fail_out(path, "refusing to overwrite the input file " + protected_input + "; choose a different output path");
  const std::size_t n = std::size_t(rows) * std::size_t(cols);
  std::vector<double> heights(z, z + n);  // little-endian hosts, as the reader
  const std::string xml = main_xml(rows, cols, dx, dy, md5_hex(heights.data(), n * sizeof(double)));
  const std::string xml_md5 = md5_hex(xml.data(), xml.size()) + " *main.xml\n";
  // libzip writes its own temporary (<name>.XXXXXX) beside the file it makes: both go in a
  // folder of ours, which a signal or a failure removes whole.
  base::AtomicFile file(path, base::AtomicFile::kInFolder);
  if (const int e = file.prepare())
    fail_out(path, "cannot create " + file.temp() + " (" + std::strerror(e) +
                       "); check that the directory exists and is writable");
  const std::string& tmp = file.temp();
  int err = 0;
  zip_t* zip = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  if (!zip) fail_out(path, "cannot create " + tmp + "; check that the directory exists and is writable");
  auto add = [&](const char* name, const void* data, std::size_t size, bool store) {
    zip_source_t* src = zip_source_buffer(zip, data, size, 0);
    const zip_int64_t idx = src ? zip_file_add(zip, name, src, ZIP_FL_ENC_UTF_8) : -1;
    if (idx < 0) {
      if (src) zip_source_free(src);
      return false;
    }
    return !store || zip_set_file_compression(zip, zip_uint64_t(idx), ZIP_CM_STORE, 0) == 0;
  };
  // Heights are stored uncompressed: deflating float noise gains little and costs much.
  if (!add("main.xml", xml.data(), xml.size(), false) ||
      !add("md5checksum.hex", xml_md5.data(), xml_md5.size(), false) ||
      !add("bindata/data.bin", heights.data(), n * sizeof(double), true)) {
    const std::string why = zip_strerror(zip);
    zip_discard(zip);
    fail_out(path, "cannot build the X3P zip (" + why + ")");
  }
  if (zip_close(zip) != 0) {
    const std::string why = zip_strerror(zip);
    zip_discard(zip);
    fail_out(path, "write failed (" + why + "); check free disk space and permissions");
  }
  if (const int e = file.commit())
    fail_out(path, std::string("cannot move the finished file into place (") + std::strerror(e) + ")");
}

}  // namespace io
