// SPDX-License-Identifier: Apache-2.0
// Stops elaboration on a configuration the design cannot build. The same
// rules are checked by scripts/gen_config.py on the table, so this catches
// a hand-edited package or a cfg_t built elsewhere.
module tpu_cfg_check #(
  parameter tpu_pkg::cfg_t Cfg = tpu_pkg::Cfg
) ();

  function automatic bit pow2_in(int unsigned v, int unsigned lo, int unsigned hi);
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
  endfunction

  if (!pow2_in(Cfg.array_n, 2, 64)) begin : g_bad_array_n
    $fatal(1, "tpu_cfg: array_n = %0d must be a power of two from 2 to 64", Cfg.array_n);
  end
  if (Cfg.datapath != tpu_pkg::DatapathInt8) begin : g_bad_datapath
    $fatal(1, "tpu_cfg: only the int8 datapath exists");
  end
  if (!pow2_in(Cfg.ub_rows, 64, 32768)) begin : g_bad_ub_rows
    $fatal(1, "tpu_cfg: ub_rows = %0d must be a power of two from 64 to 32768", Cfg.ub_rows);
  end
  if (!pow2_in(Cfg.acc_rows, 16, 32768)) begin : g_bad_acc_rows
    $fatal(1, "tpu_cfg: acc_rows = %0d must be a power of two from 16 to 32768", Cfg.acc_rows);
  end
  if (!pow2_in(Cfg.imem_depth, 16, 32768)) begin : g_bad_imem_depth
    $fatal(1, "tpu_cfg: imem_depth = %0d must be a power of two from 16 to 32768",
           Cfg.imem_depth);
  end
  if (Cfg.wgt_fifo_tiles < 2 || Cfg.wgt_fifo_tiles > 64) begin : g_bad_wgt_fifo_tiles
    $fatal(1, "tpu_cfg: wgt_fifo_tiles = %0d must be 2 to 64", Cfg.wgt_fifo_tiles);
  end
  if (!pow2_in(Cfg.dma_tags, 2, 128)) begin : g_bad_dma_tags
    $fatal(1, "tpu_cfg: dma_tags = %0d must be a power of two from 2 to 128", Cfg.dma_tags);
  end
  if (!pow2_in(Cfg.dma_rd_xfers, 2, 256)) begin : g_bad_dma_rd_xfers
    $fatal(1, "tpu_cfg: dma_rd_xfers = %0d must be a power of two from 2 to 256",
           Cfg.dma_rd_xfers);
  end
  if (!pow2_in(Cfg.dma_rob_bytes, 4096, 1 << 20)) begin : g_bad_dma_rob_bytes
    $fatal(1, "tpu_cfg: dma_rob_bytes = %0d must be a power of two of at least 4096",
           Cfg.dma_rob_bytes);
  end
  if (!pow2_in(Cfg.dma_wr_buf_beats, 16, 4096)) begin : g_bad_dma_wr_buf_beats
    $fatal(1, "tpu_cfg: dma_wr_buf_beats = %0d must be a power of two of at least 16",
           Cfg.dma_wr_buf_beats);
  end
  if (Cfg.dma_timeout < 16 || Cfg.dma_timeout >= (1 << 20)) begin : g_bad_dma_timeout
    $fatal(1, "tpu_cfg: dma_timeout = %0d must be 16 to 2^20 - 1", Cfg.dma_timeout);
  end
  if (!pow2_in(Cfg.mem_outstanding, 2, 64)) begin : g_bad_mem_outstanding
    $fatal(1, "tpu_cfg: mem_outstanding = %0d must be a power of two from 2 to 64",
           Cfg.mem_outstanding);
  end

endmodule
