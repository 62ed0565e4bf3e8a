// Child processes for test isolation: spawning (each test in its own process group), capturing
// output, waiting with a deadline, and describing how a process ended.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace tl::conform {

/// Starts argv[0] with its output (stdout and stderr) appended to `log_path` ("" keeps ours)
/// in a new process group (so that a timeout kills its children too). Throws on failure.
pid_t spawn(const std::vector<std::string> &argv, const std::string &log_path);

/// Runs argv to completion within `timeout_s`, returning its stdout; `status` receives the
/// waitpid status (or -1 after a timeout, when the process group is killed).
std::string capture(const std::vector<std::string> &argv, double timeout_s, int *status);

/// Kills a process group started by spawn/capture.
void kill_group(pid_t pid);

/// "exited with status 3", "killed by signal 11 (SIGSEGV)".
std::string describe_exit(int status);
/// True when the status is a normal exit with code 0.
bool exited_ok(int status);

/// This executable's path (/proc/self/exe).
std::string self_exe();

} // namespace tl::conform
