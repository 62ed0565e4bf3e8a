// The `.npy` reader and writer: strict header parsing, every size checked against the data.
// SPDX-License-Identifier: Apache-2.0
#include "tl/support/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace tl::support::npy {
namespace {

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
  std::stringstream ss(tuple.substr(1, tuple.size() - 2));
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

std::string canonical_descr(const std::string &descr) {
  if (descr.size() != 3 || descr[0] != '=')
    return descr;
  const std::string k = descr.substr(1);
  return (k == "b1" || k == "i1" || k == "u1" ? "|" : "<") + k;
}

int descr_size(const std::string &descr) {
  const std::string d = canonical_descr(descr);
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|'))
    return 0;
  const std::string k = d.substr(1);
  // One-byte types are written '|' by NumPy, wider ones '<'.
  if (k == "b1" || k == "i1" || k == "u1")
    return d[0] == '|' ? 1 : 0;
  if (d[0] != '<')
    return 0;
  if (k == "i2" || k == "u2" || k == "f2")
    return 2;
  if (k == "i4" || k == "u4" || k == "f4")
    return 4;
  if (k == "i8" || k == "u8" || k == "f8")
    return 8;
  return 0;
}

uint64_t data_bytes(const std::string &descr, const std::vector<int64_t> &shape,
                    const std::string &what) {
  const int size = descr_size(descr);
  if (size == 0)
    throw NpyError(what + ": unsupported dtype '" + descr + "'");
  uint64_t bytes = static_cast<uint64_t>(size);
  for (int64_t dim : shape) {
    if (dim < 0)
      throw NpyError(what + ": negative dimension " + std::to_string(dim));
    if (dim != 0 && bytes > (uint64_t(1) << 40) / static_cast<uint64_t>(dim))
      throw NpyError(what + ": array is too large (over 2^40 bytes)");
    bytes *= static_cast<uint64_t>(dim);
  }
  return bytes;
}

Array parse(std::string bytes, const std::string &what) {
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
  if (header_len > bytes.size() - header_at)
    throw NpyError(what + ": truncated header");
  const std::string header = bytes.substr(header_at, header_len);
  Array a;
  a.descr = canonical_descr(dict_value(header, "descr", what));
  if (dict_value(header, "fortran_order", what) != "False")
    throw NpyError(what + ": Fortran-order arrays are not supported (save with C order)");
  const std::string shape_text = dict_value(header, "shape", what);
  if (shape_text.empty() || shape_text.front() != '(')
    throw NpyError(what + ": shape is not a tuple");
  a.shape = parse_shape(shape_text, what);
  // Checked before any allocation: a small file cannot make us reserve what its shape claims.
  const uint64_t need = data_bytes(a.descr, a.shape, what);
  const size_t data_at = header_at + header_len;
  if (bytes.size() - data_at != need)
    throw NpyError(what + ": data holds " + std::to_string(bytes.size() - data_at) +
                   " bytes but shape " + shape_text + " of " + a.descr + " needs " +
                   std::to_string(need) +
                   (bytes.size() - data_at < need ? " (truncated file)" : ""));
  bytes.erase(0, data_at);
  a.data = std::move(bytes);
  return a;
}

Array load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw NpyError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

void save(const std::string &path, const Array &a) {
  const uint64_t need = data_bytes(a.descr, a.shape, path);
  if (a.data.size() != need)
    throw NpyError(path + ": " + std::to_string(a.data.size()) + " data bytes for a shape that " +
                   "needs " + std::to_string(need));
  std::string shape = "(";
  for (int64_t d : a.shape)
    shape += std::to_string(d) + ", ";
  if (a.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (a.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, as NumPy does.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw NpyError(path + ": cannot create file");
  const unsigned char pre[10] = {0x93,
                                 'N',
                                 'U',
                                 'M',
                                 'P',
                                 'Y',
                                 1,
                                 0,
                                 static_cast<unsigned char>(header.size() & 0xff),
                                 static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char *>(pre), 10);
  out << header;
  out.write(a.data.data(), static_cast<std::streamsize>(a.data.size()));
  if (!out)
    throw NpyError(path + ": write failed");
}

} // namespace tl::support::npy
