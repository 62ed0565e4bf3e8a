// The `.npy` reader and writer: strict header parsing, every size checked against the data.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npy/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace tl::npy {
using ir::ScalarKind;

namespace {

struct Descr {
  const char *text;
  ScalarKind kind;
};
constexpr Descr kDescrs[] = {
    {"|b1", ScalarKind::I1},  {"|i1", ScalarKind::I8},  {"<i2", ScalarKind::I16},
    {"<i4", ScalarKind::I32}, {"<i8", ScalarKind::I64}, {"|u1", ScalarKind::U8},
    {"<u2", ScalarKind::U16}, {"<u4", ScalarKind::U32}, {"<f2", ScalarKind::F16},
    {"<f4", ScalarKind::F32}, {"<f8", ScalarKind::F64},
};

/// Reads a Python literal value for `key` from the header dict text.
std::string dict_value(const std::string &header, const std::string &key, const std::string &what) {
  const std::string needle = "'" + key + "':";
  size_t p = header.find(needle);
  if (p == std::string::npos)
    throw NpyError(what + ": header has no '" + key + "' entry");
  p += needle.size();
  while (p < header.size() && header[p] == ' ')
    ++p;
  size_t end = p;
  if (p < header.size() && header[p] == '(') {
    end = header.find(')', p);
    if (end == std::string::npos)
      throw NpyError(what + ": unterminated shape tuple in header");
    return header.substr(p, end + 1 - p);
  }
  if (p < header.size() && header[p] == '\'') {
    end = header.find('\'', p + 1);
    if (end == std::string::npos)
      throw NpyError(what + ": unterminated string in header");
    return header.substr(p + 1, end - p - 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}')
    ++end;
  return header.substr(p, end - p);
}

std::vector<int64_t> parse_shape(const std::string &tuple, const std::string &what) {
  std::vector<int64_t> shape;
  std::string inner = tuple.substr(1, tuple.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos)
      continue; // trailing comma of a 1-tuple
    size_t b = item.find_last_not_of(' ');
    std::string num = item.substr(a, b - a + 1);
    if (num.empty() || num.size() > 15 || num.find_first_not_of("0123456789") != std::string::npos)
      throw NpyError(what + ": bad dimension '" + num + "' in shape " + tuple);
    shape.push_back(std::stoll(num));
  }
  return shape;
}

} // namespace

interp::HostTensor parse(const std::string &bytes, const std::string &what) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw NpyError(what + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_at;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw NpyError(what + ": truncated header");
    header_len = 0;
    for (int i = 3; i >= 0; --i)
      header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    header_at = 12;
  } else {
    throw NpyError(what + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_at + header_len > bytes.size())
    throw NpyError(what + ": truncated header");
  const std::string header = bytes.substr(header_at, header_len);
  const std::string descr = dict_value(header, "descr", what);
  if (dict_value(header, "fortran_order", what) != "False")
    throw NpyError(what + ": Fortran-order arrays are not supported (save with C order)");
  const std::string shape_text = dict_value(header, "shape", what);
  if (shape_text.empty() || shape_text.front() != '(')
    throw NpyError(what + ": shape is not a tuple");
  std::vector<int64_t> shape = parse_shape(shape_text, what);
  const Descr *d = nullptr;
  for (const Descr &c : kDescrs)
    if (descr == c.text || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == c.text + 1))
      d = &c;
  if (!d)
    throw NpyError(what + ": unsupported dtype '" + descr + "'");
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && n > (int64_t(1) << 40) / dim)
      throw NpyError(what + ": array is too large");
    n *= dim;
  }
  interp::HostTensor t(d->kind, shape);
  const size_t data_at = header_at + header_len;
  if (bytes.size() - data_at != t.size_bytes())
    throw NpyError(what + ": data holds " + std::to_string(bytes.size() - data_at) +
                   " bytes but shape " + shape_text + " of " + descr + " needs " +
                   std::to_string(t.size_bytes()) + (bytes.size() - data_at < t.size_bytes()
                                                         ? " (truncated file)"
                                                         : ""));
  std::memcpy(t.data(), bytes.data() + data_at, t.size_bytes());
  return t;
}

interp::HostTensor load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw NpyError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

void save(const std::string &path, const interp::HostTensor &tensor) {
  const interp::HostTensor *t = &tensor;
  interp::HostTensor widened;
  const ScalarKind k = tensor.dtype();
  if (k == ScalarKind::BF16 || k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2) {
    widened = tensor.converted(ScalarKind::F32);
    t = &widened;
  }
  const char *descr = nullptr;
  for (const Descr &c : kDescrs)
    if (c.kind == t->dtype())
      descr = c.text;
  std::string shape = "(";
  for (int64_t d : t->shape())
    shape += std::to_string(d) + ", ";
  if (t->shape().size() > 1)
    shape.resize(shape.size() - 2);
  else if (t->shape().size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, as NumPy does.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw NpyError(path + ": cannot create file");
  const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                 static_cast<unsigned char>(header.size() & 0xff),
                                 static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char *>(pre), 10);
  out << header;
  out.write(reinterpret_cast<const char *>(t->data()), static_cast<std::streamsize>(t->size_bytes()));
  if (!out)
    throw NpyError(path + ": write failed");
}

} // namespace tl::npy
