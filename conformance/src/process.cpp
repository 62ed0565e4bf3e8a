// Child processes for test isolation.
// SPDX-License-Identifier: Apache-2.0
#include "process.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tl::conform {
namespace {

std::vector<char *> c_argv(const std::vector<std::string> &argv) {
  std::vector<char *> v;
  for (const std::string &a : argv)
    v.push_back(const_cast<char *>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

/// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<char *> &argv, int out_fd) {
  setpgid(0, 0);
  if (out_fd >= 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    close(out_fd);
  }
  execv(argv[0], argv.data());
  _exit(127);
}

} // namespace

pid_t spawn(const std::vector<std::string> &argv, const std::string &log_path) {
  int fd = -1;
  if (!log_path.empty()) {
    fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
      throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  }
  auto args = c_argv(argv);
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0)
    exec_child(args, fd);
  setpgid(pid, pid); // also here: no race with a kill before the child ran setpgid
  if (fd >= 0)
    close(fd);
  return pid;
}

std::string capture(const std::vector<std::string> &argv, double timeout_s, int *status) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  auto args = c_argv(argv);
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    int out = dup(fds[1]); // a copy without O_CLOEXEC
    exec_child(args, out);
  }
  setpgid(pid, pid);
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  *status = -1;
  char buf[4096];
  for (;;) {
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
      out.append(buf, n);
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      while ((n = read(fds[0], buf, sizeof buf)) > 0)
        out.append(buf, n);
      *status = st;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill_group(pid);
      waitpid(pid, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(fds[0]);
  return out;
}

void kill_group(pid_t pid) {
  if (pid > 0)
    kill(-pid, SIGKILL);
}

std::string describe_exit(int status) {
  if (status == -1)
    return "timed out";
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + " (SIG" + (abbrev ? abbrev : "?") + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

bool exited_ok(int status) { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw std::runtime_error("cannot read /proc/self/exe");
  return std::string(buf, n);
}

} // namespace tl::conform
