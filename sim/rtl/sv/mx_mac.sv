// The PE's multiply-accumulate, combinational: acc' = round_f32(acc + a * w) with the exact
// product and one rounding (nearest even, subnormals kept, overflow to infinity), or for i8
// operands acc' = acc + a * w modulo 2^32 (sim/numerics/SPEC.md, "Matrix unit multiply-accumulate").
// SPDX-License-Identifier: Apache-2.0
//
// Written without function calls: Verilator 5.006 names a function's inlined temporaries per
// instance, which would give each of a 128 x 128 array's PEs its own copy of this code. The work
// sits under `enable`, so an idle PE costs a branch in simulation.
module mx_mac
  import mx_pkg::*;
(
    input logic enable /*verilator public_flat_rd*/,  // otherwise result = acc
    input logic is_int /*verilator public_flat_rd*/,
    input operand_t a /*verilator public_flat_rd*/,
    input operand_t w /*verilator public_flat_rd*/,
    input logic [31:0] acc /*verilator public_flat_rd*/,
    output logic [31:0] result
);
  // Inlined into mx_pe (one simulation class for every PE): its code is still one copy, and a
  // PE no longer copies its operands into a MAC instance every cycle.

  // The exact sum window: the product's 48 bits sit at [49:2]; an addend close enough to matter
  // fits exactly above them (its LSB at bit 0..51); bit 0 doubles as a sticky bit for an addend
  // far below, whose bits then only decide the rounding.
  localparam int WIN = 77;

  always_comb begin
    logic acc_nan, acc_inf, acc_zero, pneg, neg, guard, sticky;
    logic [23:0] acc_sig, kept;
    logic signed [15:0] acc_exp, prod_exp, pos, lsb, shift;
    logic [47:0] prod;
    logic [WIN-1:0] p, c, v;
    logic [5:0] cut;
    logic [6:0] top;
    logic [63:0] part;  // the leading-one search: the half of v that holds its top bit, narrowed
    logic [24:0] sig;
    logic signed [15:0] int_prod;

    acc_nan = acc[30:23] == 8'hff && acc[22:0] != 23'b0;
    acc_inf = acc[30:23] == 8'hff && acc[22:0] == 23'b0;
    acc_zero = acc[30:0] == 31'b0;
    acc_sig = {acc[30:23] != 8'h0, acc[22:0]};
    acc_exp = acc[30:23] == 8'h0 ? -16'sd149 : 16'($unsigned(acc[30:23])) - 16'sd150;
    pneg = a.sign ^ w.sign;
    neg = 1'b0;
    guard = 1'b0;
    sticky = 1'b0;
    kept = '0;
    prod = '0;
    prod_exp = '0;
    pos = '0;
    lsb = '0;
    shift = '0;
    p = '0;
    c = '0;
    v = '0;
    cut = '0;
    top = '0;
    part = '0;
    sig = '0;
    int_prod = '0;
    result = acc;

    if (enable && is_int) begin
      int_prod = $signed(a.sig[7:0]) * $signed(w.sig[7:0]);
      result = acc + 32'(int_prod);
    end else if (enable) begin
      if (a.nan || w.nan || acc_nan) begin
        result = F32_QNAN;
      end else if (a.inf || w.inf) begin
        // inf * 0 and inf - inf are invalid.
        if (a.zero || w.zero || (acc_inf && acc[31] != pneg)) result = F32_QNAN;
        else result = {pneg, 8'hff, 23'b0};
      end else if (acc_inf) begin
        result = acc;
      end else if (a.zero || w.zero) begin
        // A zero product: the sum is the accumulator, and -0 only if both zeros are -0.
        result = acc_zero ? {pneg & acc[31], 31'b0} : acc;
      end else begin
        prod = a.sig * w.sig;  // exact, in [2^46, 2^48): operands are normalized
        prod_exp = 16'($signed(a.exp)) + 16'($signed(w.exp));
        p = {27'b0, prod, 2'b0};
        pos = acc_exp - prod_exp + 16'sd2;  // where the addend's LSB lands in the window
        if (!acc_zero && pos >= 16'sd52) begin
          // The product is below a quarter of the addend's ulp: the sum rounds to the addend.
          result = acc;
        end else begin
          if (acc_zero) begin
            c = '0;
          end else if (pos >= 16'sd0) begin
            c = WIN'(acc_sig) << pos;
          end else begin
            // The product's top is at bit 48 or above, so the result rounds at bit 24 or above:
            // addend bits below window bit 1 matter only as a sticky bit, kept at bit 0.
            cut = (pos <= -16'sd23) ? 6'd24 : 6'(16'sd1 - pos);
            kept = acc_sig >> cut;
            c = (WIN'(kept) << 1) |
                WIN'((acc_sig & ((24'd1 << cut) - 24'd1)) != 24'b0 || cut == 6'd24);
          end
          if (acc_zero || pneg == acc[31]) begin
            v = p + c;
            neg = pneg;
          end else if (p >= c) begin
            v = p - c;
            neg = pneg;
          end else begin
            v = c - p;
            neg = acc[31];
          end
          if (v == '0) begin
            result = 32'h0;  // an exact zero sum is +0
          end else begin
            // Round (-1)^neg * v * 2^(prod_exp - 2) once to f32.
            // The top set bit of v, found by halving (a leading-one detector of 7 steps; a
            // bit-serial loop over the 77 bits was a fifth of the verilated array's time).
            if (v[WIN-1:64] != '0) begin
              part = 64'(v[WIN-1:64]);
              top  = 7'd64;
            end else begin
              part = v[63:0];
            end
            if (part[63:32] != '0) begin
              part = part >> 32;
              top  = top + 7'd32;
            end
            if (part[31:16] != '0) begin
              part = part >> 16;
              top  = top + 7'd16;
            end
            if (part[15:8] != '0) begin
              part = part >> 8;
              top  = top + 7'd8;
            end
            if (part[7:4] != '0) begin
              part = part >> 4;
              top  = top + 7'd4;
            end
            if (part[3:2] != '0) begin
              part = part >> 2;
              top  = top + 7'd2;
            end
            if (part[1]) top = top + 7'd1;
            // The result's LSB exponent: 24 significant bits from the top, never below 2^-149.
            lsb = prod_exp - 16'sd2 + 16'($unsigned(top)) - 16'sd23;
            if (lsb < -16'sd149) lsb = -16'sd149;
            shift = lsb - (prod_exp - 16'sd2);
            if (shift <= 16'sd0) begin
              sig = 25'(v << (-shift));  // exact: fewer than 24 significant bits
            end else if (shift > 16'(WIN)) begin
              sticky = 1'b1;
            end else begin
              sig = 25'(v >> shift);
              guard = v[7'(shift-16'sd1)];
              sticky = (v & ((WIN'(1) << (shift - 16'sd1)) - WIN'(1))) != '0;
            end
            if (guard && (sticky || sig[0])) sig = sig + 25'd1;
            if (sig[24]) begin
              sig = sig >> 1;
              lsb = lsb + 16'sd1;
            end
            if (!sig[23]) result = {neg, 8'h0, sig[22:0]};  // subnormal, or underflow to zero
            else if (lsb + 16'sd150 >= 16'sd255) result = {neg, 8'hff, 23'b0};  // overflow
            else result = {neg, 8'(lsb + 16'sd150), sig[22:0]};
          end
        end
      end
    end
  end

endmodule
