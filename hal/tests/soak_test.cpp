// Soak test of the HAL runtime and its plugins: threads x streams allocating, copying, launching
// vector add, recording and waiting events and freeing on cpu and npusim for a bounded time; every
// result is checked, and RSS, open fds and threads must be as after warm-up. An npusim simulator
// process killed mid-launch must fail that launch and nothing else.
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tl::hal::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double seconds = 20;      // total soak time
  double round_seconds = 2; // threads join between rounds: RSS, fds, threads are sampled there
  int threads = 4;          // per device
  double kill_every = 1.5;  // seconds between simulator kills during the soak (0: none)
  double rss_slack_mb = 32; // growth allowed from the warm-up sample to the end
  std::vector<std::string> devices{"cpu", "npusim"};
};

/// Ends the process at once, from any thread: other threads may still be mid-launch.
[[noreturn]] void fail(const std::string &what) {
  std::fflush(stdout);
  std::cerr << "soak: FAIL: " << what << std::endl;
  std::_Exit(1);
}

size_t count_dir(const char *path) {
  size_t n = 0;
  if (DIR *d = opendir(path)) {
    while (dirent *e = readdir(d))
      n += e->d_name[0] != '.';
    closedir(d);
  }
  return n > 0 ? n - (std::strcmp(path, "/proc/self/fd") == 0) : 0; // minus opendir's own fd
}

struct Sample {
  double rss_mb;
  size_t fds, threads;
};

Sample sample() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return {double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20), count_dir("/proc/self/fd"),
          count_dir("/proc/self/task")};
}

/// The pids of this process's live npusim simulator processes (comm is cut to 15 characters).
std::vector<pid_t> simulator_children() {
  std::vector<pid_t> out;
  DIR *d = opendir("/proc");
  if (!d)
    return out;
  while (dirent *e = readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0)
      continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    std::getline(f, line);
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    const std::string comm = line.substr(open + 1, close - open - 1);
    char state = 0;
    int ppid = 0;
    std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid);
    if (ppid == getpid() && comm.rfind("tl-npusim-work", 0) == 0 && state != 'Z')
      out.push_back(pid);
  }
  closedir(d);
  return out;
}

bool is_worker_death(const std::string &message) {
  return message.find("simulator process") != std::string::npos;
}

struct Target {
  Device device;
  std::vector<uint8_t> blob;
  Executable exe;
  uint32_t kernel = 0;
};

constexpr size_t kMaxDevices = 8;

struct Totals {
  std::atomic<uint64_t> launches{0}, checked_elements{0}, worker_errors{0}, kills{0};
  std::atomic<uint64_t> per_device[kMaxDevices] = {}; // launches, indexed like the targets
};

/// One iteration: buffers, events and a second stream made and freed; x + y * scale checked
/// element by element. Returns false when the launch failed because its simulator was killed.
bool iterate(Target &t, size_t index, Stream &a, Stream &b, std::mt19937 &rng, Totals &totals) {
  const int64_t n = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
  const float scale = std::ldexp(1.0f, std::uniform_int_distribution<int>(-3, 3)(rng));
  std::vector<float> x(n), y(n), out(n);
  std::uniform_real_distribution<float> val(-1e3f, 1e3f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = val(rng), y[i] = val(rng);
  const uint64_t bytes = uint64_t(n) * 4;
  Buffer bx = t.device.buffer(bytes), by = t.device.buffer(bytes), bo = t.device.buffer(bytes);
  Buffer staging = t.device.buffer(bytes);
  Event copied = t.device.event(), done = t.device.event();
  // Stream a: x straight in; y through a staging buffer; out poisoned with NaN so that a launch
  // that writes nothing is caught.
  a.copy_to_device(x.data(), bx, bytes);
  a.copy_to_device(y.data(), staging, bytes);
  check(tl_stream_copy_buffer(a.get(), staging.get(), 0, by.get(), 0, bytes));
  const uint32_t nan = 0x7fc00000u;
  check(tl_stream_fill(a.get(), bo.get(), 0, bytes, &nan, 4));
  a.record(copied);
  // Stream b: waits for a's copies, launches, copies back.
  b.wait(copied);
  b.launch(t.exe, t.kernel, {uint64_t((n + 255) / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, scale)});
  b.record(done);
  b.copy_to_host(bo, out.data(), bytes);
  totals.launches++;
  totals.per_device[index]++;
  try {
    done.synchronize();
    b.synchronize();
  } catch (const Error &e) {
    a.synchronize();
    if (!is_worker_death(e.what()))
      fail(std::string("launch failed: ") + e.what());
    totals.worker_errors++;
    return false;
  }
  a.synchronize();
  for (int64_t i = 0; i < n; ++i)
    if (out[i] != x[i] + y[i] * scale)
      fail(std::string(t.device.info().name) + ": wrong result at " + std::to_string(i) + " of " +
           std::to_string(n) + ": " + std::to_string(out[i]) + " instead of " +
           std::to_string(x[i] + y[i] * scale));
  totals.checked_elements += uint64_t(n);
  return true;
}

/// Kills the simulator of a launch in flight: the launch must fail with a clear error, and the
/// same stream must then run the next launch correctly (with a new simulator process).
void kill_mid_launch(Target &t, Totals &totals) {
  Stream s = t.device.stream();
  const int64_t n = 1 << 16;
  std::vector<float> x(n, 1.0f), out(n);
  Buffer bx = t.device.buffer(n * 4), bo = t.device.buffer(n * 4);
  s.copy_to_device(x.data(), bx, n * 4);
  s.synchronize();
  s.launch(t.exe, t.kernel, {uint64_t(n / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(bx, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 2.0)});
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  std::vector<pid_t> pids;
  while ((pids = simulator_children()).empty() && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  if (pids.empty())
    fail("no simulator process appeared for an npusim launch");
  kill(pids[0], SIGKILL);
  totals.kills++;
  try {
    s.synchronize();
    fail("the launch whose simulator was killed succeeded");
  } catch (const Error &e) {
    if (!is_worker_death(e.what()))
      fail(std::string("the killed launch failed with an unclear error: ") + e.what());
    std::cout << "soak: killed simulator " << pids[0] << ": " << tl_status_code_name(e.code())
              << ": " << e.what() << "\n";
  }
  s.launch(t.exe, t.kernel, {uint64_t(n / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(bx, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 2.0)});
  s.copy_to_host(bo, out.data(), n * 4);
  s.synchronize();
  for (int64_t i = 0; i < n; ++i)
    if (out[i] != 3.0f)
      fail("the launch after the killed one is wrong at " + std::to_string(i));
}

/// One round: `threads` workers per device, each with its own streams, for `seconds`.
void round(std::vector<Target> &targets, const Options &o, double seconds, uint64_t seed,
           Totals &totals) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (size_t d = 0; d < targets.size(); ++d)
    for (int w = 0; w < o.threads; ++w)
      workers.emplace_back([&, d, w] {
        std::mt19937 rng(static_cast<uint32_t>(seed * 1000 + d * 100 + w));
        Target &t = targets[d];
        try {
          Stream a = t.device.stream(), b = t.device.stream();
          for (int i = 0; Clock::now() < end; ++i) {
            iterate(t, d, a, b, rng, totals);
            if (i % 8 == 7) // streams come and go too
              b = t.device.stream();
          }
        } catch (const std::exception &e) {
          fail(std::string("worker: ") + e.what());
        }
      });
  std::thread killer;
  const bool kills = o.kill_every > 0 && std::any_of(targets.begin(), targets.end(), [](auto &t) {
                       return std::string(t.device.info().plugin) == "npusim";
                     });
  if (kills)
    killer = std::thread([&] {
      auto next = Clock::now() + std::chrono::duration<double>(o.kill_every);
      while (!stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (Clock::now() < next)
          continue;
        if (auto pids = simulator_children(); !pids.empty()) {
          kill(pids[0], SIGKILL);
          totals.kills++;
          next = Clock::now() + std::chrono::duration<double>(o.kill_every);
        }
      }
    });
  for (auto &w : workers)
    w.join();
  stop = true;
  if (killer.joinable())
    killer.join();
  // Each round also unloads and reloads the executables.
  for (Target &t : targets) {
    t.exe = t.device.load(t.blob.data(), t.blob.size());
    t.kernel = t.exe.find_kernel("vector_add");
  }
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seconds")
      o.seconds = std::stod(value());
    else if (a == "--round-seconds")
      o.round_seconds = std::stod(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--kill-every")
      o.kill_every = std::stod(value());
    else if (a == "--rss-slack-mb")
      o.rss_slack_mb = std::stod(value());
    else if (a == "--devices") {
      o.devices.clear();
      std::stringstream ss(value());
      for (std::string d; std::getline(ss, d, ',');)
        o.devices.push_back(d);
    } else
      fail("unknown option " + a +
           " (--seconds --round-seconds --threads --kill-every "
           "--rss-slack-mb --devices cpu,npusim)");
  }
  return o;
}

int run(int argc, char **argv) {
  const Options o = parse(argc, argv);
  Runtime rt(nullptr, /*validation=*/1);
  std::vector<Target> targets;
  if (o.devices.empty() || o.devices.size() > kMaxDevices)
    fail("--devices: 1 to 8 devices");
  for (const std::string &name : o.devices) {
    Target t{rt.device(name), {}, {}, 0};
    t.blob = compile(kVectorAdd, t.device.info().target);
    t.exe = t.device.load(t.blob.data(), t.blob.size());
    t.kernel = t.exe.find_kernel("vector_add");
    targets.push_back(std::move(t));
  }
  Totals totals;
  for (Target &t : targets)
    if (std::string(t.device.info().plugin) == "npusim")
      kill_mid_launch(t, totals);
  const auto start = Clock::now();
  const int rounds = std::max(2, int(o.seconds / o.round_seconds + 0.5));
  Sample warm{}, last{};
  for (int r = 0; r < rounds; ++r) {
    round(targets, o, o.seconds / rounds, r, totals);
    last = sample();
    if (r == 0)
      warm = last;
    std::printf("soak: round %d/%d: %llu launches, %llu simulator kills, %llu killed launches, "
                "rss %.1f MiB, %zu fds, %zu threads\n",
                r + 1, rounds, (unsigned long long)totals.launches.load(),
                (unsigned long long)totals.kills.load(),
                (unsigned long long)totals.worker_errors.load(), last.rss_mb, last.fds,
                last.threads);
    std::fflush(stdout);
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("soak: %.0f s, %llu launches (%.1f/s), %llu elements checked, %llu simulator "
              "kills, %llu launches failed by a kill; rss %.1f -> %.1f MiB, fds %zu -> %zu, "
              "threads %zu -> %zu\n",
              elapsed, (unsigned long long)totals.launches.load(),
              double(totals.launches) / elapsed, (unsigned long long)totals.checked_elements.load(),
              (unsigned long long)totals.kills.load(),
              (unsigned long long)totals.worker_errors.load(), warm.rss_mb, last.rss_mb, warm.fds,
              last.fds, warm.threads, last.threads);
  // Each kill fails at most the one launch whose simulator it was; the first (kill_mid_launch)
  // is not counted among the soak's launches.
  if (totals.worker_errors + (totals.kills > 0) > totals.kills)
    fail("more launches failed for a killed simulator than simulators were killed");
  if (last.fds != warm.fds)
    fail("open file descriptors went from " + std::to_string(warm.fds) + " to " +
         std::to_string(last.fds));
  if (last.threads != warm.threads)
    fail("threads went from " + std::to_string(warm.threads) + " to " +
         std::to_string(last.threads));
  if (last.rss_mb > warm.rss_mb + o.rss_slack_mb)
    fail("RSS grew from " + std::to_string(warm.rss_mb) + " to " + std::to_string(last.rss_mb) +
         " MiB (more than --rss-slack-mb " + std::to_string(o.rss_slack_mb) + ")");
  for (size_t d = 0; d < targets.size(); ++d)
    std::printf("soak: %s: %llu launches\n", o.devices[d].c_str(),
                (unsigned long long)totals.per_device[d].load());
  std::printf("soak: PASS\n");
  return 0;
}

} // namespace
} // namespace tl::hal::testing

int main(int argc, char **argv) {
  try {
    return tl::hal::testing::run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "soak: FAIL: " << e.what() << "\n";
    return 1;
  }
}
