// One row of PEs: the operand enters at the left and moves right one PE per cycle; partial sums
// come from the row above and go to the row below; weight writes arrive per column.
// SPDX-License-Identifier: Apache-2.0
module mx_pe_row
  import mx_pkg::*;
#(
    parameter int COLS  = 8,
    parameter int ROW_W = 3
) (
    input logic clk,
    input logic rst_n /*verilator public_flat_rd*/,
    // This row's index: a port rather than a parameter, so that every row is the same
    // simulation class (a 128-row array compiles one row, not 128).
    input logic [ROW_W-1:0] row_id /*verilator public_flat_rd*/,
    input logic a_valid_i /*verilator public_flat_rd*/,
    input logic a_int_i /*verilator public_flat_rd*/,
    input logic a_bank_i /*verilator public_flat_rd*/,
    input operand_t a_i /*verilator public_flat_rd*/,
    input logic [COLS-1:0][31:0] psum_i /*verilator public_flat_rd*/,
    output logic [COLS-1:0][31:0] psum_o,
    output logic [COLS-1:0] psum_valid_o,
    // The weight write bus, already skewed per column: column j's lane is j cycles late.
    input logic [COLS-1:0] w_we_i /*verilator public_flat_rd*/,
    input logic [COLS-1:0] w_bank_i /*verilator public_flat_rd*/,
    input logic [COLS-1:0][ROW_W-1:0] w_row_i /*verilator public_flat_rd*/,
    input logic [COLS-1:0] w_active_i /*verilator public_flat_rd*/,
    input operand_t [COLS-1:0] w_i /*verilator public_flat_rd*/
);
  /*verilator no_inline_module*/

  logic [COLS:0] valid;
  logic [COLS:0] is_int;
  logic [COLS:0] bank;
  operand_t [COLS:0] operand;

  assign valid[0] = a_valid_i;
  assign is_int[0] = a_int_i;
  assign bank[0] = a_bank_i;
  assign operand[0] = a_i;

  for (genvar j = 0; j < COLS; j++) begin : g_pe
    mx_pe pe (
        .clk,
        .rst_n,
        .a_valid_i(valid[j]),
        .a_int_i(is_int[j]),
        .a_bank_i(bank[j]),
        .a_i(operand[j]),
        .a_valid_o(valid[j+1]),
        .a_int_o(is_int[j+1]),
        .a_bank_o(bank[j+1]),
        .a_o(operand[j+1]),
        .psum_i(psum_i[j]),
        .psum_o(psum_o[j]),
        .w_we_i(w_we_i[j] && w_row_i[j] == row_id),
        .w_bank_i(w_bank_i[j]),
        .w_active_i(w_active_i[j]),
        .w_i(w_i[j])
    );
    // A PE's sum below is new exactly when its operand moved on to the right.
    assign psum_valid_o[j] = valid[j+1];
  end

  // The last PE's outgoing operand has nowhere to go.
  logic unused;
  assign unused = ^{is_int[COLS], bank[COLS], operand[COLS]};

endmodule
