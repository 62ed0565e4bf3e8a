// Delays lane l of a bus by l cycles (or LANES-1-l with REVERSE): the staircase that feeds a
// systolic array's edge and straightens its results.
// SPDX-License-Identifier: Apache-2.0
//
// A circular buffer of LANES-1 whole-bus entries instead of a triangle of shift registers: each
// cycle writes one entry and each lane reads the entry of its own delay, so the work per cycle
// grows with LANES, not LANES^2 (a 128-lane triangle would move 8 128 registers every cycle).
module mx_skew #(
    parameter int LANES = 8,
    parameter int WIDTH = 32,
    parameter bit REVERSE = 1'b0
) (
    input logic clk,
    input logic rst_n,
    input logic [LANES-1:0] valid_i,
    input logic [LANES-1:0][WIDTH-1:0] data_i,
    output logic [LANES-1:0] valid_o,
    output logic [LANES-1:0][WIDTH-1:0] data_o
);
  localparam int DEPTH = LANES > 1 ? LANES - 1 : 1;
  localparam int PTR_W = DEPTH > 1 ? $clog2(DEPTH) : 1;

  logic [LANES-1:0] valid_q[DEPTH];
  logic [LANES-1:0][WIDTH-1:0] data_q[DEPTH];
  logic [PTR_W-1:0] ptr;  // the entry written at the next edge

  // Reset sweeps the buffer one entry per cycle (rst_n is held for at least LANES cycles) rather
  // than clearing LANES^2 bits at once.
  always_ff @(posedge clk) begin
    valid_q[ptr] <= rst_n ? valid_i : '0;
    data_q[ptr] <= data_i;
    ptr <= (ptr == PTR_W'(DEPTH - 1)) ? '0 : ptr + PTR_W'(1);
  end

  // Lane l with delay d >= 1 reads the entry written d edges ago.
  always_comb begin
    for (int l = 0; l < LANES; l++) begin
      int delay;
      logic [PTR_W-1:0] slot;
      delay = REVERSE ? LANES - 1 - l : l;
      slot  = PTR_W'((int'(ptr) + DEPTH - delay) % DEPTH);
      if (delay == 0) begin
        valid_o[l] = valid_i[l];
        data_o[l]  = data_i[l];
      end else begin
        valid_o[l] = valid_q[slot][l];
        data_o[l]  = data_q[slot][l];
      end
    end
  end

endmodule
