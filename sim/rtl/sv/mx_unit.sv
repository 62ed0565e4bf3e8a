// The TNPU matrix unit: the systolic array, its double-buffered weights, and the controller that
// runs the fast model's commands (mx.pre, mx.mm, mx.mma) against scratchpad read/write ports.
// SPDX-License-Identifier: Apache-2.0
//
// Commands (one accepted per cycle, in order; cmd_ready says whether this edge takes it):
//   OP_PRE  k x n weight tile (1 <= k <= ROWS, 1 <= n <= COLS) of `mode` from row address
//           src_addr, row stride src_stride (bytes). It fills the shadow bank, one array row per
//           cycle, ROWS cycles (rows k.. are marked outside the tile), while an mx.mm may stream.
//   OP_MM   m rows of A (m x k, at src_addr, stride src_stride) times the weights of the last
//   OP_MMA  preload (the shadow bank becomes active at this command) into C (m x n f32 / i32 at
//           dst_addr, stride dst_stride); each C[i][j] is one MAC chain over k in order, from -0
//           (i8: 0) for OP_MM or from the C in memory for OP_MMA. A row issues every cycle
//           (f32: every FP32_PASSES cycles); an mm waits until a preload in progress is done.
// Memory: each read port returns its row's elements one cycle after the request, one per 32-bit
// lane (raw bits in the low bits); c_wr writes one C row. A read waits while a C write still in
// flight overlaps its bytes, so chained mx.mma and A or weights produced by an earlier command
// read what the fast model reads (its commands run one after another). w_rd_ready / a_rd_ready
// say whether the memory takes a weight / A row request at this edge: the SRAM's banks serve a
// row in one edge only if it spans no more words than there are banks, so the memory side holds
// a port not ready for the extra edges a wide row needs (an mx.mma's C row read shares the A
// request's slot and its banks). Tied high, the unit reads a row per edge.
// Events: pre_done / mm_done when a command's last weight row / C row is written; err_valid when
// a command is rejected (err_code, ERR_*; the command is dropped).
// The defaults can be set with +define+: a hierarchical build (sim/rtl/CMakeLists.txt) cannot
// pass -G parameters, which Verilator would also apply to the separately verilated PE rows.
`ifndef MX_ROWS
`define MX_ROWS 8
`endif
`ifndef MX_COLS
`define MX_COLS 8
`endif
`ifndef MX_FP32_PASSES
`define MX_FP32_PASSES 4
`endif
module mx_unit
  import mx_pkg::*;
#(
    parameter int ROWS = `MX_ROWS,
    parameter int COLS = `MX_COLS,
    parameter int FP32_PASSES = `MX_FP32_PASSES
) (
    input logic clk,
    input logic rst_n,

    input logic cmd_valid,
    output logic cmd_ready,
    input logic [1:0] cmd_op,
    input logic [2:0] cmd_mode,
    input logic [15:0] cmd_k,
    input logic [15:0] cmd_n,
    input logic [31:0] cmd_m,
    input logic [31:0] cmd_src_addr,
    input logic [31:0] cmd_src_stride,
    input logic [31:0] cmd_dst_addr,
    input logic [31:0] cmd_dst_stride,
    input logic [7:0] cmd_tag,

    output logic w_rd_en,
    output logic [31:0] w_rd_addr,
    output logic [15:0] w_rd_count,
    output logic [2:0] w_rd_mode,
    input logic [COLS-1:0][31:0] w_rd_data,
    input logic w_rd_ready,

    output logic a_rd_en,
    output logic [31:0] a_rd_addr,
    output logic [15:0] a_rd_count,
    output logic [2:0] a_rd_mode,
    input logic [ROWS-1:0][31:0] a_rd_data,
    input logic a_rd_ready,

    output logic acc_rd_en,
    output logic [31:0] acc_rd_addr,
    output logic [15:0] acc_rd_count,
    input logic [COLS-1:0][31:0] acc_rd_data,

    output logic c_wr_en,
    output logic [31:0] c_wr_addr,
    output logic [15:0] c_wr_count,
    output logic [COLS-1:0][31:0] c_wr_data,

    output logic pre_done,
    output logic [7:0] pre_done_tag,
    output logic mm_done,
    output logic [7:0] mm_done_tag,
    output logic err_valid,
    output logic [2:0] err_code,
    output logic [7:0] err_tag
);
  localparam int LAT = array_latency(ROWS, COLS);
  localparam int ROW_W = ROWS > 1 ? $clog2(ROWS) : 1;
  localparam int LAT_W = LAT > 1 ? $clog2(LAT) : 1;

  // Bytes per element of a mode.
  function automatic logic [2:0] elem_bytes(input logic [2:0] mode);
    return mode == MODE_F32 ? 3'd4 : mode == MODE_I8 ? 3'd1 : 3'd2;
  endfunction

  // Whether [a, a + alen) and [b, b + blen) share a byte (33-bit ends: no wrap-around).
  function automatic logic overlaps(input logic [31:0] a, input logic [31:0] alen,
                                    input logic [31:0] b, input logic [31:0] blen);
    return {1'b0, a} < {1'b0, b} + {1'b0, blen} && {1'b0, b} < {1'b0, a} + {1'b0, alen};
  endfunction

  // ---- weight banks -----------------------------------------------------------------------
  logic active_bank;  // the bank the last mx.mm used
  logic shadow_fresh;  // a preload went into the other bank since then
  logic [1:0] bank_loaded;
  logic [2:0] bank_mode[2];
  logic [15:0] bank_k[2];
  logic [15:0] bank_n[2];
  logic use_bank;  // the bank an mx.mm accepted now computes with
  assign use_bank = shadow_fresh ? !active_bank : active_bank;

  // ---- the C rows in flight (for the read-after-write check) ------------------------------
  typedef struct packed {
    logic last;  // the command's last slot
    logic [7:0] tag;
    logic [31:0] c_addr;
    logic [15:0] n;
  } row_meta_t;
  // A slot is a row of A or the end marker of an m = 0 command; a row writes a C row.
  logic issue_slot, issue_row;  // registered with the read requests
  row_meta_t issue_q;
  logic array_slot, array_row;  // registered with the array's input row
  row_meta_t array_q;
  logic [LAT-1:0] flight_slot, flight_row;  // the slots inside the array, a circular buffer
  row_meta_t flight_q[LAT];
  logic [LAT_W-1:0] flight_ptr;  // the oldest: its C row leaves the array this cycle
  // ---- load engine (mx.pre) -----------------------------------------------------------------
  logic ld_busy;
  logic [15:0] ld_row, ld_k, ld_n;
  logic [2:0] ld_mode;
  logic [31:0] ld_addr, ld_stride;
  logic ld_bank;
  logic [7:0] ld_tag;
  logic ld_reads, ld_blocked, ld_issue, ld_finishing;
  assign ld_reads = ld_row < ld_k;  // rows k.. are written as outside the tile, without a read
  logic w_hazard;  // the weight row ld_addr would read overlaps a C write still to come
  assign ld_blocked = ld_reads && (w_hazard || !w_rd_ready);
  assign ld_issue = ld_busy && !ld_blocked;
  assign ld_finishing = ld_issue && ld_row == 16'(ROWS - 1);

  // The weight row read last cycle, on its way to the array.
  logic wq_valid, wq_reads, wq_bank, wq_last;
  logic [ROW_W-1:0] wq_row;
  logic [15:0] wq_n;
  logic [2:0] wq_mode;
  logic [7:0] wq_tag;

  // ---- stream engine (mx.mm / mx.mma) -------------------------------------------------------
  logic st_busy, st_acc, st_bank;
  logic [31:0] st_left;  // rows still to issue (0: the end marker of an m = 0 command)
  logic [3:0] st_phase;  // cycle within a row's passes; the row's reads issue at phase 0
  logic [3:0] st_passes;
  logic [2:0] st_mode;
  logic [15:0] st_k, st_n;
  logic [31:0] st_a_addr, st_lda, st_c_addr, st_ldc;
  logic [7:0] st_tag;
  logic [2:0] issue_mode;  // the slot issued last cycle
  logic issue_acc, issue_bank;
  logic st_marker;  // an m = 0 command: one slot with no row, for its mm_done
  logic a_hazard, acc_hazard;  // the A / C row the next slot reads overlaps a C write to come
  logic st_slot, st_finishing;
  // A row (or the marker) issues in this cycle.
  assign st_slot = st_busy && st_phase == 4'd0 &&
      (st_marker || (st_left != 32'd0 && a_rd_ready && !a_hazard && !(st_acc && acc_hazard)));
  // The engine's last cycle: the marker, or the last row's last pass.
  assign st_finishing = st_busy && (st_marker ? st_slot : st_passes == 4'd1 ?
      st_slot && st_left == 32'd1 : st_left == 32'd0 && st_phase == st_passes - 4'd1);

  // Read-after-write: C writes still to come are the slots issued and those in the array, but
  // not the oldest, which is written at the edge a read issues, before the read is answered.
  always_comb begin
    logic [31:0] w_len, a_len, c_len;
    w_len = 32'(ld_n) * 32'(elem_bytes(ld_mode));
    a_len = 32'(st_k) * 32'(elem_bytes(st_mode));
    c_len = {14'b0, st_n, 2'b0};
    w_hazard = 1'b0;
    a_hazard = 1'b0;
    acc_hazard = 1'b0;
    if (issue_row) begin
      w_hazard |= overlaps(ld_addr, w_len, issue_q.c_addr, {14'b0, issue_q.n, 2'b0});
      a_hazard |= overlaps(st_a_addr, a_len, issue_q.c_addr, {14'b0, issue_q.n, 2'b0});
      acc_hazard |= overlaps(st_c_addr, c_len, issue_q.c_addr, {14'b0, issue_q.n, 2'b0});
    end
    if (array_row) begin
      w_hazard |= overlaps(ld_addr, w_len, array_q.c_addr, {14'b0, array_q.n, 2'b0});
      a_hazard |= overlaps(st_a_addr, a_len, array_q.c_addr, {14'b0, array_q.n, 2'b0});
      acc_hazard |= overlaps(st_c_addr, c_len, array_q.c_addr, {14'b0, array_q.n, 2'b0});
    end
    for (int s = 0; s < LAT; s++) begin
      if (flight_row[s] && LAT_W'(s) != flight_ptr) begin
        w_hazard |= overlaps(ld_addr, w_len, flight_q[s].c_addr, {14'b0, flight_q[s].n, 2'b0});
        a_hazard |= overlaps(st_a_addr, a_len, flight_q[s].c_addr, {14'b0, flight_q[s].n, 2'b0});
        acc_hazard |= overlaps(st_c_addr, c_len, flight_q[s].c_addr, {14'b0, flight_q[s].n, 2'b0});
      end
    end
  end

  // ---- command acceptance ------------------------------------------------------------------
  logic is_pre, is_mm;
  logic [2:0] cmd_error;
  assign is_pre = cmd_op == OP_PRE;
  assign is_mm = cmd_op == OP_MM || cmd_op == OP_MMA;
  always_comb begin
    cmd_error = ERR_NONE;
    if (!is_pre && !is_mm) cmd_error = ERR_OP;
    else if (cmd_mode > MODE_I8) cmd_error = ERR_MODE;
    else if (is_pre && (cmd_k == 16'd0 || cmd_k > 16'(ROWS) || cmd_n == 16'd0 ||
                        cmd_n > 16'(COLS)))
      cmd_error = ERR_SHAPE;
    else if (is_mm && !bank_loaded[use_bank]) cmd_error = ERR_NO_WEIGHTS;
    else if (is_mm && bank_mode[use_bank] != cmd_mode) cmd_error = ERR_MODE_MISMATCH;
  end
  logic ld_free, st_free, accept;
  assign ld_free = !ld_busy || ld_finishing;
  assign st_free = !st_busy || st_finishing;
  // A rejected command is taken at once; an mm also waits for the preload in progress.
  assign cmd_ready = cmd_error != ERR_NONE || (is_pre ? ld_free : st_free && ld_free);
  assign accept = cmd_valid && cmd_ready;

  always_ff @(posedge clk) begin
    err_valid <= 1'b0;
    err_code <= cmd_error;
    err_tag <= cmd_tag;
    if (!rst_n) begin
      active_bank <= 1'b0;
      shadow_fresh <= 1'b0;
      bank_loaded <= 2'b00;
    end else if (accept && cmd_error != ERR_NONE) begin
      err_valid <= 1'b1;
    end else if (accept && is_pre) begin
      // Into the shadow bank: the active one may still be streaming.
      bank_loaded[!active_bank] <= 1'b1;
      bank_mode[!active_bank] <= cmd_mode;
      bank_k[!active_bank] <= cmd_k;
      bank_n[!active_bank] <= cmd_n;
      shadow_fresh <= 1'b1;
    end else if (accept && is_mm) begin
      active_bank <= use_bank;
      shadow_fresh <= 1'b0;
    end
  end

  // ---- load engine: one weight row per cycle, ROWS rows ----------------------------------
  always_ff @(posedge clk) begin
    w_rd_en <= 1'b0;
    wq_valid <= 1'b0;
    if (!rst_n) begin
      ld_busy <= 1'b0;
    end else begin
      if (ld_issue) begin
        w_rd_en <= ld_reads;
        w_rd_addr <= ld_addr;
        w_rd_count <= ld_n;
        w_rd_mode <= ld_mode;
        wq_valid <= 1'b1;
        wq_reads <= ld_reads;
        wq_row <= ROW_W'(ld_row);
        wq_bank <= ld_bank;
        wq_n <= ld_n;
        wq_mode <= ld_mode;
        wq_last <= ld_finishing;
        wq_tag <= ld_tag;
        ld_row <= ld_row + 16'd1;
        ld_addr <= ld_addr + ld_stride;
        if (ld_finishing) ld_busy <= 1'b0;
      end
      if (accept && cmd_error == ERR_NONE && is_pre) begin
        ld_busy <= 1'b1;
        ld_row <= 16'd0;
        ld_k <= cmd_k;
        ld_n <= cmd_n;
        ld_mode <= cmd_mode;
        ld_addr <= cmd_src_addr;
        ld_stride <= cmd_src_stride;
        ld_bank <= !active_bank;
        ld_tag <= cmd_tag;
      end
    end
  end

  // The weight row arrives: decode it and write it into the array (skewed there per column).
  logic aw_we, aw_bank;
  logic [ROW_W-1:0] aw_row;
  logic [COLS-1:0] aw_active;
  operand_t [COLS-1:0] aw_data;
  always_ff @(posedge clk) begin
    pre_done <= 1'b0;
    if (!rst_n) begin
      aw_we <= 1'b0;
    end else begin
      aw_we <= wq_valid;
      if (wq_valid) begin
        aw_bank <= wq_bank;
        aw_row  <= wq_row;
        for (int j = 0; j < COLS; j++) begin
          aw_active[j] <= wq_reads && 16'(j) < wq_n;
          aw_data[j] <= decode(wq_mode, w_rd_data[j]);
        end
        pre_done <= wq_last;
        pre_done_tag <= wq_tag;
      end
    end
  end

  // ---- stream engine: one A row per cycle (f32: per FP32_PASSES cycles) ------------------------
  always_ff @(posedge clk) begin
    a_rd_en <= 1'b0;
    acc_rd_en <= 1'b0;
    issue_slot <= 1'b0;
    issue_row <= 1'b0;
    if (!rst_n) begin
      st_busy <= 1'b0;
    end else begin
      if (st_slot) begin
        issue_slot <= 1'b1;
        issue_row <= !st_marker;
        issue_q.last <= st_marker || st_left == 32'd1;
        issue_q.tag <= st_tag;
        issue_q.c_addr <= st_c_addr;
        issue_q.n <= st_n;
        issue_mode <= st_mode;
        issue_acc <= st_acc;
        issue_bank <= st_bank;
        if (!st_marker) begin
          a_rd_en <= 1'b1;
          a_rd_addr <= st_a_addr;
          a_rd_count <= st_k;
          a_rd_mode <= st_mode;
          acc_rd_en <= st_acc;
          acc_rd_addr <= st_c_addr;
          acc_rd_count <= st_n;
          st_left <= st_left - 32'd1;
          st_a_addr <= st_a_addr + st_lda;
          st_c_addr <= st_c_addr + st_ldc;
        end
      end
      // The passes of an f32 row: the next row waits FP32_PASSES cycles.
      if (st_slot && !st_marker && st_passes != 4'd1) st_phase <= 4'd1;
      else if (st_phase != 4'd0) st_phase <= st_phase == st_passes - 4'd1 ? 4'd0 : st_phase + 4'd1;
      if (st_finishing) st_busy <= 1'b0;
      if (accept && cmd_error == ERR_NONE && is_mm) begin
        st_busy <= 1'b1;
        st_left <= cmd_m;
        st_marker <= cmd_m == 32'd0;
        st_phase <= 4'd0;
        st_passes <= cmd_mode == MODE_F32 ? 4'(FP32_PASSES) : 4'd1;
        st_acc <= cmd_op == OP_MMA;
        st_bank <= use_bank;
        st_mode <= cmd_mode;
        st_k <= bank_k[use_bank];
        st_n <= bank_n[use_bank];
        st_a_addr <= cmd_src_addr;
        st_lda <= cmd_src_stride;
        st_c_addr <= cmd_dst_addr;
        st_ldc <= cmd_dst_stride;
        st_tag <= cmd_tag;
      end
    end
  end

  // The A row (and for mx.mma the C row) arrives: decode it, start the chains.
  logic in_valid, in_int, in_bank;
  operand_t [ROWS-1:0] in_a;
  logic [COLS-1:0][31:0] in_init;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      in_valid <= 1'b0;
      array_slot <= 1'b0;
      array_row <= 1'b0;
    end else begin
      in_valid <= issue_row;
      array_slot <= issue_slot;
      array_row <= issue_row;
      array_q <= issue_q;
      if (issue_row) begin
        in_int  <= issue_mode == MODE_I8;
        in_bank <= issue_bank;
        for (int k = 0; k < ROWS; k++) in_a[k] <= decode(issue_mode, a_rd_data[k]);
        for (int j = 0; j < COLS; j++)
        in_init[j] <= issue_acc ? acc_rd_data[j] : issue_mode == MODE_I8 ? 32'h0 : F32_NEG_ZERO;
      end
    end
  end

  // ---- the array ------------------------------------------------------------------------------
  // Its reset is registered: every PE copies it, and a reset straight from the port would be
  // copied at each half cycle (a tenth of the verilated array's time). Held R + C + 2 cycles by
  // the driver, it still sweeps the skew buffers; no row reaches the array within a cycle of it.
  logic array_rst_n;
  always_ff @(posedge clk) array_rst_n <= rst_n;
  logic out_valid;
  logic [COLS-1:0][31:0] out_psum;
  mx_array #(
      .ROWS(ROWS),
      .COLS(COLS)
  ) array (
      .clk,
      .rst_n(array_rst_n),
      .in_valid,
      .in_int,
      .in_bank,
      .in_a,
      .in_init,
      .w_we(aw_we),
      .w_bank(aw_bank),
      .w_row(aw_row),
      .w_active(aw_active),
      .w_data(aw_data),
      .out_valid,
      .out_psum
  );

  // ---- rows in flight and the write-back --------------------------------------------------------
  row_meta_t leaving;
  assign leaving = flight_q[flight_ptr];
  always_ff @(posedge clk) begin
    c_wr_en <= 1'b0;
    mm_done <= 1'b0;
    if (!rst_n) begin
      flight_ptr  <= '0;
      flight_slot <= '0;
      flight_row  <= '0;
    end else begin
      flight_slot[flight_ptr] <= array_slot;
      flight_row[flight_ptr] <= array_row;
      flight_ptr <= flight_ptr == LAT_W'(LAT - 1) ? '0 : flight_ptr + LAT_W'(1);
      if (flight_row[flight_ptr]) begin
        c_wr_en <= 1'b1;
        c_wr_addr <= leaving.c_addr;
        c_wr_count <= leaving.n;
        c_wr_data <= out_psum;
      end
      mm_done <= flight_slot[flight_ptr] && leaving.last;
      mm_done_tag <= leaving.tag;
    end
    flight_q[flight_ptr] <= array_q;
  end

  // The array's own valid mirrors flight_row (both count LAT cycles); kept for waveforms.
  logic unused;
  assign unused = out_valid;

endmodule
