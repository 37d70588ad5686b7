"""The simulated accelerator: a VTA-style GEMM core fed by on-chip input/weight/accumulator buffers over DMA.

Defaults are VTA's published Pynq configuration, adapted to float32. Sources (read in the TVM repository
history; VTA was removed from TVM in late 2024):
  [cfg] apache/tvm vta/config/pynq_sample.json (commit 03a12abd): "HW_FREQ": 100, "LOG_BATCH": 0,
        "LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 4, "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
        "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17 (buffer sizes in bytes, log2).
  [pkg] apache/tvm vta/python/vta/pkg_config.py (commit 0107b06b): Pynq (xc7z020) fpga_freq = 100 (MHz),
        fpga_log_axi_bus_width = 6, i.e. a 64-bit AXI memory bus: 8 bytes per cycle.
  [hw]  TVM docs, VTA Hardware Guide (docs/topic/vta/dev/hardware.rst): the GEMM core reads the input and
        weight buffers and accumulates into the compute module's register file (the accumulator buffer);
        load, compute and store are separate modules connected by queues (decoupled access-execute).

Float32 adaptation: VTA's inputs and weights are int8 and its accumulators int32. Here every element is a
float32. The buffers keep VTA's byte capacities (the SRAM on the chip is the physical budget), so the input
and weight buffers hold a quarter as many elements as VTA's int8 buffers; the accumulator (int32 -> float32,
same width) holds as many. The GEMM core keeps its shape and rate: BLOCK_IN x BLOCK_OUT MACs per cycle for one
batch row. (A 16x16 float32 MAC array at 100 MHz would not fit the Pynq's 220 DSP slices; this is a
behavioural model of the dataflow, not a synthesis estimate.)
"""
from __future__ import annotations

from dataclasses import dataclass

INP, WGT, ACC = "local.inp_buffer", "local.wgt_buffer", "local.acc_buffer"   # VTA's own scope names
SCOPES = (INP, WGT, ACC)
FLOAT = 4                                     # bytes per element: everything is float32

# The three memory levels the Lab draws, and the Access level each one takes in records.py's vocabulary
# (global / shared / register), so the existing colours carry over: DRAM is global memory, the input and
# weight buffers are the on-chip buffer level, the accumulator is the GEMM core's register file [hw].
LEVEL_NAMES = {"global": "DRAM", "shared": "on-chip buffer", "register": "GEMM-core registers"}
LEVEL_OF_SCOPE = {"global": "global", INP: "shared", WGT: "shared", ACC: "register"}
BUFFER_NAMES = {"global": "DRAM", INP: "input buffer", WGT: "weight buffer", ACC: "accumulator"}


@dataclass(frozen=True)
class Accel:
    """A VTA-style accelerator. Capacities in bytes; rates per clock cycle."""
    name: str = "VTA-style accelerator (Pynq configuration, float32)"
    batch: int = 1                        # LOG_BATCH = 0 [cfg]: one row of the input per core operation
    block_in: int = 16                    # LOG_BLOCK_IN = 4 [cfg]: reduction depth of one core operation
    block_out: int = 16                   # LOG_BLOCK_OUT = 4 [cfg]: outputs of one core operation
    inp_bytes: int = 32 * 1024            # LOG_INP_BUFF_SIZE = 15 [cfg]: 32 KiB, 8192 float32
    wgt_bytes: int = 256 * 1024           # LOG_WGT_BUFF_SIZE = 18 [cfg]: 256 KiB, 65536 float32
    acc_bytes: int = 128 * 1024           # LOG_ACC_BUFF_SIZE = 17 [cfg]: 128 KiB, 32768 float32
    dram_bytes_per_cycle: int = 8         # 64-bit AXI bus, one beat per cycle [pkg]
    clock_mhz: float = 100.0              # HW_FREQ = 100 [cfg], fpga_freq = 100 [pkg]

    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    def capacity(self, scope: str) -> int:
        """Floats one buffer holds."""
        return {INP: self.inp_bytes, WGT: self.wgt_bytes, ACC: self.acc_bytes}[scope] // FLOAT

    def describe(self) -> dict:
        """The description the app shows, with units."""
        return {"name": self.name,
                "GEMM core": f"{self.batch} x {self.block_in} x {self.block_out} "
                             f"({self.macs_per_cycle} MACs per cycle)",
                "input buffer": f"{self.inp_bytes // 1024} KiB ({self.capacity(INP):,} float32)",
                "weight buffer": f"{self.wgt_bytes // 1024} KiB ({self.capacity(WGT):,} float32)",
                "accumulator": f"{self.acc_bytes // 1024} KiB ({self.capacity(ACC):,} float32)",
                "DRAM": f"{self.dram_bytes_per_cycle} bytes per cycle "
                        f"({self.dram_bytes_per_cycle * self.clock_mhz / 1000:.1f} GB/s)",
                "clock": f"{self.clock_mhz:g} MHz"}


DEFAULT = Accel()
