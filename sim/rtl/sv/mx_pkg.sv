// Types, codes and arithmetic of the TNPU matrix unit: operand decoding and the fused MAC of
// sim/numerics/SPEC.md ("Matrix unit multiply-accumulate"), bit for bit.
// SPDX-License-Identifier: Apache-2.0
//
// The MAC is written as functions, not modules: a PE calls them inside its clocked block under
// its valid bit, so an idle PE costs no arithmetic in simulation (synthesis sees the same logic).
package mx_pkg;

  // Command opcodes and modes (the modes are sim/numerics' DType codes).
  localparam logic [1:0] OP_PRE = 2'd0, OP_MM = 2'd1, OP_MMA = 2'd2;
  localparam logic [2:0] MODE_BF16 = 3'd0, MODE_F16 = 3'd1, MODE_F32 = 3'd2, MODE_I8 = 3'd3;
  // Why a command was rejected (err_code).
  localparam logic [2:0] ERR_NONE = 3'd0, ERR_MODE = 3'd1, ERR_SHAPE = 3'd2,
      ERR_NO_WEIGHTS = 3'd3, ERR_MODE_MISMATCH = 3'd4, ERR_OP = 3'd5;

  localparam logic [31:0] F32_NEG_ZERO = 32'h8000_0000;
  localparam logic [31:0] F32_QNAN = 32'h7fc0_0000;

  // An input element once decoded at the array's edge, so PEs never see the storage formats.
  // Finite nonzero floats: value = (-1)^sign * sig * 2^exp with sig[23] = 1 (subnormal inputs are
  // normalized here, which keeps the MAC's alignment window small). i8: the integer in sig[7:0].
  typedef struct packed {
    logic nan;
    logic inf;
    logic zero;
    logic sign;
    logic signed [11:0] exp;
    logic [23:0] sig;
  } operand_t;

  // Leading zeros of a 24-bit value (24 for zero).
  function automatic logic [4:0] lzc24(input logic [23:0] x);
    lzc24 = 5'd24;
    for (int i = 0; i < 24; i++) if (x[i]) lzc24 = 5'(23 - i);
  endfunction

  // A finite nonzero significand with its LSB exponent, normalized to sig[23] = 1.
  function automatic operand_t normalized(input logic sign, input logic [23:0] sig,
                                          input logic signed [11:0] exp);
    operand_t o;
    logic [4:0] lz;
    lz = lzc24(sig);
    o = '0;
    o.sign = sign;
    o.sig = sig << lz;
    o.exp = exp - 12'($unsigned(lz));
    return o;
  endfunction

  // Raw element bits (in the low bits) of the given mode to an operand.
  function automatic operand_t decode(input logic [2:0] mode, input logic [31:0] raw);
    operand_t o;
    logic [31:0] x;
    o = '0;
    if (mode == MODE_I8) begin
      o.sig = {16'b0, raw[7:0]};
    end else if (mode == MODE_F16) begin
      o.sign = raw[15];
      if (raw[14:10] == 5'h1f) begin
        o.nan = raw[9:0] != 10'b0;
        o.inf = raw[9:0] == 10'b0;
      end else if (raw[14:10] == 5'h0) begin
        // Subnormal: raw[9:0] * 2^-24, the significand placed at sig[22:13] first.
        if (raw[9:0] == 10'b0) o.zero = 1'b1;
        else o = normalized(raw[15], {1'b0, raw[9:0], 13'b0}, -12'sd37);
      end else begin
        o.sig = {1'b1, raw[9:0], 13'b0};
        o.exp = 12'($unsigned(raw[14:10])) - 12'sd38;
      end
    end else begin
      // bf16 is the upper half of an f32 with the same exponent.
      x = (mode == MODE_BF16) ? {raw[15:0], 16'b0} : raw;
      o.sign = x[31];
      if (x[30:23] == 8'hff) begin
        o.nan = x[22:0] != 23'b0;
        o.inf = x[22:0] == 23'b0;
      end else if (x[30:23] == 8'h0) begin
        if (x[22:0] == 23'b0) o.zero = 1'b1;
        else o = normalized(x[31], {1'b0, x[22:0]}, -12'sd149);
      end else begin
        o.sig = {1'b1, x[22:0]};
        o.exp = 12'($unsigned(x[30:23])) - 12'sd150;
      end
    end
    return o;
  endfunction

  // The exact sum window: the product's 48 bits sit at [49:2]; an addend close enough to matter
  // fits exactly above them (its LSB at 0..51); bit 0 is a sticky bit for an addend far below.
  localparam int WIN = 77;

  // Rounds (-1)^sign * v * 2^e0 (v != 0) once to f32: nearest even, subnormals kept, overflow to
  // infinity, an underflow to zero keeps the sign.
  function automatic logic [31:0] round_f32(input logic sign, input logic [WIN-1:0] v,
                                            input logic signed [15:0] e0);
    logic [6:0] top;
    logic signed [15:0] lsb, shift;
    logic [WIN-1:0] below;
    logic [24:0] sig;
    logic guard, sticky;
    top = 7'd0;
    for (int i = 0; i < WIN; i++) if (v[i]) top = 7'(i);
    // The result's LSB exponent: 24 significant bits from the top, but never below 2^-149.
    lsb = e0 + 16'($unsigned(top)) - 16'sd23;
    if (lsb < -16'sd149) lsb = -16'sd149;
    shift = lsb - e0;
    guard = 1'b0;
    sticky = 1'b0;
    if (shift <= 0) begin
      sig = 25'(v << (-shift));  // exact: fewer than 24 significant bits
    end else if (shift > 16'(WIN)) begin
      sig = 25'b0;
      sticky = 1'b1;
    end else begin
      sig = 25'(v >> shift);
      guard = v[7'(shift-16'sd1)];
      below = v & ((WIN'(1) << (shift - 16'sd1)) - WIN'(1));
      sticky = below != '0;
    end
    if (guard && (sticky || sig[0])) sig = sig + 25'd1;
    if (sig[24]) begin
      sig = sig >> 1;
      lsb = lsb + 16'sd1;
    end
    if (!sig[23]) return {sign, 8'h0, sig[22:0]};  // subnormal or zero
    if (lsb + 16'sd150 >= 16'sd255) return {sign, 8'hff, 23'b0};
    return {sign, 8'(lsb + 16'sd150), sig[22:0]};
  endfunction

  // acc' = round_f32(acc + a * w): the exact product, one rounding; SPEC.md's NaN, infinity and
  // signed-zero rules.
  function automatic logic [31:0] mac_float(input operand_t a, input operand_t w,
                                            input logic [31:0] acc);
    logic acc_nan, acc_inf, acc_zero, pneg, neg;
    logic [23:0] acc_sig;
    logic signed [15:0] acc_exp, prod_exp, pos;
    logic [47:0] prod;
    logic [WIN-1:0] p, c, v;
    logic [5:0] cut;
    logic [23:0] kept;
    acc_nan = acc[30:23] == 8'hff && acc[22:0] != 23'b0;
    acc_inf = acc[30:23] == 8'hff && acc[22:0] == 23'b0;
    acc_zero = acc[30:0] == 31'b0;
    pneg = a.sign ^ w.sign;
    if (a.nan || w.nan || acc_nan) return F32_QNAN;
    if (a.inf || w.inf) begin
      if (a.zero || w.zero) return F32_QNAN;  // inf * 0
      if (acc_inf && acc[31] != pneg) return F32_QNAN;  // inf - inf
      return {pneg, 8'hff, 23'b0};
    end
    if (acc_inf) return acc;
    if (a.zero || w.zero) return acc_zero ? {pneg & acc[31], 31'b0} : acc;
    prod = a.sig * w.sig;  // exact, in [2^46, 2^48)
    prod_exp = 16'($signed(a.exp)) + 16'($signed(w.exp));
    p = {27'b0, prod, 2'b0};
    if (acc_zero) return round_f32(pneg, p, prod_exp - 16'sd2);
    acc_sig = {acc[30:23] != 8'h0, acc[22:0]};
    acc_exp = acc[30:23] == 8'h0 ? -16'sd149 : 16'($unsigned(acc[30:23])) - 16'sd150;
    pos = acc_exp - prod_exp + 16'sd2;  // where the addend's LSB lands in the window
    // The product is below a quarter of the addend's ulp: the sum rounds to the addend.
    if (pos >= 16'sd52) return acc;
    if (pos >= 16'sd0) begin
      c = WIN'(acc_sig) << pos;
    end else begin
      // The addend's bits below window bit 1 only decide the rounding as a sticky bit at bit 0:
      // the product's top is at bit 48 or above, so the result rounds at bit 24 or above.
      cut = (pos <= -16'sd23) ? 6'd24 : 6'(16'sd1 - pos);
      kept = acc_sig >> cut;
      c = (WIN'(kept) << 1) |
          WIN'((acc_sig & ((24'd1 << cut) - 24'd1)) != 24'b0 || cut == 6'd24);
    end
    if (pneg == acc[31]) begin
      v = p + c;
      neg = pneg;
    end else if (p >= c) begin
      v = p - c;
      neg = pneg;
    end else begin
      v = c - p;
      neg = acc[31];
    end
    if (v == '0) return 32'h0;  // an exact zero sum is +0
    return round_f32(neg, v, prod_exp - 16'sd2);
  endfunction

  // acc' = acc + a * w modulo 2^32 (i8 operands).
  function automatic logic [31:0] mac_int8(input logic [7:0] a, input logic [7:0] w,
                                           input logic [31:0] acc);
    logic signed [15:0] prod;
    prod = $signed(a) * $signed(w);
    return acc + 32'($signed(prod));
  endfunction

  // Cycles from a row entering the array to its results leaving it (skew, PEs, deskew).
  function automatic int array_latency(input int rows, input int cols);
    return rows + cols - 1;
  endfunction

endpackage
