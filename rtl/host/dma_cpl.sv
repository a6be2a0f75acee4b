// SPDX-License-Identifier: Apache-2.0
// DMA completion checker: classifies each rc completion and places its data.
//
// Takes one rc beat per cycle (never stalls). The header of a completion is
// taken from its first beat; the tag table is looked up combinationally.
// Data: every beat of a completion whose tag is Active, with status SC and not
// poisoned, is written to the reorder buffer at the position the tag expects
// next (never at one derived from the completion's own byte_count), clipped
// to the bytes the tag still expects. Nothing is committed until the
// completion's last beat; a completion that is then found bad leaves only
// bytes that a later good completion of the same tag overwrites.
// Verdict at the last beat (one of):
//   commit      Active, SC, not poisoned, byte_count == bytes still expected,
//               1 <= len <= byte_count, beats full except the last, whose keep
//               is packed, and the keep bits add up to len
//   error       Active and UR, CA, or SC but poisoned: ends the transfer
//   malformed   Active and anything else (bad status encoding, bad byte
//               count or length): dropped, counted
//   unexpected  the tag is not Active (never issued, retired, or abandoned):
//               dropped, counted
// A final completion (status not SC, or len >= byte_count) of a Zombie, or an
// error completion that is final, retires its tag slot (retire_o).
`include "tpu_macros.svh"

module dma_cpl #(
  localparam int unsigned TagW = tlp_pkg::TagW,
  localparam int unsigned OffW = dma_pkg::OffW
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // ---- completion beats ----
  input  logic               beat_valid_i,
  input  tlp_pkg::rc_t       beat_i,
  // ---- tag table lookup ----
  output logic [TagW-1:0]    tag_o,
  input  logic               tag_active_i,
  input  logic               tag_zombie_i,
  input  logic [OffW-1:0]    tag_off_i,
  input  logic [12:0]        tag_len_i,
  input  logic [12:0]        tag_rem_i,
  // ---- reorder buffer write ----
  output logic               rob_we_o,
  output logic [OffW-1:0]    rob_pos_o,    // byte offset in the read stream (mod RobBytes: ROB position)
  output logic [127:0]       rob_data_o,
  output logic [15:0]        rob_mask_o,
  // ---- verdicts (single-cycle pulses at a completion's last beat) ----
  output logic               commit_o,
  output logic [12:0]        commit_len_o,
  output logic               retire_o,
  output logic               err_o,
  output dma_pkg::err_e      err_code_o,
  output logic [OffW-1:0]    err_off_o,    // start of the failing sub-request
  output logic               unexpected_o,
  output logic               malformed_o
);

  import dma_pkg::*;

  // Header of the completion in progress, taken from its first beat.
  typedef struct packed {
    logic [TagW-1:0]     tag;
    tlp_pkg::cpl_status_e status;
    logic                poisoned;
    logic [12:0]         byte_count;
    logic [12:0]         len;
  } hdr_t;

  localparam int unsigned MaxBeats = 256;  // 4096 bytes

  logic        in_cpl_q, in_cpl_d;  // a completion's first beat seen, its last not yet
  hdr_t        hdr_q, hdr;
  logic [8:0]  beat_q, beat_d, beat_idx;
  logic [13:0] kcnt_q, kcnt_d;
  logic        kbad_q, kbad_d;
  logic        first, done, good, bad, sc;
  logic [12:0] boff, left, got;

  assign first = !in_cpl_q;
  assign hdr   = first ? hdr_t'{tag:        beat_i.tag,
                                status:     beat_i.status,
                                poisoned:   beat_i.poisoned,
                                byte_count: beat_i.byte_count,
                                len:        beat_i.len}
                       : hdr_q;
  assign beat_idx = first ? '0 : beat_q;
  assign tag_o    = hdr.tag;
  assign done     = beat_valid_i && beat_i.last;

  // ---- beat bookkeeping: count and shape of keep ----
  always_comb begin
    in_cpl_d = in_cpl_q;
    beat_d   = beat_q;
    kcnt_d   = first ? '0 : kcnt_q;
    kbad_d   = first ? 1'b0 : kbad_q;
    if (beat_valid_i) begin
      in_cpl_d = !beat_i.last;
      beat_d   = (beat_idx == 9'(MaxBeats)) ? beat_idx : beat_idx + 1'b1;
      kcnt_d   = kcnt_d + 14'($countones(beat_i.keep));
      // Full beats except the last; the last packed from byte 0; at most MaxBeats.
      if (!beat_i.last && (beat_i.keep != 16'hffff)) kbad_d = 1'b1;
      if ((beat_i.keep & (beat_i.keep + 16'd1)) != '0) kbad_d = 1'b1;
      if (beat_idx == 9'(MaxBeats)) kbad_d = 1'b1;
    end
  end

  `FF(in_cpl_q, in_cpl_d, 1'b0)
  `FFL(hdr_q, hdr, beat_valid_i && first, '0)
  `FF(beat_q, beat_d, '0)
  `FF(kcnt_q, kcnt_d, '0)
  `FF(kbad_q, kbad_d, 1'b0)

  // ---- data: at the tag's next expected byte, clipped to what it expects ----
  assign sc   = hdr.status == tlp_pkg::CplSc;
  assign good = sc && !hdr.poisoned;
  assign boff = {beat_idx, 4'd0};
  assign left = tag_rem_i - boff;

  assign rob_we_o   = beat_valid_i && tag_active_i && good && (boff < tag_rem_i);
  assign got        = tag_len_i - tag_rem_i;  // bytes of the tag already committed
  assign rob_pos_o  = tag_off_i + OffW'(got) + OffW'(boff);
  assign rob_data_o = beat_i.data;
  assign rob_mask_o = beat_i.keep & low_bytes((left >= 13'd16) ? 5'd16 : left[4:0]);

  // ---- verdict at the last beat ----
  assign bad = (hdr.byte_count != tag_rem_i) || (hdr.len == '0) ||
               (hdr.len > hdr.byte_count) || (kcnt_d != 14'(hdr.len)) || kbad_d;

  assign commit_o     = done && tag_active_i && good && !bad;
  assign commit_len_o = hdr.len;
  assign err_o        = done && tag_active_i &&
                        ((hdr.status == tlp_pkg::CplUr) || (hdr.status == tlp_pkg::CplCa) ||
                         (sc && hdr.poisoned));
  assign malformed_o  = done && tag_active_i && !err_o && !commit_o;
  assign unexpected_o = done && !tag_active_i;
  assign retire_o     = done && (tag_zombie_i || err_o) && (!sc || (hdr.len >= hdr.byte_count));
  assign err_off_o    = tag_off_i;

  always_comb begin
    unique case (hdr.status)
      tlp_pkg::CplUr: err_code_o = ErrUr;
      tlp_pkg::CplCa: err_code_o = ErrCa;
      default:        err_code_o = ErrPoisoned;
    endcase
  end

  `ASSERT(CplOneVerdict, $onehot0({commit_o, err_o, malformed_o, unexpected_o}))

endmodule
