"""Write data/machine/counts.json: the machine's counts of the views a visitor opens first, as the emulator
computes them now (kernels.sass.shipped says how they are used and when they are not).

    python -m bench.machine_counts          every Walkthrough step, and the Lab's and Compare's defaults, at 1024^3

Run it after any change to the emulator (kernels/sass): the tests say when an entry no longer holds.
"""
from __future__ import annotations


def views() -> list[tuple[str, dict, object]]:
    """(op, shape, knobs): the Walkthrough's steps at its first size, and the GEMM presets the Lab (seed) and
    Compare (seed against best) open on, on CUDA."""
    from kernels.knobs import preset
    from kernels.sass.shipped import key
    from pages._parts import walk as W
    shape = dict(W.SIZES["speed test"])
    out = [(W.OP, shape, W.knobs(step, shape)) for step in W.ALL]
    out += [("gemm", shape, preset("gemm", "cuda", name, shape)) for name in ("seed", "best")]
    return list({key(*v): v for v in out}.values())     # once each (Compare's seed is a Walkthrough step)


def main() -> None:
    from kernels.sass import shipped
    doc = shipped.write(views())
    print(f"wrote {shipped.PATH} ({len(doc['entries'])} entries)")


if __name__ == "__main__":
    main()
