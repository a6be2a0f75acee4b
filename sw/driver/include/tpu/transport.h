// How the driver reaches a device. A transport moves 32-bit register accesses
// to BAR0, gives the driver host memory the device can reach by DMA, and lets
// time pass. The simulator transport runs the Verilated device in-process;
// PCIe (VFIO) or UART transports implement the same interface.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tpu {

class Transport {
 public:
  virtual ~Transport() = default;

  // What the device is, for messages: "sim:config=default".
  virtual std::string name() const = 0;

  // BAR0 registers (offsets from tpu_regs.h). A read answered with an error
  // (Unsupported Request) throws tpu::Error.
  virtual uint32_t mmio_read(uint32_t offset) = 0;
  virtual void mmio_write(uint32_t offset, uint32_t value) = 0;

  // Host memory the device reaches by DMA, addressed as the device sees it.
  // Buffers live in [dma_base(), dma_base() + dma_size()).
  virtual uint64_t dma_base() const = 0;
  virtual uint64_t dma_size() const = 0;
  virtual void dma_write(uint64_t addr, std::span<const uint8_t> data) = 0;
  virtual void dma_read(uint64_t addr, std::span<uint8_t> out) = 0;

  // Lets the device run until it raises an interrupt (MSI) or max_cycles
  // device clock cycles have passed. Returns the cycles that passed.
  virtual uint64_t wait_interrupt(uint64_t max_cycles) = 0;

  // Device clock cycles since the transport was opened.
  virtual uint64_t cycles() const = 0;
};

}  // namespace tpu
