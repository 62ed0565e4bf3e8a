// Blocked layouts (layout.h).
// SPDX-License-Identifier: Apache-2.0
#include "layout.h"

#include <algorithm>
#include <sstream>

namespace tl::nvptx {
namespace {

std::string list(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

bool parse_list(std::istringstream &in, std::vector<int64_t> &out) {
  char c;
  if (!(in >> c) || c != '[')
    return false;
  for (;;) {
    int64_t v;
    if (!(in >> v))
      return false;
    out.push_back(v);
    if (!(in >> c))
      return false;
    if (c == ']')
      return true;
    if (c != ',')
      return false;
  }
}

int64_t block_extent(const Layout &l, int d) { return l.per_thread[d] * l.lanes[d] * l.warps[d]; }

} // namespace

int Layout::num_warps() const {
  int64_t n = 1;
  for (int64_t w : warps)
    n *= w;
  return static_cast<int>(n);
}

std::string Layout::str() const {
  if (mma)
    return "mma<v2, warps=" + list(warps) + ", instr=" + list(instr) + ">";
  return "blocked<thread=" + list(per_thread) + ", lanes=" + list(lanes) +
         ", warps=" + list(warps) + ", order=" + list(order) + ">";
}

bool Layout::parse(const std::string &text, Layout &out) {
  std::string t = text;
  for (char &c : t)
    if (c == '<' || c == '>' || c == '=')
      c = ' ';
  std::istringstream in(t);
  std::string word;
  if (!(in >> word))
    return false;
  if (word == "mma") { // mma v2, warps [a,b], instr [16,8]
    std::vector<int64_t> warps, instr;
    if (!(in >> word) || word != "v2," || !(in >> word) || word != "warps" ||
        !parse_list(in, warps) || warps.size() != 2)
      return false;
    char c;
    if (!(in >> c) || c != ',' || !(in >> word) || word != "instr" || !parse_list(in, instr) ||
        instr != std::vector<int64_t>{16, 8})
      return false;
    out = mma_layout(warps[0], warps[1]);
    return true;
  }
  if (word != "blocked")
    return false;
  Layout l;
  for (auto [name, field] : {std::pair{"thread", &l.per_thread},
                             {"lanes", &l.lanes},
                             {"warps", &l.warps},
                             {"order", &l.order}}) {
    if (!(in >> word))
      return false;
    if (!word.empty() && word.back() == ',')
      word.pop_back();
    if (word != name || !parse_list(in, *field))
      return false;
    char c;
    if (in >> c && c != ',')
      in.putback(c);
  }
  const size_t r = l.order.size();
  if (l.per_thread.size() != r || l.lanes.size() != r || l.warps.size() != r)
    return false;
  out = l;
  return true;
}

Layout default_layout(const std::vector<int64_t> &shape, int num_warps, int64_t vector) {
  const int r = static_cast<int>(shape.size());
  Layout l;
  l.per_thread.assign(r, 1);
  l.lanes.assign(r, 1);
  l.warps.assign(r, 1);
  for (int d = r - 1; d >= 0; --d)
    l.order.push_back(d);
  if (r == 0)
    return l;
  l.per_thread[r - 1] = std::min(vector, shape[r - 1]);
  int64_t lanes = 32, warps = num_warps;
  for (int64_t d : l.order) {
    const int64_t room = std::max<int64_t>(1, shape[d] / l.per_thread[d]);
    l.lanes[d] = std::min(lanes, room);
    lanes /= l.lanes[d];
  }
  l.lanes[l.order.front()] *= lanes; // threads left over replicate along the fastest dimension
  for (int64_t d : l.order) {
    const int64_t room = std::max<int64_t>(1, shape[d] / (l.per_thread[d] * l.lanes[d]));
    l.warps[d] = std::min(warps, room);
    warps /= l.warps[d];
  }
  l.warps[l.order.back()] *= warps; // warps left over replicate along the slowest dimension
  return l;
}

Layout fma_layout(int64_t M, int64_t N, int num_warps) {
  Layout l;
  l.per_thread = {1, 1};
  l.lanes = {1, 1};
  l.warps = {1, 1};
  l.order = {1, 0};
  // Doubling the shorter side of a block keeps it square; a side that would pass the tile's
  // edge stays (whatever is left over then replicates along the other).
  auto grow = [&](std::vector<int64_t> &v, const std::vector<int64_t> &unit, int64_t times) {
    for (; times > 1; times /= 2) {
      const int64_t rows = v[0] * unit[0], cols = v[1] * unit[1];
      const bool room_m = 2 * rows <= M, room_n = 2 * cols <= N;
      if (room_m && (rows < cols || !room_n))
        v[0] *= 2;
      else if (room_n)
        v[1] *= 2;
      else
        v[0] *= 2; // replicated rows
    }
  };
  const int64_t threads = 32LL * num_warps;
  const int64_t each = std::clamp<int64_t>(M * N / threads, 1, 16);
  for (int64_t n = 1; n < each; n *= 2) { // per thread: up to 4 x 4, inside the tile
    if (l.per_thread[1] <= l.per_thread[0] && l.per_thread[1] < 4 && 2 * l.per_thread[1] <= N)
      l.per_thread[1] *= 2;
    else if (l.per_thread[0] < 4 && 2 * l.per_thread[0] <= M)
      l.per_thread[0] *= 2;
    else if (l.per_thread[1] < 4 && 2 * l.per_thread[1] <= N)
      l.per_thread[1] *= 2;
  }
  grow(l.lanes, l.per_thread, 32);
  grow(l.warps, {l.per_thread[0] * l.lanes[0], l.per_thread[1] * l.lanes[1]}, num_warps);
  return l;
}

Layout mma_layout(int64_t warps_m, int64_t warps_n) {
  Layout l;
  l.mma = true;
  l.per_thread = {1, 2};
  l.lanes = {8, 4};
  l.warps = {warps_m, warps_n};
  l.order = {1, 0};
  l.instr = {16, 8};
  return l;
}

int64_t registers_per_thread(const Layout &l, const std::vector<int64_t> &shape) {
  if (l.mma) // 4 per 16 x 8 instruction tile of the warp's block
    return shape[0] / (16 * l.warps[0]) * (shape[1] / (8 * l.warps[1])) * 4;
  int64_t n = 1;
  for (int d = 0; d < l.rank(); ++d)
    n *= l.per_thread[d] * std::max<int64_t>(1, shape[d] / block_extent(l, d));
  return n;
}

std::vector<int64_t> register_offset(const Layout &l, const std::vector<int64_t> &shape,
                                     int64_t reg) {
  if (l.mma) { // register (tm * TN + tn) * 4 + e: c0, c1 on row l/4, c2, c3 eight rows down
    const int64_t tiles_n = shape[1] / (8 * l.warps[1]);
    const int64_t e = reg % 4, tile = reg / 4;
    return {tile / tiles_n * 16 + e / 2 * 8, tile % tiles_n * 8 + e % 2};
  }
  std::vector<int64_t> off(l.rank());
  for (int64_t d : l.order) {
    const int64_t b = block_extent(l, static_cast<int>(d));
    const int64_t n = l.per_thread[d] * std::max<int64_t>(1, shape[d] / b);
    const int64_t rd = reg % n;
    reg /= n;
    off[d] = rd / l.per_thread[d] * b + rd % l.per_thread[d];
  }
  return off;
}

std::vector<int64_t> mma_base(const Layout &l, const std::vector<int64_t> &shape, int64_t lane,
                              int64_t warp) {
  if (!l.mma)
    return std::vector<int64_t>(l.rank(), 0);
  warp %= l.warps[0] * l.warps[1];
  return {warp / l.warps[1] * (shape[0] / l.warps[0]) + lane / 4,
          warp % l.warps[1] * (shape[1] / l.warps[1]) + lane % 4 * 2};
}

ElementMap element_map(const Layout &l, const std::vector<int64_t> &shape) {
  ElementMap m;
  m.shape = shape;
  m.threads = 32LL * l.num_warps();
  m.registers = registers_per_thread(l, shape);
  m.linear.resize(m.threads * m.registers);
  std::vector<std::vector<int64_t>> offsets;
  for (int64_t r = 0; r < m.registers; ++r)
    offsets.push_back(register_offset(l, shape, r));
  for (int64_t t = 0; t < m.threads; ++t) {
    int64_t lane = t % 32, warp = t / 32;
    std::vector<int64_t> base = mma_base(l, shape, lane, warp);
    if (!l.mma) {
      for (int64_t d : l.order) {
        base[d] = (lane % l.lanes[d]) * l.per_thread[d];
        lane /= l.lanes[d];
      }
      for (int64_t d : l.order) {
        base[d] += (warp % l.warps[d]) * l.lanes[d] * l.per_thread[d];
        warp /= l.warps[d];
      }
    }
    for (int64_t r = 0; r < m.registers; ++r) {
      int64_t index = 0;
      for (int d = 0; d < l.rank(); ++d)
        index = index * shape[d] + (base[d] + offsets[r][d]) % shape[d];
      m.linear[t * m.registers + r] = index;
    }
  }
  return m;
}

} // namespace tl::nvptx
