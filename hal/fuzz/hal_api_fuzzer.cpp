// libFuzzer target: random HAL call sequences on the cpu device through the validation layer.
// The input is a program of calls (buffers, streams, events, copies, fills, executables, kernel
// queries and launches) whose handles come from live, released, null or made-up values and whose
// sizes, offsets, shapes and strides are arbitrary. Every call must return success or a status
// with a documented code and a message; INTERNAL (a bug in TL), a crash, a hang or a sanitizer
// report is a finding. Host pointers are always real (the C API cannot check those).
// SPDX-License-Identifier: Apache-2.0
#include "tl/hal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

/// Reads the fuzzer input as a stream of values; zeros once it runs out.
class Input {
public:
  Input(const uint8_t *data, size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = v << 8 | u8();
    return v;
  }
  /// Mostly small values, sometimes huge or boundary ones.
  uint64_t size() {
    switch (u8() % 8) {
    case 0:
      return 0;
    case 1:
      return u64();
    case 2:
      return ~uint64_t{0} - u8();
    default:
      return u8() | static_cast<uint64_t>(u8() % 64) << 8; // < 16 KiB
    }
  }
  int64_t small_signed() { return static_cast<int8_t>(u8()); }

private:
  const uint8_t *p_, *end_;
};

/// Checks one status: null, or a documented code other than INTERNAL with a message.
void check(tl_status s, const char *call) {
  if (s == nullptr)
    return;
  const tl_status_code code = tl_status_get_code(s);
  const char *message = tl_status_get_message(s);
  if (code <= TL_STATUS_OK || code > TL_STATUS_ABORTED || code == TL_STATUS_INTERNAL ||
      message == nullptr || message[0] == '\0') {
    std::fprintf(stderr, "%s: status %d (%s): %s\n", call, static_cast<int>(code),
                 tl_status_code_name(code), message ? message : "(null)");
    std::abort();
  }
  tl_status_free(s);
}

struct Env {
  tl_runtime runtime = nullptr;
  tl_device device = nullptr;
  std::vector<uint8_t> executable; // the seed llvm-cpu executable, if it was found
};

Env &env() {
  static Env e = [] {
    Env e;
    tl_runtime_options o = {sizeof(o), nullptr, 1}; // validation on
    check(tl_runtime_create(&o, &e.runtime), "tl_runtime_create");
    check(tl_runtime_device_find(e.runtime, "cpu", &e.device), "tl_runtime_device_find");
    if (e.device == nullptr) {
      std::fprintf(stderr, "hal_api_fuzzer: no cpu device (set TL_PLUGIN_PATH to the cpu plugin, "
                           "build/lib/libtl_plugin_cpu.so)\n");
      std::exit(2);
    }
    std::ifstream in(TL_HAL_FUZZ_EXECUTABLE, std::ios::binary);
    e.executable.assign(std::istreambuf_iterator<char>(in), {});
    return e;
  }();
  return e;
}

/// A handle for a call: a live or released one from `pool`, null, or a made-up value.
template <class H> H pick(Input &in, const std::vector<H> &pool) {
  const uint8_t k = in.u8();
  if (k < 200 && !pool.empty())
    return pool[k % pool.size()];
  if (k < 230)
    return nullptr;
  return reinterpret_cast<H>(static_cast<uintptr_t>(in.u64()));
}

struct State {
  std::vector<tl_buffer> buffers;
  std::vector<tl_stream> streams;
  std::vector<tl_event> events;
  std::vector<tl_executable> executables;
  std::vector<uint8_t> host = std::vector<uint8_t>(1 << 16);
};

/// Host memory for a copy of `size` bytes: a real block, or null for sizes that do not fit it.
uint8_t *host_for(State &s, Input &in, uint64_t size) {
  if (in.u8() % 16 == 0 || size > s.host.size())
    return nullptr;
  return s.host.data();
}

void launch(Env &e, State &s, Input &in) {
  tl_arg args[6] = {};
  const uint32_t n = in.u8() % 7;
  for (uint32_t i = 0; i < 6; ++i) {
    tl_arg &a = args[i];
    a.struct_size = in.u8() % 16 == 0 ? in.u8() : sizeof(tl_arg);
    a.kind = in.u8() % 3;
    a.dtype = in.u8() % 24;
    a.buffer = pick(in, s.buffers);
    a.offset_bytes = in.size();
    a.rank = in.u8() % 10;
    for (int d = 0; d < TL_HAL_MAX_RANK; ++d) {
      a.shape[d] = in.u8() % 8 == 0 ? static_cast<int64_t>(in.u64()) : in.small_signed();
      a.strides[d] = in.u8() % 8 == 0 ? static_cast<int64_t>(in.u64()) : in.small_signed();
    }
    a.i = static_cast<int64_t>(in.u64());
    a.f = static_cast<double>(in.small_signed());
  }
  tl_launch_desc d = {};
  d.struct_size = in.u8() % 16 == 0 ? in.u8() : sizeof(d);
  d.kernel = in.u8() % 4;
  for (uint64_t &g : d.grid)
    g = in.u8() % 16 == 0 ? in.u64() : in.u8() % 4;
  d.args = in.u8() % 16 == 0 ? nullptr : args;
  d.arg_count = n;
  check(tl_stream_launch(pick(in, s.streams), pick(in, s.executables), &d), "tl_stream_launch");
  (void)e;
}

void step(Env &e, State &s, Input &in) {
  switch (in.u8() % 22) {
  case 0: {
    // Small, or beyond any device's memory: sizes the host could really allocate (GiBs) would
    // only measure this machine's memory.
    uint64_t size = in.size();
    if (size > (uint64_t{1} << 16) && size < (uint64_t{1} << 48))
      size &= 0xffff;
    tl_buffer_desc d = {sizeof(d), size, static_cast<uint32_t>(in.u8() % 5)};
    if (in.u8() % 16 == 0)
      d.struct_size = in.u8();
    tl_buffer b = nullptr;
    check(tl_buffer_create(in.u8() % 16 == 0 ? nullptr : e.device, &d, &b), "tl_buffer_create");
    if (b != nullptr)
      s.buffers.push_back(b);
    break;
  }
  case 1:
    check(tl_buffer_release(pick(in, s.buffers)), "tl_buffer_release");
    break;
  case 2: {
    uint64_t size = 0;
    check(tl_buffer_size(pick(in, s.buffers), &size), "tl_buffer_size");
    break;
  }
  case 3: {
    void *p = nullptr;
    check(tl_buffer_map(pick(in, s.buffers), &p), "tl_buffer_map");
    break;
  }
  case 4: {
    tl_stream st = nullptr;
    check(tl_stream_create(e.device, &st), "tl_stream_create");
    if (st != nullptr)
      s.streams.push_back(st);
    break;
  }
  case 5:
    check(tl_stream_release(pick(in, s.streams)), "tl_stream_release");
    break;
  case 6:
    check(tl_stream_synchronize(pick(in, s.streams)), "tl_stream_synchronize");
    break;
  case 7: {
    tl_stream st = pick(in, s.streams);
    tl_buffer b = pick(in, s.buffers);
    const uint64_t off = in.size(), size = in.size();
    check(tl_stream_copy_to_device(st, host_for(s, in, size), b, off, size),
          "tl_stream_copy_to_device");
    break;
  }
  case 8: {
    tl_stream st = pick(in, s.streams);
    tl_buffer b = pick(in, s.buffers);
    const uint64_t off = in.size(), size = in.size();
    check(tl_stream_copy_to_host(st, b, off, host_for(s, in, size), size),
          "tl_stream_copy_to_host");
    break;
  }
  case 9: {
    tl_stream st = pick(in, s.streams);
    tl_buffer a = pick(in, s.buffers), b = pick(in, s.buffers);
    const uint64_t ao = in.size(), bo = in.size(), size = in.size();
    check(tl_stream_copy_buffer(st, a, ao, b, bo, size), "tl_stream_copy_buffer");
    break;
  }
  case 10: {
    tl_stream st = pick(in, s.streams);
    tl_buffer b = pick(in, s.buffers);
    const uint64_t off = in.size(), size = in.size(), pattern = in.u64();
    const uint32_t psize = in.u8() % 9;
    check(tl_stream_fill(st, b, off, size, &pattern, psize), "tl_stream_fill");
    break;
  }
  case 11: {
    tl_event ev = nullptr;
    check(tl_event_create(e.device, &ev), "tl_event_create");
    if (ev != nullptr)
      s.events.push_back(ev);
    break;
  }
  case 12:
    check(tl_event_release(pick(in, s.events)), "tl_event_release");
    break;
  case 13: {
    tl_stream st = pick(in, s.streams);
    check(tl_stream_record_event(st, pick(in, s.events)), "tl_stream_record_event");
    break;
  }
  case 14: {
    tl_stream st = pick(in, s.streams);
    check(tl_stream_wait_event(st, pick(in, s.events)), "tl_stream_wait_event");
    break;
  }
  case 15: {
    int32_t done = 0;
    check(tl_event_query(pick(in, s.events), &done), "tl_event_query");
    break;
  }
  case 16:
    check(tl_event_synchronize(pick(in, s.events)), "tl_event_synchronize");
    break;
  case 17: {
    double ms = 0;
    tl_event a = pick(in, s.events), b = pick(in, s.events);
    check(tl_event_elapsed_ms(a, b, &ms), "tl_event_elapsed_ms");
    break;
  }
  case 18: {
    // The seed executable, a prefix of it, or a copy with one byte changed.
    std::vector<uint8_t> bytes = e.executable;
    const uint8_t how = in.u8() % 4;
    if (how == 1 && !bytes.empty())
      bytes.resize(in.u64() % bytes.size());
    if (how == 2 && !bytes.empty())
      bytes[in.u64() % bytes.size()] ^= static_cast<uint8_t>(in.u8() | 1);
    tl_executable x = nullptr;
    check(tl_executable_load(e.device, how == 3 ? nullptr : bytes.data(), bytes.size(), &x),
          "tl_executable_load");
    if (x != nullptr)
      s.executables.push_back(x);
    break;
  }
  case 19:
    check(tl_executable_release(pick(in, s.executables)), "tl_executable_release");
    break;
  case 20: {
    tl_executable x = pick(in, s.executables);
    uint32_t count = 0, index = 0;
    tl_kernel_info ki = {};
    tl_param_info pi = {};
    ki.struct_size = sizeof(ki);
    pi.struct_size = sizeof(pi);
    if (in.u8() % 8 == 0)
      ki.struct_size = pi.struct_size = in.u8();
    check(tl_executable_kernel_count(x, &count), "tl_executable_kernel_count");
    check(tl_executable_kernel_info(x, in.u8() % 4, &ki), "tl_executable_kernel_info");
    check(tl_executable_param_info(x, in.u8() % 4, in.u8() % 8, &pi), "tl_executable_param_info");
    const char *names[] = {"add", "vector_add", "", "\xff"};
    check(tl_executable_find_kernel(x, names[in.u8() % 4], &index), "tl_executable_find_kernel");
    break;
  }
  default:
    launch(e, s, in);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Env &e = env();
  State s;
  Input in(data, size);
  for (int calls = 0; !in.done() && calls < 64; ++calls)
    step(e, s, in);
  // Release what is still live (releasing drains the streams); double releases are errors.
  for (tl_stream st : s.streams)
    check(tl_stream_release(st), "tl_stream_release (cleanup)");
  for (tl_event ev : s.events)
    check(tl_event_release(ev), "tl_event_release (cleanup)");
  for (tl_executable x : s.executables)
    check(tl_executable_release(x), "tl_executable_release (cleanup)");
  for (tl_buffer b : s.buffers)
    check(tl_buffer_release(b), "tl_buffer_release (cleanup)");
  return 0;
}
