// SPDX-License-Identifier: Apache-2.0
// DMA read tag table: one slot per outstanding read sub-request.
//
// Slot s goes out as tag {gen, s}, gen counting the slot's allocations, so a
// late or duplicated completion for an earlier use of the slot does not match
// the current one. Free slots are handed out round robin, so a slot is reused
// as late as possible.
//
// Life of a slot: Free -> Active at allocation (offset in the read stream,
// length, remaining bytes, issue time). Completions reduce the remaining
// bytes (commit_i). The read channel releases the slot (release_i) once its
// data is complete and it is the oldest sub-request. abandon_i (an error ends
// the transfer, or a soft reset) turns every Active slot still expecting data
// into a Zombie: its completions no longer match as Active (they are dropped
// as unexpected) and it becomes Free on its final completion (retire_i) or
// when its timer expires, so it is not reused while its completions may still
// arrive. retire_i also frees an Active slot whose final completion was an
// error (UR, CA, poisoned), in the cycle it is abandoned.
//
// Timeouts: a scanner looks at one slot per cycle, so each slot is checked at
// least every Tags cycles. An Active slot still expecting data timeout_i or
// more cycles after issue raises timeout_o (the read channel then abandons the
// transfer) and its timer restarts, so it stays a Zombie for another timeout.
// An expired Zombie becomes Free. The scanner and the clock (now_q) stop
// while every slot is free.
//
// Storage: what is searched every cycle stays in flops: state, gen and a
// bit per slot saying it still expects data. The state is two bit vectors,
// Active and Zombie (never both; Free is neither), so the free vector and an
// abandon are one vector operation each. off, len and stamp are written
// from one place at a time (allocation; a timeout restarts a timer, and no
// slot is allocated in that cycle), the remaining bytes only by a commit: an
// allocated slot reads its len as remaining bytes until its first commit
// (bit fresh). Each is a RAM with one write port and a read port per lookup
// (LUT RAM with asynchronous reads, see docs/dma.md).
// Lookups are combinational; updates take effect at the next edge.
`include "tpu_macros.svh"

module dma_tags #(
  parameter int unsigned  Tags   = tpu_pkg::Cfg.dma_tags,  // slots: a power of two, 2 .. 128
  localparam int unsigned SlotW  = $clog2(Tags),
  localparam int unsigned TagW   = tlp_pkg::TagW,
  localparam int unsigned GenW   = TagW - SlotW,
  localparam int unsigned OffW   = dma_pkg::OffW,
  localparam int unsigned TimerW = 33
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic [31:0]      timeout_i,     // cycles, at least 1
  // ---- allocation ----
  output logic             alloc_valid_o,  // a slot is free
  output logic [TagW-1:0]  alloc_tag_o,    // the tag it goes out with
  input  logic             alloc_i,
  input  logic [OffW-1:0]  alloc_off_i,    // global read-stream offset of the sub-request (dma_rd)
  input  logic [12:0]      alloc_len_i,    // bytes, 1 .. 4096
  // ---- completion lookup ----
  input  logic [TagW-1:0]  cpl_tag_i,
  output logic             cpl_active_o,   // the tag is in flight
  output logic             cpl_zombie_o,   // the tag was abandoned and not yet retired
  output logic [OffW-1:0]  cpl_off_o,
  output logic [12:0]      cpl_len_o,
  output logic [12:0]      cpl_rem_o,      // bytes still expected
  // ---- oldest sub-request lookup ----
  input  logic [SlotW-1:0] head_slot_i,
  output logic [OffW-1:0]  head_off_o,
  output logic [12:0]      head_len_o,
  output logic [12:0]      head_rem_o,
  // ---- updates ----
  input  logic             commit_i,      // cpl_tag_i received commit_len_i more bytes
  input  logic [12:0]      commit_len_i,
  input  logic             retire_i,      // cpl_tag_i saw its final completion and is not kept
  input  logic             release_i,     // head_slot_i is complete and retired
  input  logic             abandon_i,     // every Active slot is abandoned
  // ---- timeouts ----
  output logic             timeout_o,
  output logic [OffW-1:0]  timeout_off_o  // offset of the timed-out sub-request
);

  import dma_pkg::*;

  if (Tags < 2 || Tags > 128 || (Tags & (Tags - 1)) != 0) begin : gen_bad_tags
    $error("dma_tags: Tags must be a power of two in 2 .. 128");
  end

  logic [Tags-1:0]             active_q, active_d;  // sub-request issued, data being received
  logic [Tags-1:0]             zombie_q, zombie_d;  // abandoned: completions dropped until it retires
  logic [Tags-1:0][GenW-1:0]   gen_q, gen_d;
  logic [OffW-1:0]             off_q   [Tags];
  logic [12:0]                 len_q   [Tags];
  logic [TimerW-1:0]           stamp_q [Tags];
  logic [12:0]                 rem_q   [Tags];
  logic [Tags-1:0]             fresh_q, fresh_d;    // allocated, no commit yet: rem = len
  logic [Tags-1:0]             expect_q, expect_d;  // remaining bytes not zero
  logic [12:0]                 rem_new;
  logic [TimerW-1:0]           now_q;
  logic [SlotW-1:0]            ptr_q, ptr_d, scan_q, alloc_slot, cpl_slot;
  logic [GenW-1:0]             cpl_gen;
  logic                        expired, zombie_expired;

  // ---- allocation: first free slot at or after ptr_q ----
  // The free vector is rotated so that slot ptr_q is bit 0; the first set bit
  // is the distance to the slot.
  logic [Tags-1:0]  free_vec, free_rot;
  logic [SlotW-1:0] first;

  assign free_vec = ~(active_q | zombie_q);
  assign free_rot      = Tags'({free_vec, free_vec} >> ptr_q);
  assign alloc_valid_o = free_vec != '0;
  always_comb begin
    first = '0;
    for (int i = Tags - 1; i >= 0; i--) begin
      if (free_rot[i]) first = SlotW'(i);
    end
  end
  assign alloc_slot = ptr_q + first;

  assign alloc_tag_o = {gen_q[alloc_slot] + 1'b1, alloc_slot};
  assign ptr_d       = alloc_i ? alloc_slot + 1'b1 : ptr_q;

  // ---- lookups ----
  assign cpl_slot     = cpl_tag_i[SlotW-1:0];
  assign cpl_gen      = cpl_tag_i[TagW-1:SlotW];
  assign cpl_active_o = active_q[cpl_slot] && (gen_q[cpl_slot] == cpl_gen);
  assign cpl_zombie_o = zombie_q[cpl_slot] && (gen_q[cpl_slot] == cpl_gen);
  assign cpl_off_o    = off_q[cpl_slot];
  assign cpl_len_o    = len_q[cpl_slot];
  assign cpl_rem_o    = fresh_q[cpl_slot] ? len_q[cpl_slot] : rem_q[cpl_slot];
  assign head_off_o   = off_q[head_slot_i];
  assign head_len_o   = len_q[head_slot_i];
  assign head_rem_o   = fresh_q[head_slot_i] ? len_q[head_slot_i] : rem_q[head_slot_i];

  // ---- timeout scan ----
  assign expired        = (now_q - stamp_q[scan_q]) >= TimerW'(timeout_i);
  assign timeout_o      = expired && active_q[scan_q] && expect_q[scan_q];
  assign zombie_expired = expired && zombie_q[scan_q];
  assign timeout_off_o  = off_q[scan_q];

  // ---- slot updates ----
  always_comb begin
    active_d = active_q;
    zombie_d = zombie_q;
    gen_d    = gen_q;
    fresh_d  = fresh_q;
    expect_d = expect_q;
    if (commit_i) begin
      fresh_d[cpl_slot]  = 1'b0;
      expect_d[cpl_slot] = rem_new != '0;
    end
    if (release_i) begin  // Free
      active_d[head_slot_i] = 1'b0;
      zombie_d[head_slot_i] = 1'b0;
    end
    if (zombie_expired) begin
      active_d[scan_q] = 1'b0;
      zombie_d[scan_q] = 1'b0;
    end
    if (abandon_i) begin  // each slot Active before: Zombie if it expects data, else Free
      zombie_d = (zombie_d & ~active_q) | (active_q & expect_d);
      active_d = active_d & ~active_q;
    end
    if (retire_i) begin
      active_d[cpl_slot] = 1'b0;
      zombie_d[cpl_slot] = 1'b0;
    end
    if (alloc_i) begin
      active_d[alloc_slot] = 1'b1;
      zombie_d[alloc_slot] = 1'b0;
      gen_d[alloc_slot]   = gen_q[alloc_slot] + 1'b1;
      fresh_d[alloc_slot]  = 1'b1;
      expect_d[alloc_slot] = 1'b1;
    end
  end

  `FF(active_q, active_d, '0)
  `FF(zombie_q, zombie_d, '0)
  `FF(gen_q, gen_d, '0)
  `FF(ptr_q, ptr_d, '0)
  // The scanner and the clock stop while every slot is free: no timer runs
  // then (a stamp is only compared while its slot is taken), and an idle
  // device keeps its state, which the board simulation relies on to skip
  // its cycles (docs/fpga.md, "A resting device").
  `FFL(scan_q, scan_q + 1'b1, !(&free_vec), '0)
  `FFL(now_q, now_q + 1'b1, !(&free_vec), '0)
  `FF(fresh_q, fresh_d, '0)
  `FF(expect_q, expect_d, '0)

  assign rem_new = cpl_rem_o - commit_len_i;
  always_ff @(posedge clk_i) begin
    if (commit_i) rem_q[cpl_slot] <= rem_new;
  end

  always_ff @(posedge clk_i) begin
    if (alloc_i) begin
      off_q[alloc_slot] <= alloc_off_i;
      len_q[alloc_slot] <= alloc_len_i;
    end
  end
  // The timer restarts at allocation, or when the slot times out.
  always_ff @(posedge clk_i) begin
    if (alloc_i || timeout_o) stamp_q[alloc_i ? alloc_slot : scan_q] <= now_q;
  end

  // Cover points: a slot handed out again, its tag value itself coming back
  // (the generation wraps), and every slot taken (reads wait for a tag).
  `COVER(TagSlotReused, alloc_i && gen_q[alloc_slot] != '0)
  `COVER(TagValueReused, alloc_i && gen_q[alloc_slot] == '1)
  `COVER(TagsAllTaken, !alloc_valid_o)

  `ASSERT_IF(TagAllocFree, alloc_i, alloc_valid_o && !abandon_i)
  // One stamp write per cycle: a timeout abandons, so nothing is allocated.
  `ASSERT(TagAllocNotTimeout, alloc_i -> !timeout_o)
  `ASSERT_IF(TagAllocLen, alloc_i, (alloc_len_i != '0) && (alloc_len_i <= 13'd4096))
  `ASSERT_IF(TagCommitActive, commit_i, cpl_active_o && (commit_len_i <= cpl_rem_o))
  `ASSERT_IF(TagRetireKnown, retire_i, cpl_zombie_o || (cpl_active_o && abandon_i))
  `ASSERT_IF(TagReleaseDone, release_i,
             active_q[head_slot_i] && (head_rem_o == '0) && !expect_q[head_slot_i])
  // expect mirrors the remaining bytes of every Active slot (checked at the scanner).
  logic [12:0] scan_rem;
  assign scan_rem = fresh_q[scan_q] ? len_q[scan_q] : rem_q[scan_q];
  `ASSERT(TagExpectMirrors, active_q[scan_q] -> expect_q[scan_q] == (scan_rem != '0))
  `ASSERT(TagOneState, (active_q & zombie_q) == '0)

endmodule
