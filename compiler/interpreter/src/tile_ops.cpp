// The interpreter's tile ops: shape changes, block and indexed memory access, dot, reduce, scan.
// SPDX-License-Identifier: Apache-2.0
#include "executor.h"

#include "storage.h"

#include <bit>
#include <cmath>
#include <mutex>

namespace tl::interp {
using ir::Opcode;
using ir::ScalarKind;

namespace {

/// Calls fn(index, flat) for every multi-index of `shape` in row-major order.
template <class Fn> void for_each_index(const std::vector<int64_t> &shape, Fn &&fn) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(idx, flat);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

std::string index_str(const std::vector<int64_t> &idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i)
    s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

/// Rounds to tf32 (8-bit exponent, 10-bit mantissa) with round-to-nearest-even.
double round_tf32(double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(f))
    return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits += 0xfff + ((bits >> 13) & 1);
  bits &= ~uint32_t(0x1fff);
  return std::bit_cast<float>(bits);
}

} // namespace

RtValue Executor::exec_shape(const ir::Operation &op) {
  const RtValue &in = get(op.operand(0));
  const ir::Type &t = op.result()->type();
  RtValue r{t, {}};
  switch (op.opcode()) {
  case Opcode::Splat:
    r.lanes.assign(t.num_elements(), in.lanes[0]);
    return r;
  case Opcode::Reshape:
  case Opcode::ExpandDims:
    r.lanes = in.lanes;
    return r;
  default:
    break;
  }
  // broadcast, slice, transpose: out[idx] = in[first + sum of idx[d] * stride[d]]
  const auto in_strides = contiguous_strides(in.type.shape());
  std::vector<int64_t> stride(size_t(t.rank()));
  int64_t first = 0;
  for (size_t d = 0; d < stride.size(); ++d) {
    if (op.opcode() == Opcode::Broadcast) {
      stride[d] = in.type.shape()[d] == 1 ? 0 : in_strides[d];
    } else if (op.opcode() == Opcode::Slice) {
      stride[d] = in_strides[d];
      first += (*op.attr_as<std::vector<int64_t>>("offsets"))[d] * in_strides[d];
    } else {
      stride[d] = in_strides[size_t((*op.attr_as<std::vector<int64_t>>("perm"))[d])];
    }
  }
  r.lanes.resize(t.num_elements());
  for_each_index(t.shape(), [&](const std::vector<int64_t> &idx, int64_t flat) {
    int64_t src = first;
    for (size_t d = 0; d < idx.size(); ++d)
      src += idx[d] * stride[d];
    r.lanes[flat] = in.lanes[src];
  });
  return r;
}

RtValue Executor::exec_load(const ir::Operation &op) {
  const TensorArg &ta = tensor(op.operand(0));
  const ir::Type &t = op.result()->type();
  const int rank = t.rank();
  std::vector<int64_t> off(rank);
  for (int d = 0; d < rank; ++d)
    off[d] = scalar_int(op.operand(1 + d));
  const Lane pad = attr_lane(op, "padding", t.elem());
  RtValue r{t, std::vector<Lane>(t.num_elements(), pad)};
  for_each_index(t.shape(), [&](const std::vector<int64_t> &idx, int64_t flat) {
    int64_t at = 0;
    for (int d = 0; d < rank; ++d) {
      const int64_t i = off[d] + idx[d];
      if (i < 0 || i >= ta.shape[d])
        return;
      at += i * ta.strides[d];
    }
    r.lanes[flat] = read_element(ta.data, ta.dtype, at);
  });
  return r;
}

void Executor::exec_store(const ir::Operation &op) {
  const TensorArg &ta = tensor(op.operand(0));
  const int rank = op.operand(0)->type().rank();
  const RtValue &v = get(op.operand(1 + rank));
  std::vector<int64_t> off(rank);
  for (int d = 0; d < rank; ++d)
    off[d] = scalar_int(op.operand(1 + d));
  for_each_index(v.type.shape(), [&](const std::vector<int64_t> &idx, int64_t flat) {
    int64_t at = 0;
    for (int d = 0; d < rank; ++d) {
      const int64_t i = off[d] + idx[d];
      if (i < 0 || i >= ta.shape[d])
        return;
      at += i * ta.strides[d];
    }
    write_element(ta.data, ta.dtype, at, v.lanes[flat]);
  });
}

/// gather, scatter and atomic_add: one index tile per tensor dimension, optional mask.
RtValue Executor::exec_indexed(const ir::Operation &op) {
  const TensorArg &ta = tensor(op.operand(0));
  const ScalarKind elem = op.operand(0)->type().elem();
  const size_t rank = ta.shape.size();
  const bool has_value = op.opcode() != Opcode::Gather;
  const size_t mask_at = 1 + rank + (has_value ? 1 : 0);
  const RtValue *mask = op.num_operands() > mask_at ? &get(op.operand(mask_at)) : nullptr;
  const RtValue *value = has_value ? &get(op.operand(1 + rank)) : nullptr;
  const ir::Type lanes_type = get(op.operand(1)).type;
  const int64_t n = lanes_type.num_elements();
  const Lane other = attr_lane(op, "other", elem);
  RtValue r{ir::Type::value_of_shape(elem, lanes_type.shape()), std::vector<Lane>(n, other)};
  std::vector<int64_t> idx(rank);
  for (int64_t lane = 0; lane < n; ++lane) {
    if (mask && !mask->lanes[lane].i)
      continue;
    int64_t at = 0;
    for (size_t d = 0; d < rank; ++d) {
      idx[d] = get(op.operand(1 + d)).lanes[lane].i;
      at += idx[d] * ta.strides[d];
    }
    for (size_t d = 0; d < rank; ++d)
      if (idx[d] < 0 || idx[d] >= ta.shape[d])
        fail(op, "'" + std::string(op.name()) + "' index " + index_str(idx) +
                     " is out of bounds of tensor shape " + index_str(ta.shape) + " in lane " +
                     std::to_string(lane));
    if (op.opcode() == Opcode::Gather) {
      r.lanes[lane] = read_element(ta.data, ta.dtype, at);
    } else if (op.opcode() == Opcode::Scatter) {
      write_element(ta.data, ta.dtype, at, value->lanes[lane]);
    } else {
      // Programs may run on several threads (run_programs): the read-modify-write is atomic.
      static std::mutex atomic_mutex;
      std::lock_guard<std::mutex> lock(atomic_mutex);
      const Lane old = read_element(ta.data, ta.dtype, at);
      Lane sum;
      if (ir::is_float(elem))
        sum.f = round(elem, old.f + value->lanes[lane].f);
      else
        sum.i = wrap_int(elem, static_cast<int64_t>(static_cast<uint64_t>(old.i) +
                                                    static_cast<uint64_t>(value->lanes[lane].i)));
      write_element(ta.data, ta.dtype, at, sum);
      r.lanes[lane] = old;
    }
  }
  return r;
}

RtValue Executor::exec_dot(const ir::Operation &op) {
  const RtValue &a = get(op.operand(0)), &b = get(op.operand(1));
  const ir::Type &t = op.result()->type();
  const ScalarKind acc = t.elem(), in = a.type.elem();
  const int64_t M = a.type.shape()[0], K = a.type.shape()[1], N = b.type.shape()[1];
  RtValue r{t, op.num_operands() == 3 ? get(op.operand(2)).lanes : std::vector<Lane>(M * N)};
  if (ir::is_integer(acc)) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        uint64_t s = static_cast<uint64_t>(r.lanes[i * N + j].i);
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<uint64_t>(a.lanes[i * K + k].i) *
               static_cast<uint64_t>(b.lanes[k * N + j].i);
        r.lanes[i * N + j].i = wrap_int(acc, static_cast<int64_t>(s));
      }
    return r;
  }
  const std::string *prec = op.attr_as<std::string>("input_precision");
  auto prepare = [&](const RtValue &v) {
    std::vector<double> out(v.lanes.size());
    for (size_t i = 0; i < out.size(); ++i) {
      double x = v.lanes[i].f;
      if (prec && !opts_.fp64_reference && *prec == "tf32")
        x = round_tf32(x);
      else if (prec && !opts_.fp64_reference && *prec == "bf16")
        x = round_float(ScalarKind::BF16, x);
      out[i] = x;
    }
    return out;
  };
  const std::vector<double> av = prepare(a), bv = prepare(b);
  (void)in;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = r.lanes[i * N + j].f;
      // One fused multiply-add per step. For f32 the host's fmaf is the exact f32 fma; narrower
      // accumulators round the exact double fma once more (products of f16/bf16 are exact).
      for (int64_t k = 0; k < K; ++k)
        s = acc == ScalarKind::F32 && !opts_.fp64_reference
                ? double(std::fmaf(float(av[i * K + k]), float(bv[k * N + j]), float(s)))
                : round(acc, std::fma(av[i * K + k], bv[k * N + j], s));
      r.lanes[i * N + j].f = s;
    }
  return r;
}

RtValue Executor::exec_reduce(const ir::Operation &op) {
  const RtValue &in = get(op.operand(0));
  const ir::Type &t = op.result()->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  const ScalarKind elem = in.type.elem();
  const bool fl = ir::is_float(elem);
  const auto strides = contiguous_strides(in.type.shape());
  const int64_t len = in.type.shape()[axis];
  RtValue r{t, std::vector<Lane>(t.num_elements())};
  std::vector<int64_t> out_shape = in.type.shape();
  out_shape.erase(out_shape.begin() + axis);
  for_each_index(out_shape, [&](const std::vector<int64_t> &idx, int64_t flat) {
    int64_t base = 0;
    for (size_t d = 0, o = 0; d < in.type.shape().size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        base += idx[o++] * strides[d];
    Lane acc = in.lanes[base];
    int64_t best = 0;
    for (int64_t k = 1; k < len; ++k) {
      const Lane x = in.lanes[base + k * strides[axis]];
      if (kind == "sum") {
        if (fl)
          acc.f = round(elem, acc.f + x.f);
        else
          acc.i = wrap_int(elem, static_cast<int64_t>(static_cast<uint64_t>(acc.i) + x.i));
      } else if (kind == "max" || kind == "min") {
        const bool mx = kind == "max";
        if (fl)
          acc.f = mx ? float_max(acc.f, x.f) : float_min(acc.f, x.f);
        else if (ir::is_signed(elem))
          acc.i = mx ? std::max(acc.i, x.i) : std::min(acc.i, x.i);
        else
          acc.i = mx ? std::max(acc.i, x.i) : std::min(acc.i, x.i); // stored non-negative
      } else { // argmax: the first maximal index; NaN counts as the largest value
        const bool greater =
            fl ? (!std::isnan(acc.f) && (std::isnan(x.f) || x.f > acc.f)) : x.i > acc.i;
        if (greater) {
          acc = x;
          best = k;
        }
      }
    }
    r.lanes[flat] = kind == "argmax" ? Lane{best, 0} : acc;
  });
  return r;
}

RtValue Executor::exec_scan(const ir::Operation &op) {
  const RtValue &in = get(op.operand(0));
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  const ScalarKind elem = in.type.elem();
  const bool fl = ir::is_float(elem);
  const auto strides = contiguous_strides(in.type.shape());
  RtValue r = in;
  for_each_index(in.type.shape(), [&](const std::vector<int64_t> &idx, int64_t flat) {
    if (idx[axis] == 0)
      return;
    const Lane prev = r.lanes[flat - strides[axis]];
    Lane &x = r.lanes[flat];
    if (kind == "sum") {
      if (fl)
        x.f = round(elem, prev.f + x.f);
      else
        x.i = wrap_int(elem, static_cast<int64_t>(static_cast<uint64_t>(prev.i) + x.i));
    } else if (fl) {
      x.f = kind == "max" ? float_max(prev.f, x.f) : float_min(prev.f, x.f);
    } else {
      x.i = kind == "max" ? std::max(prev.i, x.i) : std::min(prev.i, x.i);
    }
  });
  return r;
}

} // namespace tl::interp
