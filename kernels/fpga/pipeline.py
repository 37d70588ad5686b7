"""The cycle model: accelerator instructions on a load / compute / store pipeline (pure; no TVM).

The model, as VTA's decoupled access-execute design has it [hw]:
  * Three in-order queues. load: DMA copies from DRAM into the input and weight buffers. compute: the
    GEMM core's accumulator resets and GEMM instructions. store: DMA copies from the accumulator to DRAM.
  * The load and store queues share one DRAM port of `dram_bytes_per_cycle`; a copy holds it for
    ceil(bytes / dram_bytes_per_cycle) cycles (at least 1). When both queues have a copy ready, the port
    takes the one ready first (program order on a tie).
  * The GEMM core does one core operation (BATCH x BLOCK_IN x BLOCK_OUT MACs) per cycle; a reset clears
    one BLOCK_OUT accumulator vector per cycle.
  * An instruction starts when its queue and (for copies) the port are free and every instruction it
    depends on has finished. Dependencies come from the buffers (sim.py): it waits for the last earlier
    writer of what it reads or writes, and for the last earlier reader, in each queue, of what it writes.
    This is what double buffering changes: a load into the other slot does not wait for the compute on
    this one, so the two overlap.
Time is cycles / clock. `serial` is the same instructions with no overlap at all: the sum of their cycles.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

QUEUES = ("load", "compute", "store")
ON_PORT = ("load", "store")


@dataclass(frozen=True)
class Op:
    """One instruction as the model sees it."""
    queue: str                      # load | compute | store
    cycles: int
    deps: tuple[int, ...] = ()      # indices of earlier instructions it waits for
    kind: str = ""                  # load | reset | gemm | store (for the breakdown)


@dataclass(frozen=True)
class Timing:
    cycles: int                     # with the pipeline's overlap
    serial_cycles: int              # every instruction one after another
    load_cycles: int                # busy cycles of each queue
    compute_cycles: int
    store_cycles: int
    overlap_cycles: int             # serial - cycles: what the pipeline hid
    compute_bound: int              # MACs / core MACs per cycle, rounded up
    memory_bound: int               # DRAM bytes / DRAM bytes per cycle, rounded up
    fill_cycles: int                # cycles - max(port busy, core busy): when the busier unit had to wait
    clock_mhz: float

    @property
    def ms(self) -> float:
        return self.cycles / (self.clock_mhz * 1e3)

    @property
    def serial_ms(self) -> float:
        return self.serial_cycles / (self.clock_mhz * 1e3)

    def as_dict(self) -> dict:
        return {**asdict(self), "ms": self.ms, "serial_ms": self.serial_ms}


def schedule(ops: list[Op]) -> list[tuple[int, int]]:
    """(start, end) cycle of every instruction."""
    n = len(ops)
    end: list[int | None] = [None] * n
    start = [0] * n
    order = {q: [i for i, o in enumerate(ops) if o.queue == q] for q in QUEUES}
    head = dict.fromkeys(QUEUES, 0)
    free = dict.fromkeys(QUEUES, 0)
    port = 0
    for _ in range(n):
        best = None
        for q in QUEUES:
            if head[q] >= len(order[q]):
                continue
            i = order[q][head[q]]
            if any(end[d] is None for d in ops[i].deps):
                continue
            ready = max([free[q]] + [end[d] for d in ops[i].deps])
            if q in ON_PORT:
                ready = max(ready, port)
            if best is None or (ready, i) < best[:2]:
                best = (ready, i, q)
        if best is None:
            raise RuntimeError("fpga pipeline: an instruction waits for a later one")
        ready, i, q = best
        start[i], end[i] = ready, ready + ops[i].cycles
        free[q] = end[i]
        if q in ON_PORT:
            port = end[i]
        head[q] += 1
    return list(zip(start, end))


def timing(ops: list[Op], macs: int, dram_bytes: int, macs_per_cycle: int, dram_bytes_per_cycle: int,
           clock_mhz: float) -> Timing:
    spans = schedule(ops)
    total = max((e for _, e in spans), default=0)
    busy = {q: sum(o.cycles for o in ops if o.queue == q) for q in QUEUES}
    serial = sum(busy.values())
    return Timing(cycles=total, serial_cycles=serial, load_cycles=busy["load"], compute_cycles=busy["compute"],
                  store_cycles=busy["store"], overlap_cycles=serial - total,
                  compute_bound=-(-macs // macs_per_cycle), memory_bound=-(-dram_bytes // dram_bytes_per_cycle),
                  fill_cycles=total - max(busy["load"] + busy["store"], busy["compute"]), clock_mhz=clock_mhz)
