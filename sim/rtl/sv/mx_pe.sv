// One processing element of the weight-stationary array: two weight banks (the tile in use and
// the shadow one being preloaded); each cycle an operand moves right and a partial sum moves down.
// SPDX-License-Identifier: Apache-2.0
module mx_pe
  import mx_pkg::*;
(
    input logic clk,
    input logic rst_n /*verilator public_flat_rd*/,
    // One element of an A row from the left, with its row's arithmetic and weight bank.
    input logic a_valid_i /*verilator public_flat_rd*/,
    input logic a_int_i /*verilator public_flat_rd*/,
    input logic a_bank_i /*verilator public_flat_rd*/,
    input operand_t a_i /*verilator public_flat_rd*/,
    output logic a_valid_o,
    output logic a_int_o,
    output logic a_bank_o,
    output operand_t a_o,
    // The chain so far from above; this PE's step of it below.
    input logic [31:0] psum_i /*verilator public_flat_rd*/,
    output logic [31:0] psum_o,
    // A write of one weight bank, addressed to this PE by the preload network.
    input logic w_we_i /*verilator public_flat_rd*/,
    input logic w_bank_i /*verilator public_flat_rd*/,
    input logic w_active_i /*verilator public_flat_rd*/,
    input operand_t w_i /*verilator public_flat_rd*/
);
  // Kept as its own simulation class: all PEs share one copy of the MAC code.
  /*verilator no_inline_module*/

  operand_t w_q[2];
  logic [1:0] active_q;  // whether the bank's weight is inside the loaded k x n tile
  logic [31:0] mac_result;

  // Outside the tile the chain passes unchanged: even adding a zero product would turn the -0
  // an mx.mm starts from into +0.
  mx_mac mac (
      .enable(a_valid_i && active_q[a_bank_i]),
      .is_int(a_int_i),
      .a(a_i),
      .w(w_q[a_bank_i]),
      .acc(psum_i),
      .result(mac_result)
  );

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      a_valid_o <= 1'b0;
      active_q <= 2'b00;
    end else begin
      a_valid_o <= a_valid_i;
      if (w_we_i) active_q[w_bank_i] <= w_active_i;
    end
    if (a_valid_i) begin
      a_o <= a_i;
      a_int_o <= a_int_i;
      a_bank_o <= a_bank_i;
      psum_o <= mac_result;
    end
    if (w_we_i) w_q[w_bank_i] <= w_i;
  end

endmodule
