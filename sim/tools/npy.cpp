// Minimal .npy I/O (see npy.h).
// SPDX-License-Identifier: Apache-2.0
#include "npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace tl::npu::npy {
namespace {

std::string value_of(const std::string &header, const std::string &key, const std::string &path) {
  size_t p = header.find("'" + key + "'");
  if (p == std::string::npos)
    throw std::runtime_error(path + ": .npy header has no '" + key + "'");
  p = header.find(':', p) + 1;
  while (header[p] == ' ')
    ++p;
  size_t e = header[p] == '(' ? header.find(')', p) + 1 : header.find_first_of(",}", p);
  return header.substr(p, e - p);
}

} // namespace

int descr_size(const std::string &d) {
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|'))
    return 0;
  const std::string k = d.substr(1);
  if (k == "b1" || k == "i1" || k == "u1")
    return 1;
  if (k == "i2" || k == "u2" || k == "f2")
    return 2;
  if (k == "i4" || k == "u4" || k == "f4")
    return 4;
  if (k == "i8" || k == "u8" || k == "f8")
    return 8;
  return 0;
}

Array load(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error(path + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, off;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    off = 10;
  } else {
    uint32_t h;
    std::memcpy(&h, &bytes[8], 4);
    hlen = h;
    off = 12;
  }
  if (off + hlen > bytes.size())
    throw std::runtime_error(path + ": truncated header");
  const std::string header = bytes.substr(off, hlen);
  Array a;
  std::string d = value_of(header, "descr", path);
  a.descr = d.substr(1, d.size() - 2);
  if (descr_size(a.descr) == 0)
    throw std::runtime_error(path + ": unsupported dtype " + d);
  if (value_of(header, "fortran_order", path) != "False")
    throw std::runtime_error(path + ": Fortran order is not supported");
  std::string shape = value_of(header, "shape", path);
  uint64_t count = 1;
  for (size_t p = 1; p < shape.size();) {
    size_t e = shape.find_first_of(",)", p);
    std::string item = shape.substr(p, e - p);
    if (item.find_first_not_of(' ') != std::string::npos) {
      a.shape.push_back(std::stoull(item));
      count *= a.shape.back();
    }
    p = e + 1;
  }
  const uint64_t n = count * descr_size(a.descr);
  if (bytes.size() - off - hlen != n)
    throw std::runtime_error(path + ": data size does not match shape " + shape);
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(off + hlen), bytes.end());
  return a;
}

void save(const std::string &path, const Array &a) {
  std::ostringstream h;
  h << "{'descr': '" << a.descr << "', 'fortran_order': False, 'shape': (";
  for (uint64_t s : a.shape)
    h << s << (a.shape.size() == 1 ? "," : (&s == &a.shape.back() ? "" : ", "));
  h << "), }";
  std::string header = h.str();
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error(path + ": cannot write");
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char *>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char *>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
}

} // namespace tl::npu::npy
