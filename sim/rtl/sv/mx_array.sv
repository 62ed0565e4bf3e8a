// The ROWS x COLS weight-stationary systolic array: PE (r, j) holds W[r][j]; element k of an A
// row enters row k, k cycles late, and moves right; column j's chain starts at the top with the
// accumulator's value (or -0), takes one MAC per PE row in k order and leaves at the bottom.
// SPDX-License-Identifier: Apache-2.0
//
// Rows enter unskewed (one whole A row and its initial sums per cycle) and leave unskewed (one
// whole C row per cycle), array_latency(ROWS, COLS) cycles later. Weight writes are skewed like
// the data (column j one cycle later than column j-1), so a preload into one bank can follow the
// last row that still reads that bank without overtaking it anywhere.
module mx_array
  import mx_pkg::*;
#(
    parameter int ROWS = 8,
    parameter int COLS = 8,
    localparam int ROW_W = ROWS > 1 ? $clog2(ROWS) : 1
) (
    input logic clk,
    input logic rst_n,
    // One A row (elements 0..ROWS-1) and the chains' starting values.
    input logic in_valid,
    input logic in_int,
    input logic in_bank,
    input operand_t [ROWS-1:0] in_a,
    input logic [COLS-1:0][31:0] in_init,
    // One weight row into one bank.
    input logic w_we,
    input logic w_bank,
    input logic [ROW_W-1:0] w_row,
    input logic [COLS-1:0] w_active,
    input operand_t [COLS-1:0] w_data,
    // One C row.
    output logic out_valid,
    output logic [COLS-1:0][31:0] out_psum
);
  localparam int A_W = 2 + $bits(operand_t);
  localparam int W_W = 2 + ROW_W + $bits(operand_t);

  // Operands: row k of the array gets element k, k cycles late.
  logic [ROWS-1:0][A_W-1:0] a_bus, a_skewed;
  logic [ROWS-1:0] a_valid;
  for (genvar k = 0; k < ROWS; k++) begin : g_a_bus
    assign a_bus[k] = {in_int, in_bank, in_a[k]};
  end
  mx_skew #(
      .LANES(ROWS),
      .WIDTH(A_W)
  ) a_skew (
      .clk,
      .rst_n,
      .valid_i({ROWS{in_valid}}),
      .data_i(a_bus),
      .valid_o(a_valid),
      .data_o(a_skewed)
  );

  // Starting values: column j gets its own j cycles late (its chain starts when element 0 of
  // the row reaches PE (0, j)).
  logic [COLS-1:0][31:0] init_skewed;
  logic [COLS-1:0] init_valid;
  mx_skew #(
      .LANES(COLS),
      .WIDTH(32)
  ) init_skew (
      .clk,
      .rst_n,
      .valid_i({COLS{in_valid}}),
      .data_i(in_init),
      .valid_o(init_valid),
      .data_o(init_skewed)
  );

  // Weight writes: column j's lane j cycles late, like the operands passing that column.
  logic [COLS-1:0][W_W-1:0] w_bus, w_skewed;
  logic [COLS-1:0] w_we_skewed, w_bank_skewed, w_active_skewed;
  logic [COLS-1:0][ROW_W-1:0] w_row_skewed;
  operand_t [COLS-1:0] w_data_skewed;
  for (genvar j = 0; j < COLS; j++) begin : g_w_bus
    assign w_bus[j] = {w_bank, w_active[j], w_row, w_data[j]};
    assign {w_bank_skewed[j], w_active_skewed[j], w_row_skewed[j], w_data_skewed[j]} = w_skewed[j];
  end
  mx_skew #(
      .LANES(COLS),
      .WIDTH(W_W)
  ) w_skew (
      .clk,
      .rst_n,
      .valid_i({COLS{w_we}}),
      .data_i(w_bus),
      .valid_o(w_we_skewed),
      .data_o(w_skewed)
  );

  // The PE rows in blocks of BLOCK_ROWS (about 2 048 PEs: the unit a hierarchical build
  // verilates once); block b's sums come from block b-1 (block 0's from the starting values).
  localparam int BLOCK_TARGET = COLS >= 2048 ? 1 : 2048 / COLS;
  localparam int BLOCK_ROWS = BLOCK_TARGET >= ROWS || ROWS % BLOCK_TARGET != 0 ? ROWS : BLOCK_TARGET;
  localparam int BLOCKS = ROWS / BLOCK_ROWS;
  logic [BLOCKS:0][COLS-1:0][31:0] psum;
  logic [BLOCKS-1:0][COLS-1:0] psum_valid;
  assign psum[0] = init_skewed;
  for (genvar b = 0; b < BLOCKS; b++) begin : g_block
    logic [BLOCK_ROWS-1:0] valid, is_int, bank;
    logic [BLOCK_ROWS-1:0][$bits(operand_t)-1:0] operand;
    for (genvar r = 0; r < BLOCK_ROWS; r++) begin : g_a
      assign valid[r] = a_valid[b*BLOCK_ROWS+r];
      assign {is_int[r], bank[r], operand[r]} = a_skewed[b*BLOCK_ROWS+r];
    end
    `MX_PE_BLOCK #(
        .COLS (COLS),
        .ROW_W(ROW_W),
        .BROWS(BLOCK_ROWS)
    ) block (
        .clk,
        .rst_n,
        .base_row(ROW_W'(b * BLOCK_ROWS)),
        .a_valid_i(valid),
        .a_int_i(is_int),
        .a_bank_i(bank),
        .a_i(operand),
        .psum_i(psum[b]),
        .psum_o(psum[b+1]),
        .psum_valid_o(psum_valid[b]),
        .w_we_i(w_we_skewed),
        .w_bank_i(w_bank_skewed),
        .w_row_i(w_row_skewed),
        .w_active_i(w_active_skewed),
        .w_i(w_data_skewed)
    );
  end

  // Results: column j leaves COLS-1-j cycles late, so a whole C row comes out at once.
  logic [COLS-1:0] out_valid_lanes;
  mx_skew #(
      .LANES  (COLS),
      .WIDTH  (32),
      .REVERSE(1'b1)
  ) out_skew (
      .clk,
      .rst_n,
      .valid_i(psum_valid[BLOCKS-1]),
      .data_i(psum[BLOCKS]),
      .valid_o(out_valid_lanes),
      .data_o(out_psum)
  );
  assign out_valid = out_valid_lanes[0];

  // Validity is tracked by the operands alone; the other valid copies only mirror it.
  logic unused;
  assign unused = ^{init_valid, psum_valid, out_valid_lanes[COLS-1:1]};

endmodule
