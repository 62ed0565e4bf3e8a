// tl-npusim-worker: runs one launch of the npusim plugin on the SystemC TNPU, then exits.
// SPDX-License-Identifier: Apache-2.0
//
// stdin: a wire::Request; fd 3: the device's HBM file; fd 4: a wire::Reply. Exit status 0 when a
// reply was written (whatever the simulation's status), 1 for a broken request.
#include "../src/worker_protocol.h"

#include "tl/npu/config.h"
#include "tl/npu/simulator.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <exception>

extern "C" int sc_main(int, char **) {
  using namespace tl::npusim;
  wire::Request req;
  if (!wire::decode(wire::read_all(0), req)) {
    std::fprintf(stderr, "tl-npusim-worker: malformed request\n");
    return 1;
  }
  struct stat st {};
  if (fstat(wire::kHbmFd, &st) != 0) {
    std::fprintf(stderr, "tl-npusim-worker: no HBM file on fd 3\n");
    return 1;
  }
  const auto hbm_size = static_cast<size_t>(st.st_size);
  void *map =
      mmap(nullptr, hbm_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, wire::kHbmFd, 0);
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "tl-npusim-worker: cannot map HBM\n");
    return 1;
  }
  auto *hbm = static_cast<char *>(map);
  wire::Reply reply;
  try {
    tl::npu::ChipConfig config = tl::npu::load_config(req.config_path);
    tl::npu::SimOptions opts;
    opts.trace = req.trace != 0;
    std::vector<tl::npu::isa::Instr> program(req.program.size());
    for (size_t i = 0; i < program.size(); ++i) {
      std::string error;
      if (!tl::npu::isa::decode(req.program[i], program[i], error))
        throw std::runtime_error("instruction " + std::to_string(i) + ": " + error);
    }
    tl::npu::Simulator sim(config, opts);
    sim.load_program(-1, program);
    for (const wire::Range &r : req.ranges)
      sim.write_hbm(r.address, hbm + r.address, r.size);
    tl::npu::SimReport report = sim.run();
    for (const wire::Range &r : req.ranges)
      sim.read_hbm(r.address, hbm + r.address, r.size);
    for (int c = 0; c < config.cores; ++c)
      reply.assert_regs.push_back(sim.reg(c, 31));
    reply.status = static_cast<uint32_t>(report.status);
    reply.cycles = report.cycles;
    reply.message = report.message;
    reply.stats_json = std::move(report.stats_json);
    reply.trace_json = std::move(report.trace_json);
  } catch (const tl::npu::ConfigError &e) { // e.g. an RTL matrix unit of a size not built
    reply.status = 1;                       // SimStatus::ProgramError
    reply.message = e.what();
    if (reply.message.rfind(req.config_path, 0) != 0) // name the file where the field is
      reply.message = req.config_path + ": " + reply.message;
  } catch (const std::exception &e) {
    reply.status = 1; // SimStatus::ProgramError
    reply.message = e.what();
  }
  return wire::write_all(wire::kReplyFd, wire::encode(reply)) ? 0 : 1;
}
