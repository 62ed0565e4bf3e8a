// A block of consecutive PE rows: the unit a large array is verilated in (sim/rtl/CMakeLists.txt
// verilates sizes with many rows hierarchically: this block once, the array over its instances).
// Row r of the block is row base_row + r of the array; sums enter at the block's top row and
// leave at its bottom row.
// SPDX-License-Identifier: Apache-2.0
//
// Its name is `MX_PE_BLOCK (default mx_pe_block): a hierarchical build names it per size, so that
// the separately verilated blocks of two sizes do not share symbol names. Its ports are plain
// vectors because Verilator's block wrapper cannot carry a struct.
`ifndef MX_PE_BLOCK
`define MX_PE_BLOCK mx_pe_block
`endif
/* verilator lint_off DECLFILENAME */
module `MX_PE_BLOCK
/* verilator lint_on DECLFILENAME */
  import mx_pkg::*;
#(
    parameter int COLS = 8,
    parameter int ROW_W = 3,
    parameter int BROWS = 8,  // rows in this block
    localparam int OP_W = $bits(operand_t)
) (
    input logic clk,
    input logic rst_n,
    // The array row index of the block's first row (a port: every block is the same class).
    input logic [ROW_W-1:0] base_row,
    // Each row's operand from the left, as mx_pe_row takes it.
    input logic [BROWS-1:0] a_valid_i,
    input logic [BROWS-1:0] a_int_i,
    input logic [BROWS-1:0] a_bank_i,
    input logic [BROWS-1:0][OP_W-1:0] a_i,
    // Sums into the first row and out of the last.
    input logic [COLS-1:0][31:0] psum_i,
    output logic [COLS-1:0][31:0] psum_o,
    output logic [COLS-1:0] psum_valid_o,
    // The skewed weight write bus, as mx_pe_row takes it.
    input logic [COLS-1:0] w_we_i,
    input logic [COLS-1:0] w_bank_i,
    input logic [COLS-1:0][ROW_W-1:0] w_row_i,
    input logic [COLS-1:0] w_active_i,
    input logic [COLS-1:0][OP_W-1:0] w_i
);
  /*verilator no_inline_module*/
  // With --hierarchical (large arrays), verilated on its own once.
  /*verilator hier_block*/

  logic [BROWS:0][COLS-1:0][31:0] psum;
  logic [BROWS-1:0][COLS-1:0] psum_valid;
  operand_t [COLS-1:0] w_ops;
  assign psum[0] = psum_i;
  assign psum_o = psum[BROWS];
  assign psum_valid_o = psum_valid[BROWS-1];
  for (genvar j = 0; j < COLS; j++) begin : g_w
    assign w_ops[j] = operand_t'(w_i[j]);
  end

  for (genvar r = 0; r < BROWS; r++) begin : g_row
    mx_pe_row #(
        .COLS (COLS),
        .ROW_W(ROW_W)
    ) row (
        .clk,
        .rst_n,
        .row_id(base_row + ROW_W'(r)),
        .a_valid_i(a_valid_i[r]),
        .a_int_i(a_int_i[r]),
        .a_bank_i(a_bank_i[r]),
        .a_i(operand_t'(a_i[r])),
        .psum_i(psum[r]),
        .psum_o(psum[r+1]),
        .psum_valid_o(psum_valid[r]),
        .w_we_i,
        .w_bank_i,
        .w_row_i,
        .w_active_i,
        .w_i(w_ops)
    );
  end

  // Validity is tracked by the last row's operands alone; the other rows' copies only mirror it.
  if (BROWS > 1) begin : g_unused
    logic unused;
    assign unused = ^psum_valid[BROWS-2:0];
  end

endmodule
