// The request and reply between the npusim plugin and its simulator process (one per launch).
// SPDX-License-Identifier: Apache-2.0
//
// A SystemC design elaborates once per process, and the HAL runs many launches in one process, so
// each launch runs in a fresh `tl-npusim-worker`. The plugin hands it the HBM file as fd 3, the
// request on stdin and reads the reply from fd 4. Plain C++17: the worker includes it too.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace tl::npusim::wire {

inline constexpr uint32_t kRequestMagic = 0x5750524e; // "NRPW"
inline constexpr int kHbmFd = 3;
inline constexpr int kReplyFd = 4; // not stdout: SystemC prints there

struct Range {
  uint64_t address = 0, size = 0;
};

struct Request {
  std::string config_path;
  uint8_t trace = 0;
  std::vector<uint64_t> program; ///< encoded instructions, run by every core
  std::vector<Range> ranges;     ///< HBM the launch may touch: copied in before, out after
};

struct Reply {
  uint32_t status = 0; ///< tl::npu::SimStatus
  uint64_t cycles = 0;
  std::string message, stats_json, trace_json;
  std::vector<uint64_t> assert_regs; ///< r31 of every core after the run (tnpu::kAssertReg)
};

class Writer {
public:
  template <class T> void put(const T &v) {
    const auto *p = reinterpret_cast<const char *>(&v);
    bytes.append(p, sizeof v);
  }
  void put(const std::string &s) {
    put<uint64_t>(s.size());
    bytes += s;
  }
  std::string bytes;
};

class Reader {
public:
  explicit Reader(const std::string &b) : bytes_(b) {}
  template <class T> bool get(T &v) {
    if (bytes_.size() - pos_ < sizeof v)
      return false;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool get(std::string &s) {
    uint64_t n = 0;
    if (!get(n) || bytes_.size() - pos_ < n)
      return false;
    s.assign(bytes_, pos_, n);
    pos_ += n;
    return true;
  }

private:
  const std::string &bytes_;
  size_t pos_ = 0;
};

inline std::string encode(const Request &r) {
  Writer w;
  w.put(kRequestMagic);
  w.put(r.config_path);
  w.put(r.trace);
  w.put<uint64_t>(r.program.size());
  for (uint64_t word : r.program)
    w.put(word);
  w.put<uint64_t>(r.ranges.size());
  for (const Range &x : r.ranges)
    w.put(x);
  return w.bytes;
}

inline bool decode(const std::string &bytes, Request &r) {
  Reader in(bytes);
  uint32_t magic = 0;
  uint64_t n = 0;
  if (!in.get(magic) || magic != kRequestMagic || !in.get(r.config_path) || !in.get(r.trace) ||
      !in.get(n))
    return false;
  r.program.resize(n);
  for (uint64_t &word : r.program)
    if (!in.get(word))
      return false;
  if (!in.get(n))
    return false;
  r.ranges.resize(n);
  for (Range &x : r.ranges)
    if (!in.get(x))
      return false;
  return true;
}

inline std::string encode(const Reply &r) {
  Writer w;
  w.put(r.status);
  w.put(r.cycles);
  w.put(r.message);
  w.put(r.stats_json);
  w.put(r.trace_json);
  w.put<uint64_t>(r.assert_regs.size());
  for (uint64_t v : r.assert_regs)
    w.put(v);
  return w.bytes;
}

inline bool decode(const std::string &bytes, Reply &r) {
  Reader in(bytes);
  uint64_t n = 0;
  if (!in.get(r.status) || !in.get(r.cycles) || !in.get(r.message) || !in.get(r.stats_json) ||
      !in.get(r.trace_json) || !in.get(n) || n > 4096)
    return false;
  r.assert_regs.resize(n);
  for (uint64_t &v : r.assert_regs)
    if (!in.get(v))
      return false;
  return true;
}

inline bool write_all(int fd, const std::string &s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

inline std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno != EINTR)
      break;
    if (n > 0)
      out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

} // namespace tl::npusim::wire
