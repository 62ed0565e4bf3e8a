// The matrix unit's cross-check (see matrix_cross_check.h).
// SPDX-License-Identifier: Apache-2.0
#include "matrix_cross_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace tl::npu::model {

namespace {

const char *op_name(rtl::MxOp op) {
  return op == rtl::MxOp::Preload ? "mx.pre" : op == rtl::MxOp::Multiply ? "mx.mm" : "mx.mma";
}

// Cycle error buckets (model - RTL): exact, within the issue's +-2, and widening from there.
struct Bucket {
  const char *name;
  int64_t lo, hi;
};
const Bucket kBuckets[] = {{"<=-100", INT64_MIN, -100},
                           {"-99..-10", -99, -10},
                           {"-9..-3", -9, -3},
                           {"-2", -2, -2},
                           {"-1", -1, -1},
                           {"0", 0, 0},
                           {"1", 1, 1},
                           {"2", 2, 2},
                           {"3..9", 3, 9},
                           {"10..99", 10, 99},
                           {">=100", 100, INT64_MAX}};

} // namespace

MatrixCrossCheck::MatrixCrossCheck(const MatrixConfig &mc, rtl::Memory &memory, MxBanks banks)
    : memory_(memory), fp32_passes_(mc.fp32_passes), timing_(mc, banks) {}

void MatrixCrossCheck::command(size_t index, const rtl::MxCommand &c, uint64_t issue) {
  if (records_.size() <= index)
    records_.resize(index + 1);
  Record &r = records_[index];
  r.c = c;
  r.issue = issue;
  const bool pre = c.op == rtl::MxOp::Preload;
  if (pre) {
    // The model latches the weights when the command starts, as matrix.cpp does; a tile the
    // RTL rejects (and the run stops on) leaves them unset.
    weights_.reset();
    const auto es = static_cast<uint32_t>(num::dtype_size(c.mode));
    if (c.k >= 1 && c.n >= 1 && c.k <= 0xffff && c.n <= 0xffff) {
      std::vector<uint8_t> packed(static_cast<size_t>(c.k) * c.n * es);
      for (uint32_t i = 0; i < c.k; ++i)
        std::memcpy(&packed[static_cast<size_t>(i) * c.n * es],
                    memory_.span(c.src + i * c.src_stride, c.n * es, false, "cross-check weights"),
                    c.n * es);
      weights_ = std::make_shared<num::TileWeights>(c.mode, static_cast<int>(c.k),
                                                    static_cast<int>(c.n), packed.data(), c.n);
    }
  } else {
    r.weights = weights_;
  }
  MxTimingCommand t;
  t.preload = pre;
  t.accumulate = c.op == rtl::MxOp::MultiplyAccumulate;
  t.m = c.m;
  t.k = pre ? c.k : wk_;
  t.n = pre ? c.n : wn_;
  t.elem_bytes = static_cast<uint64_t>(num::dtype_size(c.mode));
  t.passes = c.mode == num::DType::F32 ? fp32_passes_ : 1;
  t.src = c.src;
  t.src_stride = c.src_stride;
  t.dst = c.dst;
  t.dst_stride = c.dst_stride;
  if (pre) {
    wk_ = c.k;
    wn_ = c.n;
  }
  r.model_end = timing_.command(t, issue).done;
}

void MatrixCrossCheck::c_row(const rtl::CRow &row) {
  const Record &r = records_.at(row.command);
  ++rows_;
  std::string why;
  if (!r.weights) {
    why = "the model has no weights for it";
  } else if (row.count != static_cast<uint32_t>(r.weights->n())) {
    why = std::to_string(row.count) + " elements, the model's tile has " +
          std::to_string(r.weights->n());
  } else {
    const auto es = static_cast<uint32_t>(num::dtype_size(r.c.mode));
    const auto k = static_cast<uint32_t>(r.weights->k());
    std::vector<uint8_t> a(static_cast<size_t>(k) * es), c(4ull * row.count);
    std::memcpy(a.data(),
                memory_.span(r.c.src + row.row * r.c.src_stride, a.size(), false, "cross-check A"),
                a.size());
    // The old C (mx.mma's starting sums) is still in memory: the row is compared before it lands.
    std::memcpy(c.data(), memory_.span(row.addr, c.size(), false, "cross-check C"), c.size());
    num::matmul_tile(*r.weights, 1, a.data(), k, c.data(), row.count,
                     r.c.op == rtl::MxOp::MultiplyAccumulate);
    for (uint32_t j = 0; j < row.count && why.empty(); ++j) {
      uint32_t model;
      std::memcpy(&model, &c[4ull * j], 4);
      if (model != row.data[j]) {
        std::ostringstream s;
        s << "element " << j << ": RTL 0x" << std::hex << row.data[j] << ", model 0x" << model;
        why = s.str();
      }
    }
  }
  if (why.empty())
    return;
  ++mismatches_;
  if (first_mismatches_.size() < 8)
    first_mismatches_.push_back("command " + std::to_string(row.command) + " (" + op_name(r.c.op) +
                                ") row " + std::to_string(row.row) + ": " + why);
}

std::string MatrixCrossCheck::report_json(const std::vector<uint64_t> &done) const {
  using json = nlohmann::ordered_json;
  int64_t hist[std::size(kBuckets)] = {};
  json per = json::array();
  uint64_t rtl_end = 0, model_end = 0, rtl_last = 0, model_last = 0;
  double ape_sum = 0, max_err = 0;
  size_t ape_n = 0, compared = 0;
  for (size_t i = 0; i < records_.size() && i < done.size(); ++i) {
    const Record &r = records_[i];
    const auto rtl = static_cast<int64_t>(done[i] - std::min(done[i], std::max(r.issue, rtl_end)));
    const auto model =
        static_cast<int64_t>(r.model_end - std::min(r.model_end, std::max(r.issue, model_end)));
    rtl_end = std::max(rtl_end, done[i]);
    model_end = std::max(model_end, r.model_end);
    rtl_last = rtl_end;
    model_last = model_end;
    const int64_t err = model - rtl;
    for (size_t b = 0; b < std::size(kBuckets); ++b)
      hist[b] += err >= kBuckets[b].lo && err <= kBuckets[b].hi;
    max_err = std::max(max_err, std::fabs(static_cast<double>(err)));
    if (rtl > 0) {
      ape_sum += std::fabs(static_cast<double>(err)) / static_cast<double>(rtl);
      ++ape_n;
    }
    ++compared;
    if (i < 256)
      per.push_back(
          {op_name(r.c.op), r.c.op == rtl::MxOp::Preload ? r.c.k : r.c.m, r.issue, rtl, model});
  }
  json h = json::object();
  for (size_t b = 0; b < std::size(kBuckets); ++b)
    h[kBuckets[b].name] = hist[b];
  json j;
  j["commands"] = compared;
  j["rows_compared"] = rows_;
  j["mismatches"] = mismatches_;
  j["first_mismatches"] = first_mismatches_;
  j["rtl_end_cycle"] = rtl_last;
  j["model_end_cycle"] = model_last;
  j["total_error_percent"] =
      rtl_last > 0 ? 100.0 * (static_cast<double>(model_last) - static_cast<double>(rtl_last)) /
                         static_cast<double>(rtl_last)
                   : 0.0;
  j["cycle_mape_percent"] = ape_n > 0 ? 100.0 * ape_sum / static_cast<double>(ape_n) : 0.0;
  j["cycle_max_abs_error"] = max_err;
  j["cycle_error_histogram"] = h; // model - RTL, per command
  j["per_command"] = per;         // [op, k or m, issue, RTL cycles, model cycles], the first 256
  return j.dump();
}

} // namespace tl::npu::model
