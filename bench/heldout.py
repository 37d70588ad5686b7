"""Held-out validation of the machine's view: kernels nobody has measured, predictions written first.

    python -m bench.heldout draw [--per-op 52] [--seed S]        here: draw, compile, predict, write the batch
        [--ops gemm --fix async_copy=true,vector=4] [--compare copy_rule=max]    a batch restricted to judge a rule
        [--sass 'BRA[.]U'] [--sizes M=33-127]                   only kernels whose machine code has it
        [--compare bsync_tokens=false --differ]                  only kernels the two rules predict apart
    python3 -m bench.heldout launch BATCH.json CUBINS/           on the GPU, under ncu: each kernel once (carry
        .heldout/SEED.tar.xz, which draw packs, and untar it there first)
    python3 -m bench.heldout faults BATCH.json CUBINS/ > F.json  on the GPU, not under ncu: each kernel the
        emulator predicted to fault, launched alone in a process of its own (a fault ends the process)
    python -m bench.heldout judge BATCH.json NCU.csv --device D --command C [--faults F.json]    here: once
    python3 -m bench.heldout profile SEED [SEED..] --out DIR     on the GPU: each batch under ncu (the eight
        counters), then its predicted faults, into DIR/profile.tar.gz (carry .heldout/SEED.tar.xz; it is unpacked
        there; DIR defaults to $OUT, and the one file comes back)
    python -m bench.heldout judge-profiled DIR [SEED..]          here: judge each batch profile wrote into DIR
        (its ncu log gzipped into data/heldout/ncu-SEED.csv.gz), once
    python -m bench.heldout report                                every judged batch, one line each
    python -m bench.heldout regress                               the emulator's counts of data/ncu_h200.csv
    python3 -m bench.heldout hashcheck BATCH.json [--first N]     on the GPU, with TVM: TVM builds N kernels
        (through kernels' compile callback, the pinned NVRTC there), verifies it, and compares the SASS hash of
        the loaded module's cubin with the one analysed here

`draw` takes its seed from the clock unless given one, and prints it; given the seed of a batch already drawn,
it rebuilds the cubins for `launch` and checks their SASS hashes against the batch, which it leaves as it is.
Random valid knob settings (one in five the `best` preset) at random shapes for all four operators, at least
half of them at shapes that no tile divides; each kernel's cubin is compiled here by the pinned NVRTC (the very
cubin the GPU runs, checked by its SASS hash there) and emulated; the predictions go into
data/heldout/batch-SEED.json, to be committed before the GPU sees the batch. `judge` refuses a batch already judged: a batch that taught the emulator
something is regression data from then on, never proof.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.util
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "heldout"
CUBINS = ROOT / ".heldout"
OPS = ("gemm", "conv1d", "dwconv2d", "dwsep_conv2d")
NCU = {"global_ld": "smsp__inst_executed_op_global_ld.sum", "global_st": "smsp__inst_executed_op_global_st.sum",
       "shared_ld": "smsp__inst_executed_op_shared_ld.sum", "shared_st": "smsp__inst_executed_op_shared_st.sum",
       "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "ldgsts": "smsp__inst_executed_op_ldgsts.sum",
       "local_ld": "smsp__inst_executed_op_local_ld.sum", "local_st": "smsp__inst_executed_op_local_st.sum"}


def random_shape(op: str, rng, ragged: bool, multiple: int = 1, sizes: dict | None = None) -> dict:
    """Moderate shapes (a few million lanes at most); `ragged` draws odd sizes (no power-of-two tile divides).
    `multiple`: GEMM's N and K a multiple of it (vectors of that many floats need it), still ragged: 4 x odd.
    `sizes`: a narrower range (lo, hi) for some dimensions, e.g. {"M": (33, 127)} (draw --sizes)."""
    sizes = sizes or {}

    def n(lo, hi, dim=None, scale=1):
        if dim in sizes:                # in units of `scale`: N and K of a vectorized GEMM are multiples of it
            lo, hi = size_units(sizes, dim, scale)
        v = int(rng.integers(lo, hi + 1))
        if not ragged:
            return max(lo, 1 << (v.bit_length() - 1))
        return v | 1 if dim not in sizes or (v | 1) <= hi or v - 1 < lo else (v - 1) | 1     # odd, within a --sizes range
    if op == "gemm":
        if multiple > 1:
            return {"M": n(1, 1024, "M"), "N": multiple * n(1, 1024 // multiple, "N", multiple),
                    "K": multiple * n(1, 1024 // multiple, "K", multiple)}
        return {"M": n(1, 1024, "M"), "N": n(1, 1024, "N"), "K": n(1, 1024, "K")}
    if op == "conv1d":
        return {"M": n(1, 200000, "M"), "N": n(1, 1100, "N")}
    s = {"B": int(rng.integers(1, 5)), "C": n(1, 64, "C"), "H": n(1, 130, "H"), "W": n(1, 130, "W"),
         "K": int(rng.choice([1, 3, 5, 7]))}
    if op == "dwsep_conv2d":
        s["F"] = n(1, 128, "F")
    return s


def size_units(sizes: dict, dim: str, scale: int) -> tuple[int, int]:
    """A --sizes range in multiples of `scale` (N and K of a GEMM drawn with vector=scale), checked with a sentence."""
    lo, hi = -(-sizes[dim][0] // scale), sizes[dim][1] // scale
    if lo > hi:
        raise SystemExit(f"--sizes {dim}={sizes[dim][0]}-{sizes[dim][1]} holds no multiple of {scale}, which "
                         f"{dim} must be with vector={scale}; widen the range.")
    return lo, hi


def parse_sizes(ops: tuple, text: str | None) -> dict:
    """draw --sizes M=33-127,N=...: the dimensions' narrower ranges (one operator), checked with a sentence."""
    if not text:
        return {}
    if len(ops) != 1:
        raise SystemExit("--sizes applies to one operator; give --ops with one of them.")
    dims = {"gemm": "MNK", "conv1d": "MN", "dwconv2d": "CHW", "dwsep_conv2d": "CHWF"}[ops[0]]
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        dim, _, rng = item.partition("=")
        lo, _, hi = rng.partition("-")
        if dim not in dims or not (lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
            raise SystemExit(f"--sizes takes DIM=LO-HI with DIM one of {', '.join(dims)} and 1 <= LO <= HI "
                             f"(e.g. {dims[0]}=33-127), not '{item}'.")
        out[dim] = (int(lo), int(hi))
    return out


def _predict(job: tuple) -> dict:
    """Compile one drawn kernel, keep its cubin, emulate it unless only the cubin is wanted (in a worker process).
    job: (entry, cubin folder, predict?, SASS pattern or None[, differ]) where differ, for draw --differ, is True
    (keep the kernel only where the other rule predicts a count apart) or, rebuilding such a batch, the ids it kept."""
    entry, out_dir, predict, pattern, *rest = job
    differ = rest[0] if rest else None
    if isinstance(differ, (set, frozenset)) and entry["id"] not in differ:
        return {**entry, "unmatched": True}     # not in the batch that was drawn with --differ
    from kernels import sass
    from kernels.knobs import resolve
    op, s = entry["op"], entry["shape"]
    k = resolve(op, "cuda", s, None, entry["knobs"])
    t0 = time.perf_counter()
    try:
        c = sass.compiled(op, s, k)
    except Exception as e:      # noqa: BLE001 - not even compiled: nothing to profile, said in the log
        return {**entry, "skip": f"{type(e).__name__}: {e}"}
    if pattern and not re.search(pattern, c.listing):
        return {**entry, "unmatched": True}     # drawn and compiled, its SASS lacks what the batch is drawn for
    Path(out_dir, f"{entry['id']}.cubin").write_bytes(c.cubin)
    entry = {**entry, "sass_hash": c.sass_hash,
             "launches": [{"name": ln.name, "grid": ln.grid, "block": ln.block,
                           "params": [[p.name, p.size, p.nbytes] for p in ln.params]} for ln in c.launches]}
    if not predict:
        return entry
    other = entry.pop("other_rule", None)

    def too_long(*_):
        raise TimeoutError(f"the emulation did not finish in {PREDICT_LIMIT_S / 60:.0f} minutes")
    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(PREDICT_LIMIT_S)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (min(_vm_bytes() + PREDICT_MEMORY, hard if hard > 0 else 1 << 62), hard))
    try:
        m = sass.machine_counts(op, s, k)
        entry["predicted"] = {key: int(m.ncu[NCU[key]]) for key in NCU}
        if other:               # the same kernel emulated by another rule (kernels.sass.emulator.RULES)
            from kernels.sass.emulator import Machine
            name, value = other.split("=")
            kept = getattr(Machine, name)
            setattr(Machine, name, type(kept)(value) if not isinstance(kept, bool) else value == "true")
            try:
                alt = sass._machine_counts(op, tuple(s.items()), k, None)
                got = {key: int(alt.ncu[NCU[key]]) for key in NCU}
                entry["other_rule"] = {"rule": other, "predicted": got}
            except (sass.EmulationError, sass.Misaligned) as e:     # the other rule cannot predict it: apart
                entry["other_rule"] = {"rule": other, "error": f"{type(e).__name__}: {e}"}
            finally:
                setattr(Machine, name, kept)
            if differ is True and entry["other_rule"].get("predicted") == entry["predicted"]:
                Path(out_dir, f"{entry['id']}.cubin").unlink()
                return {**entry, "unmatched": True}     # the two rules agree here: it would not judge the rule
    except Exception as e:      # noqa: BLE001 - a kernel the emulator cannot read (or not in time) is a miss, on record
        entry["error"] = f"{type(e).__name__}: {e}" if not isinstance(e, MemoryError) else \
            f"MemoryError: the emulation needed more than {PREDICT_MEMORY >> 30} GB"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    entry["predict_s"] = round(time.perf_counter() - t0, 2)
    return entry


# A kernel's emulation in `draw` stops here and is recorded as a miss: seed 3984747587's first draw waited over 25
# minutes on one fused depthwise-separable kernel (dwsep_conv2d-16, 1024 threads a block recomputing depthwise
# values); the slowest of the 814 kernels of the batches before took 202 s.
PREDICT_LIMIT_S = 600
# and past this much more memory than the worker held before it (the same kernel's emulation reached 24 GB and the
# system killed the worker, which left the pool waiting for it for ever; its memo is bounded since, and it takes
# 145 s and 2.5 GB: kernels.sass.emulator.MEMO_GROWTH)
PREDICT_MEMORY = 8 << 30


DRAW_TRIES = 2000              # random shapes a drawn kernel may take before the draw gives up on its knobs
# draw --sass or --differ: kernels compiled per kernel wanted before the draw gives up (the first try at the BRA.U batch, seed
# 393401771, found BRA.U in 4 of about 490 GEMM kernels drawn with its knobs and sizes, and stopped at 100 a kernel)
SASS_TRIES = 400


def _vm_bytes() -> int:
    """This process's virtual memory now (what RLIMIT_AS counts)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def fixed_knobs(ops: tuple, text: str | None) -> dict:
    """`--fix` as {knob: value}, checked against the one operator it needs."""
    from kernels.knobs import KnobError, parse_knobs
    if not text:
        return {}
    if len(ops) != 1:
        raise SystemExit("--fix names knobs of one operator: give it with --ops OP, e.g. --ops gemm.")
    try:
        k = parse_knobs(ops[0], "cuda", text)
    except KnobError as e:
        raise SystemExit(" ".join(e.problems)) from None
    names = [item.partition("=")[0].strip() for item in text.split(",") if item.strip()]
    return {name: getattr(k, name) for name in names}


def checked_options(ops: tuple, fix: str | None, sizes: str | None, differ: bool,
                    other_rule: str | None) -> tuple[dict, dict]:
    """draw's options checked together, each bad one a sentence (SystemExit) before a seed is drawn: the fixed
    knobs, the narrower sizes (an N or K range of a vectorized GEMM must hold a multiple of the vector), and the
    other rule that --differ compares with. Returns (fixed knobs, narrower sizes)."""
    fixed, narrow = fixed_knobs(ops, fix), parse_sizes(ops, sizes)
    vector = int(fixed.get("vector", 1))
    for dim in sorted(set(narrow) & {"N", "K"}) if ops == ("gemm",) and vector > 1 else ():
        size_units(narrow, dim, vector)
    if differ and not other_rule:
        raise SystemExit("--differ keeps the kernels that two rules predict apart; name the other with --compare.")
    return fixed, narrow


def draw(per_op: int, seed: int, workers: int, ops: tuple = OPS, fix: str | None = None,
         other_rule: str | None = None, sass: str | None = None, sizes: str | None = None,
         differ: bool = False) -> Path:
    import multiprocessing as mp

    import numpy as np
    from kernels.knobs import has_remainder, knobs_text, preset, random_valid
    from kernels.records import rows_json
    from kernels.sass.toolchain import nvrtc_version
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()  # noqa
    head, dirty = git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    fixed, narrow = checked_options(ops, fix, sizes, differ, other_rule)
    rng = np.random.default_rng(seed)
    out_dir = CUBINS / str(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"batch-{seed}.json"
    again = path.exists()           # drawn before: only the cubins, for launch
    keep = frozenset(e["id"] for e in json.load(open(path))["kernels"]) if again and differ else differ
    filtered = bool(sass or differ)
    kernels, candidates = [], {}

    def one(op: str, i: int) -> dict:
        """The op's i-th random setting (every other at a shape no tile divides), in the order the seed gives."""
        ragged, tries = i % 2 == 0, 0
        while True:
            tries += 1
            if tries > DRAW_TRIES:
                raise SystemExit(f"No valid {op} setting keeping {fix} was found at {DRAW_TRIES} random "
                                 f"{'shapes no tile divides' if ragged else 'shapes'}; fix fewer knobs.")
            s = random_shape(op, rng, ragged, int(fixed.get("vector", 1)), narrow)
            use_best = not fixed and rng.integers(5) == 0
            k = preset(op, "cuda", "best", s) if use_best else random_valid(op, "cuda", s, rng, fixed=fixed)
            if k is None or has_remainder(k, s) != ragged and ragged:
                continue
            return {"id": f"{op}-{i}", "op": op, "shape": s, "preset": "best" if use_best else "",
                    "knobs": knobs_text(k), "remainder": bool(has_remainder(k, s)),
                    **({"other_rule": other_rule} if other_rule else {})}

    with mp.get_context("spawn").Pool(workers) as pool:
        for op in ops:
            made = n = 0
            while made < per_op:
                if filtered and n >= SASS_TRIES * per_op:
                    what = (f"have SASS matching '{sass}'" if sass else "") + (" and " if sass and differ else "") \
                        + (f"are predicted apart by {other_rule}" if differ else "")
                    raise SystemExit(f"Only {made} of {n} {op} kernels drawn {what}; fix knobs that make it "
                                     "likelier, or ask for fewer.")
                want = per_op - made if not filtered else max(workers, 2 * (per_op - made))
                jobs = [(one(op, n + j), str(out_dir), not again, sass, keep) for j in range(want)]
                n += want
                for e in pool.imap(_predict, jobs):
                    if e.get("unmatched") or made >= per_op or filtered and "skip" in e:
                        Path(out_dir, f"{e['id']}.cubin").unlink(missing_ok=True)
                        continue                # a candidate past the last one wanted is dropped, predicted or not
                    done = e.get("skip") or e.get("error") or ("compiled" if again else "predicted")
                    print(f"{e['id']:16s} {json.dumps(e['shape']):56s} {done} ({e.get('predict_s', 0)} s)", flush=True)
                    made += 1
                    if "skip" not in e:
                        kernels.append(e)
            candidates[op] = n
    _pack(out_dir)
    if again:               # the cubins are rebuilt for launch, the predictions stay as committed
        b = json.load(open(path))
        old = {e["id"]: e.get("sass_hash") for e in b["kernels"]}
        new = {e["id"]: e.get("sass_hash") for e in kernels}
        changed = sorted(i for i in old if old[i] != new.get(i))
        print(f"{path.name} exists and was left as it is; cubins in {out_dir}: "
              + (f"{len(old)} of {len(old)} SASS hashes equal" if not changed else
                 f"{len(changed)} of {len(old)} differ from the batch ({', '.join(changed[:8])}): draw it at the "
                 f"commit it names, {b['emulator_commit'][:12]}"))
        return path
    path.write_text(rows_json({"seed": seed, "drawn": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                               "command": f"python -m bench.heldout draw --per-op {per_op} --seed {seed}"
                                          + (f" --ops {','.join(ops)}" if ops != OPS else "")
                                          + (f" --fix {fix}" if fix else "")
                                          + (f" --sizes {sizes}" if sizes else "")
                                          + (f" --compare {other_rule}" if other_rule else "")
                                          + (f" --sass '{sass}'" if sass else "")
                                          + (" --differ" if differ else ""),
                               "emulator_commit": head, "uncommitted_changes": dirty, "nvrtc": nvrtc_version(),
                               **({"candidates": candidates} if filtered else {}),
                               "kernels": kernels, "measured": None}, "kernels"))
    print(f"seed {seed}: {len(kernels)} kernels -> {path}; cubins in {out_dir}")
    return path


def _pack(out_dir: Path) -> Path:
    """The cubins as one .heldout/SEED.tar.xz (about a seventh of their size), small enough to travel in the same
    device call as the TVM bundle; there, `tar -xJf .heldout/SEED.tar.xz` in the repository's root puts them back
    in .heldout/SEED."""
    tarball = out_dir.with_name(out_dir.name + ".tar.xz")
    subprocess.run(["tar", "-cJf", str(tarball), "-C", str(out_dir.parent.parent),
                    f"{out_dir.parent.name}/{out_dir.name}"], check=True)
    return tarball


def _toolchain():
    """kernels/sass/toolchain.py alone (the GPU machine has no TVM, which the kernels package imports)."""
    spec = importlib.util.spec_from_file_location("toolchain", ROOT / "kernels" / "sass" / "toolchain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _workspace_bound(e: dict) -> int:
    """Bytes enough for split-K's partial sums (C_rf), for batches drawn before their launches recorded the size
    of a workspace (0 there): k_blocks x M x N, each of M and N rounded up to its tile, an upper bound of the
    allocation with or without pad_tiles (checked against the lowered TensorIR of batch 843420274's 36)."""
    if e["op"] != "gemm":
        raise SystemExit(f"{e['id']}: a pointer of unknown size, and only GEMM's split-K workspace has a bound here")
    kn = dict(kv.split("=") for kv in e["knobs"].split(","))
    (m, tm), (n, tn) = (e["shape"]["M"], int(kn["tile_m"])), (e["shape"]["N"], int(kn["tile_n"]))
    return 4 * int(kn.get("k_blocks", 1)) * (-(-m // tm) * tm) * (-(-n // tn) * tn)


def launch(batch: str, cubins: str, only: str | None = None) -> None:
    """Each kernel of the batch once, in order, from its cubin (cupy); prints its SASS hash as loaded. A kernel the
    driver cannot launch (a local frame over the per-thread limit, or one that, reserved for every thread the SMs
    can hold, needs more than the device's free memory: both read from its cubin before launching; or a launch
    refused as an invalid value or out of resources, which leaves the context usable) is skipped and named:
    the last line of stdout, which ncu's output then holds with its CSV, lists them for `judge`. A kernel the
    emulator predicted to fault is set apart (`faults` launches it); `only` launches that one kernel alone."""
    import cupy as cp
    tc = _toolchain()
    b = json.load(open(batch))
    hashes, skipped, apart = {}, {}, []
    att = cp.cuda.Device().attributes      # the driver reserves a thread's frame for every thread the SMs can hold
    resident = att["MaxThreadsPerMultiProcessor"] * att["MultiProcessorCount"]
    free = cp.cuda.runtime.memGetInfo()[0]
    for e in b["kernels"]:
        if only is not None and e["id"] != only:
            continue
        if only is None and predicted_fault(e):     # it would end this process and every launch after it
            apart.append(e["id"])
            continue
        blob = Path(cubins, f"{e['id']}.cubin").read_bytes()
        hashes[e["id"]] = tc.sass_hash(blob)
        why = tc.frame_problem(tc.local_bytes(blob), resident, free)
        if why:
            skipped[e["id"]] = why
            print(f"skipping {e['id']}: {skipped[e['id']]}", file=sys.stderr, flush=True)
            continue
        print(f"launching {e['id']}", file=sys.stderr, flush=True)     # a fault ends the process: its kernel
        mod = cp.RawModule(code=None, path=str(Path(cubins, f"{e['id']}.cubin")))
        for ln in e["launches"]:
            if any(size != 8 for _, size, _ in ln["params"]):
                raise SystemExit(f"{e['id']}: only pointer parameters are launched here")
        try:
            for ln in e["launches"]:
                args = [cp.zeros(max(nbytes or _workspace_bound(e), 4) // 4 + 1, dtype=cp.float32)
                        for _, _, nbytes in ln["params"]]
                mod.get_function(ln["name"])(tuple(ln["grid"]), tuple(ln["block"]), tuple(args))
            cp.cuda.Device().synchronize()
        except cp.cuda.driver.CUDADriverError as err:
            if not any(r in str(err) for r in REFUSALS):
                raise
            if len(e["launches"]) > 1:      # a launch of this kernel may have been profiled: judge could not pair
                raise SystemExit(f"{e['id']}: the driver refused one of its {len(e['launches'])} launches ({err})")
            skipped[e["id"]] = str(err)
            print(f"skipped {e['id']}: the driver refused the launch ({err})", file=sys.stderr, flush=True)
    bad = [k for k, h in hashes.items() if h != next(e["sass_hash"] for e in b["kernels"] if e["id"] == k)]
    print(json.dumps({"launched": len(hashes) - len(skipped), "skipped": skipped, "hash_mismatches": bad,
                      "apart": apart}))


FAULT = "CUDA_ERROR_MISALIGNED_ADDRESS"        # what the driver says when the GPU stops a kernel for an address


def predicted_fault(e: dict) -> bool:
    """Whether the emulator predicted that the GPU stops this kernel (kernels.sass.Misaligned)."""
    return str(e.get("error", "")).startswith("Misaligned")


def faults(batch: str, cubins: str) -> None:
    """Each kernel predicted to fault, launched alone in a child process (a fault leaves the CUDA context unusable
    and ends the process): prints {id: {"rc", "faulted", "said"}} for `judge --faults`."""
    out = {}
    for e in json.load(open(batch))["kernels"]:
        if predicted_fault(e):
            p = subprocess.run([sys.executable, "-m", "bench.heldout", "launch", batch, cubins, "--only", e["id"]],
                               capture_output=True, text=True, timeout=300, cwd=ROOT)
            said = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
            out[e["id"]] = {"rc": p.returncode, "faulted": p.returncode != 0 and FAULT in p.stderr,
                            "said": said[-1][:300] if said else ""}
            print(f"{e['id']}: {'faulted' if out[e['id']]['faulted'] else 'did not fault'}", file=sys.stderr,
                  flush=True)
    print(json.dumps(out))


REFUSALS = ("CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_RESOURCES")     # refused before running: context usable


def launch_report(ncu_text: str) -> dict:
    """`launch`'s last stdout line, from ncu's output (ncu writes the application's stdout there too, before its
    CSV); {} where the launch did not finish."""
    for line in reversed(ncu_text.splitlines()):
        if line.startswith('{"launched"'):
            return json.loads(line)
    return {}


def judge(batch: str, ncu_csv: str, device: str, command: str, date: str | None = None,
          faults_json: str | None = None) -> None:
    from bench.ncu_data import parse
    from kernels.hwcheck import agrees
    from kernels.records import rows_json
    path = Path(batch)
    b = json.load(open(path))
    if b.get("measured"):
        raise SystemExit(f"{path.name} was judged on {b['measured']['date']}; a batch is judged once. "
                         "Draw a new one: python -m bench.heldout draw")
    text = open(ncu_csv).read()
    report = launch_report(text)
    if not report:
        raise SystemExit(f"{ncu_csv} does not hold the launch's report line: the launch did not finish")
    skipped, apart = report.get("skipped", {}), set(report.get("apart", []))
    ran_apart = json.load(open(faults_json)) if faults_json else {}
    if apart - ran_apart.keys():
        raise SystemExit(f"{', '.join(sorted(apart - ran_apart.keys()))} predicted to fault and set apart by the "
                         "launch: give what `python3 -m bench.heldout faults` printed for them with --faults")
    launches = parse(text)
    i = 0
    for e in b["kernels"]:
        if e["id"] in skipped:          # never ran: no counter to judge, neither a hit nor a miss
            e["not_launched"] = skipped[e["id"]]
            continue
        if e["id"] in apart:            # the prediction is the fault: it agrees where the GPU stopped the kernel
            e["fault"] = ran_apart[e["id"]]
            e["agrees"] = bool(e["fault"]["faulted"])
            continue
        got = launches[i:i + len(e["launches"])]
        i += len(e["launches"])
        e["measured"] = {k: int(sum(g.get(NCU[k], 0) for g in got)) for k in NCU if any(NCU[k] in g for g in got)}
        pred = e.get("predicted")
        e["agrees"] = pred is not None and all(agrees(NCU[k], pred[k], v) for k, v in e["measured"].items())
    if i != len(launches):
        raise SystemExit(f"{len(launches)} launches profiled but the batch has {i}")
    b["measured"] = {"device": device, "date": date or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                     "command": command, "csv_sha256": hashlib.sha256(open(ncu_csv, "rb").read()).hexdigest(),
                     **({"faults": ran_apart} if ran_apart else {})}
    b["summary"] = summary(b)
    path.write_text(rows_json(b, "kernels"))
    print(json.dumps(b["summary"]))


def _here(seed: int) -> tuple[str, str]:
    """The batch file and cubin folder of a seed, relative to the repository (as the commands name them)."""
    return os.path.relpath(DATA / f"batch-{seed}.json", ROOT), os.path.relpath(CUBINS / str(seed), ROOT)


def ncu_command(seed: int) -> list[str]:
    """The profile of one batch: each kernel launched once under Nsight Compute, the eight counters of NCU, at the
    GPU's own clocks."""
    return ["ncu", "--clock-control", "none", "--kernel-name", "regex:^main_kernel", "--metrics", ",".join(NCU.values()),
            "--csv", "--print-units", "base", "python3", "-m", "bench.heldout", "launch", *_here(seed)]


PROFILE_ARCHIVE = "profile.tar.gz"


def profile(seeds: list[int], out: str) -> None:
    """On the GPU machine: each batch (not yet judged) under ncu, then the kernels predicted to fault, each alone;
    writes ncu-SEED.csv, faults-SEED.json, date-SEED.txt (UTC, when its profile began), launch-SEED.err and gpu.txt,
    all that `judge-profiled DIR` needs here, packed as one file, DIR/profile.tar.gz (packed again after each batch,
    so a run stopped partway leaves the batches done): the GPU machine sends back at most 8 files a command, and
    on 2026-12-07 a profile of four batches as loose files came back without its ncu logs."""
    import tempfile
    archive = Path(out, PROFILE_ARCHIVE)
    archive.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    for seed in seeds:                  # every batch checked before any is profiled
        b = json.load(open(DATA / f"batch-{seed}.json"))
        if b.get("measured"):
            raise SystemExit(f"batch-{seed}.json was judged on {b['measured']['date']}; a batch is judged once.")
        tarball = CUBINS / f"{seed}.tar.xz"
        if not (CUBINS / str(seed)).is_dir() and not tarball.exists():
            raise SystemExit(f"No cubins for batch {seed}: carry .heldout/{seed}.tar.xz (here, `python -m bench.heldout "
                             f"draw --seed {seed}` with the batch's options rebuilds it).")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True, check=True).stdout.splitlines()[0].strip()
    (folder / "gpu.txt").write_text(gpu + "\n")
    for seed in seeds:
        if not (CUBINS / str(seed)).is_dir():
            subprocess.run(["tar", "-xJf", str(CUBINS / f"{seed}.tar.xz"), "-C", str(CUBINS.parent)], check=True)
        (folder / f"date-{seed}.txt").write_text(dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds") + "\n")
        with open(folder / f"ncu-{seed}.csv", "w") as csv, open(folder / f"launch-{seed}.err", "w") as err:
            rc = subprocess.run(ncu_command(seed), stdout=csv, stderr=err, cwd=ROOT).returncode
        with open(folder / f"faults-{seed}.json", "w") as f, open(folder / f"launch-{seed}.err", "a") as err:
            subprocess.run([sys.executable, "-m", "bench.heldout", "faults", *_here(seed)], stdout=f, stderr=err,
                           cwd=ROOT, check=True)
        subprocess.run(["tar", "-czf", str(archive), "-C", str(folder), "."], check=True)
        print(f"batch {seed}: ncu exited {rc}; {folder}/ncu-{seed}.csv, packed into {archive}", flush=True)


def judge_profiled(folder: str, seeds: list[int] | None = None) -> None:
    """Here: `judge` each batch that `profile` wrote into the folder (its profile.tar.gz, or the files unpacked; all
    of them unless seeds are given), with the device, date and command it recorded, and keep its ncu log as
    data/heldout/ncu-SEED.csv.gz."""
    import shutil
    import tempfile
    d = Path(folder)
    if not (d / PROFILE_ARCHIVE).is_file():
        return _judge_unpacked(folder, d, seeds)
    d = Path(tempfile.mkdtemp(prefix="profiled-"))
    try:
        subprocess.run(["tar", "-xzf", str(Path(folder, PROFILE_ARCHIVE)), "-C", str(d)], check=True)
        _judge_unpacked(folder, d, seeds)
    finally:                    # the unpacked copy only: the archive stays where it came
        shutil.rmtree(d, ignore_errors=True)


def _judge_unpacked(folder: str, d: Path, seeds: list[int] | None) -> None:
    import gzip
    seeds = seeds or sorted(int(p.stem.split("-")[1]) for p in d.glob("ncu-*.csv"))
    if not seeds or not (d / "gpu.txt").exists():
        raise SystemExit(f"{folder} holds no batch profiled by `python3 -m bench.heldout profile` (profile.tar.gz, "
                         "or ncu-SEED.csv and gpu.txt).")
    device = (d / "gpu.txt").read_text().strip()
    for seed in seeds:
        csv = d / f"ncu-{seed}.csv"
        judge(str(DATA / f"batch-{seed}.json"), str(csv), device, f"python3 -m bench.heldout profile {seed} (under it: "
              f"{' '.join(ncu_command(seed))}; python3 -m bench.heldout faults {' '.join(_here(seed))})",
              (d / f"date-{seed}.txt").read_text().strip(), str(d / f"faults-{seed}.json"))
        (DATA / f"ncu-{seed}.csv.gz").write_bytes(gzip.compress(csv.read_bytes(), mtime=0))


def summary(b: dict) -> dict:
    """Counts over the kernels that ran; those the driver could not launch are counted apart."""
    ks = [e for e in b["kernels"] if "not_launched" not in e]
    per_op = {op: [e for e in ks if e["op"] == op] for op in OPS}
    return {"kernels": len(ks), "agree": sum(e["agrees"] for e in ks),
            "ragged": sum(e["remainder"] for e in ks),
            "per_op": {op: [sum(e["agrees"] for e in v), len(v)] for op, v in per_op.items()},
            "emulator_errors": sum("error" in e and not predicted_fault(e) for e in ks),
            "faults_predicted": [sum(e["agrees"] for e in ks if predicted_fault(e)), sum(map(predicted_fault, ks))],
            "spilling": sum(e.get("measured", {}).get("local_st", 0) > 0 for e in ks),
            "not_launched": sorted(e["id"] for e in b["kernels"] if "not_launched" in e),
            **_compared(ks)}


def _other_rule(e: dict) -> dict | None:
    """The kernel's counts predicted by the other rule of its draw ({"rule", "predicted"}), if it has one. The
    ninth batch's `without_copy_rule` (the rule copy_rule=global) and the tenth's `other_copy_rule` (copy_rule=max)
    hold the global load sectors alone; every other counter is the emulator's."""
    old = {"rule": "global", **e["without_copy_rule"]} if "without_copy_rule" in e else e.get("other_copy_rule")
    if old:
        return {"rule": f"copy_rule={old['rule']}", "predicted": {**e.get("predicted", {}), "sectors": old["sectors"]}}
    return e.get("other_rule")


def _compared(ks: list) -> dict:
    """For a batch drawn with --compare: at the kernels where the emulator's rule and the other give different
    counts, how many the GPU's counts agree with (as `judge` agrees) by the emulator's rule, and by the other."""
    from kernels.hwcheck import agrees
    others = [_other_rule(e) for e in ks]
    if not any(others):
        return {}
    both = [(e, o) for e, o in zip(ks, others) if o and e.get("measured") and o.get("predicted") != e.get("predicted")]
    fit = lambda e, p: p is not None and all(agrees(NCU[k], p.get(k), v) for k, v in e["measured"].items())  # noqa: E731
    failed = sum("predicted" not in o for _, o in both)
    return {"compared": {"other": next(o["rule"] for o in others if o), "changes": len(both),
                          "with_rule": sum(fit(e, e.get("predicted")) for e, _ in both),
                          "with_other": sum(fit(e, o.get("predicted")) for e, o in both),
                          **({"other_failed": failed} if failed else {})}}


def report() -> None:
    from kernels.hwcheck import batches
    for b in batches():
        s = b["summary"]
        c = _compared(b["kernels"]).get("compared")     # recounted: the ninth batch's summary names it otherwise
        print(f"seed {b['seed']}: {s['agree']}/{s['kernels']} agree ({s['ragged']} at shapes no tile divides), "
              f"{b['measured']['device']}, {b['measured']['date']}; per operator "
              + ", ".join(f"{op} {a}/{n}" for op, (a, n) in s["per_op"].items())
              + (f"; not launchable, not counted: {', '.join(s['not_launched'])}" if s.get("not_launched") else "")
              + (f"; predicted to fault: {s['faults_predicted'][0]} of {s['faults_predicted'][1]} did"
                 if s.get("faults_predicted", [0, 0])[1] else "")
              + (f"; where the emulator's rule and {c['other']} differ ({c['changes']} kernels), the GPU agrees "
                 f"with the former at {c['with_rule']}, the latter at {c['with_other']}"
                 + (f" (the latter could not predict {c['other_failed']})" if c.get("other_failed") else "")
                 if c else ""))


def hashcheck(batch: str, first: int) -> None:
    """TVM builds each kernel through kernels' callback, which compiles with the pinned NVRTC on this machine;
    the hash of the cubin handed to TVM (which TVM loads as it is: a cubin, never PTX for the driver to JIT)
    must equal the one analysed on the CPU machine, and the module TVM loaded must compute the reference."""
    from kernels import build
    from kernels.knobs import resolve
    from kernels.sass import toolchain
    b = json.load(open(batch))
    out = {"device": build.device_name("cuda"), "nvrtc": toolchain.nvrtc_version(), "kernels": []}
    for e in b["kernels"][::max(1, len(b["kernels"]) // first)][:first]:     # spread over the operators
        k = resolve(e["op"], "cuda", e["shape"], None, e["knobs"])
        toolchain.HANDED_TO_TVM.clear()
        build.compiled(e["op"], tuple(e["shape"].items()), k, "cuda")
        rel, _, _ = build.verify(e["op"], e["shape"], k, "cuda")
        loaded = toolchain.HANDED_TO_TVM[-1] if toolchain.HANDED_TO_TVM else "TVM did not call the callback"
        out["kernels"].append({"id": e["id"], "analysed": e["sass_hash"], "loaded": loaded,
                               "equal": loaded == e["sass_hash"], "rel_err": rel, "ok": rel < build.TOLERANCE})
        print(json.dumps(out["kernels"][-1]), flush=True)
    print(json.dumps({"equal": sum(k["equal"] for k in out["kernels"]), "of": len(out["kernels"]),
                      "verified": sum(k["ok"] for k in out["kernels"])}))
    json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "hashcheck.json"), "w"), indent=1)


def regress() -> None:
    """data/heldout/regression.json: the emulator's counts for every kernel of data/ncu_h200.csv."""
    from kernels import hwcheck
    from kernels.records import rows_json
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    preds = hwcheck.predict_all(progress=lambda f: print(f"{f:.0%}", end="\r", flush=True))
    hwcheck.PREDICTED.parent.mkdir(parents=True, exist_ok=True)
    hwcheck.PREDICTED.write_text(rows_json({"command": "python -m bench.heldout regress", "emulator_commit": head,
                                            "kernels": preds}, "kernels"))
    df = hwcheck.compare()
    print(f"{int(df['within'].sum())} of {len(df)} kernel-counter pairs agree -> {hwcheck.PREDICTED}")


def main(argv=None) -> None:
    from kernels.sass.emulator import RULES
    p = argparse.ArgumentParser(prog="python -m bench.heldout")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("draw")
    d.add_argument("--per-op", type=int, default=52)
    d.add_argument("--seed", type=int)
    d.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    d.add_argument("--ops", default=",".join(OPS), help="operators to draw, comma-separated (default all four)")
    d.add_argument("--fix", help="knobs every drawn setting keeps, e.g. async_copy=true,vector=4 (one operator)")
    d.add_argument("--compare", choices=RULES, help="also predict each kernel by this other rule of the emulator "
                   "(kernels.sass.emulator.RULES), so that the judgement says which of the two the GPU counts")
    d.add_argument("--sizes", help="narrower ranges for some dimensions, e.g. M=33-127 (one operator; sizes stay "
                   "odd in the half of the kernels drawn at shapes no tile divides)")
    d.add_argument("--sass", metavar="REGEX", help="keep only kernels whose SASS matches it (each still a random "
                   "setting, compiled and predicted before any GPU sees it; ids count every kernel drawn), e.g. "
                   "'BRA\\.U' to reach a rule only some machine code exercises")
    d.add_argument("--differ", action="store_true", help="keep only kernels whose prediction by the --compare rule "
                   "differs from today's on some counter (each still a random setting, predicted both ways before any "
                   "GPU sees it), so that every kernel of the batch judges the rule")
    d.add_argument("--compare-copy-rule", choices=("max", "global"), help="the same as --compare copy_rule=RULE")
    d.add_argument("--without-copy-rule", action="store_true", help="the same as --compare copy_rule=global (how the "
                   "ninth batch, seed 1649424385, was drawn)")
    ln = sub.add_parser("launch")
    ln.add_argument("batch")
    ln.add_argument("cubins")
    ln.add_argument("--only", help="launch this kernel alone (how `faults` runs each)")
    j = sub.add_parser("judge")
    j.add_argument("batch")
    j.add_argument("ncu_csv")
    j.add_argument("--device", required=True)
    j.add_argument("--command", required=True)
    j.add_argument("--date", help="when the GPU profiled the batch (UTC, ISO 8601); default now")
    j.add_argument("--faults", help="what `faults` printed: the kernels predicted to fault, each launched alone")
    pf = sub.add_parser("profile")
    pf.add_argument("seeds", nargs="+", type=int)
    pf.add_argument("--out", default=os.environ.get("OUT", "judged"), help="folder for the logs (default $OUT)")
    jp = sub.add_parser("judge-profiled")
    jp.add_argument("folder")
    jp.add_argument("seeds", nargs="*", type=int)
    ft = sub.add_parser("faults")
    ft.add_argument("batch")
    ft.add_argument("cubins")
    sub.add_parser("report")
    sub.add_parser("regress")
    h = sub.add_parser("hashcheck")
    h.add_argument("batch")
    h.add_argument("--first", type=int, default=12)
    a = p.parse_args(argv)
    if a.cmd == "draw":
        ops = tuple(x.strip() for x in a.ops.split(",") if x.strip())
        if not ops or set(ops) - set(OPS):
            p.error(f"--ops takes operators from {', '.join(OPS)}, not '{a.ops}'.")
        other = "copy_rule=global" if a.without_copy_rule else \
            f"copy_rule={a.compare_copy_rule}" if a.compare_copy_rule else a.compare
        try:
            checked_options(ops, a.fix, a.sizes, a.differ, other)        # before a seed is drawn
            re.compile(a.sass or "")
        except SystemExit as e:
            p.error(str(e))
        except re.error as e:
            p.error(f"--sass takes a regular expression; '{a.sass}' is not one ({e}).")
        seed = a.seed if a.seed is not None else time.time_ns() % (1 << 32)
        print(f"seed {seed} (from the clock)" if a.seed is None else f"seed {seed}", flush=True)
        draw(a.per_op, seed, a.workers, ops, a.fix, other, a.sass, a.sizes, a.differ)
    elif a.cmd == "launch":
        launch(a.batch, a.cubins, a.only)
    elif a.cmd == "profile":
        profile(a.seeds, a.out)
    elif a.cmd == "judge-profiled":
        judge_profiled(a.folder, a.seeds)
    elif a.cmd == "faults":
        faults(a.batch, a.cubins)
    elif a.cmd == "judge":
        judge(a.batch, a.ncu_csv, a.device, a.command, a.date, a.faults)
    elif a.cmd == "regress":
        regress()
    elif a.cmd == "hashcheck":
        hashcheck(a.batch, a.first)
    else:
        report()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    main()
