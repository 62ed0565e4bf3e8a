// Types and codes of the TNPU matrix unit, and the decoding of its input formats (bf16, f16, f32,
// i8) into the operand form its PEs compute with.
// SPDX-License-Identifier: Apache-2.0
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

  // Cycles from a row entering the array to its results leaving it (skew, PEs, deskew).
  function automatic int array_latency(input int rows, input int cols);
    return rows + cols - 1;
  endfunction

endpackage
