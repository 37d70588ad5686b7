"""The tuner: a search over an operator's knob space for one shape and device. A cost model whose features
are the simulator's exact counts (what the schedule asks of each memory level, at full size) proposes the
candidates; it learns from every measurement as it comes; every candidate is verified against float64 before
its time counts, and every trial is recorded in the results store (source "tune")."""
from __future__ import annotations

import collections
import math
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from . import isolated
from .knobs import H200_SMS, KnobError, blocks, exact_tiles, fields_of, fit, knob_class, knobs_text, padded, \
    parse_knobs, preset, random_valid, spread, validate

SLOW = 4.0                      # a candidate this many times slower than the fastest so far is timed once
PRIOR_POINTS = 3                # measurements before the learned model replaces the roofline prior


@dataclass(frozen=True)
class Trial:
    knobs: str
    predicted_ms: float
    median_ms: float | None     # None when the candidate failed to build or verify
    rel_err: float | None
    ok: bool
    error: str = ""


@dataclass
class Tuned:
    op: str
    shape: dict
    target: str
    device: str
    trials: int
    best_knobs: str
    median_ms: float
    ref: str | None
    ref_ms: float | None
    vs_ref: float | None
    search_s: float
    history: list = field(default_factory=list)      # the trials, in the order they were measured
    servers: list = field(default_factory=list)      # with --rpc: the servers that measured trials
    timer: str = ""                                  # how the winner's median_ms was timed (build.kernel_timer)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["history"] = [asdict(t) for t in self.history]
        return d


# ------------------------------------------------------------------ candidates
def _neighbours(op: str, target: str, shape: dict, k, rng, n: int) -> list:
    """Knob settings one knob away from k (the next choice up or down, or a power of two either side)."""
    out = []
    names = list(fields_of(k))
    for _ in range(4 * n):
        name = names[rng.integers(len(names))]
        f = fields_of(k)[name]
        cur = getattr(k, name)
        choices = f.metadata.get("choices")
        if choices is not None:
            new = choices[rng.integers(len(choices))]
        elif isinstance(cur, int):
            new = max(1, cur * 2 if rng.integers(2) else cur // 2)
        else:
            continue
        cand = fit(replace(k, **{name: new}), shape)
        if cand != k and not validate(op, target, cand, shape):
            out.append(cand)
        if len(out) >= n:
            break
    return out


# Settings a step away from best that a measurement on a held-out shape has found faster, as overrides of best's
# knobs: on the H100's held-out suites (data/h100_suite*.json) the tuner's few trials went to random settings and
# its winner was best at 14 of 14 GEMM shapes, where fewer, larger blocks (79x3659x5888, 0.45x cuBLAS: M=79 in two
# tiles of 64), more blocks (1623x114x64 and 918x100x351: 52 and 60 blocks of 64x64 for 132 SMs, 0.80x and
# 0.68x) or another split of K could each be the faster. A variant is a proposal: only its measurement counts.
VARIANTS = {
    ("gemm", "cuda"): (dict(tile_m=128, tile_n=64, patch_m=8, patch_n=8), dict(tile_m=64, tile_n=128, patch_m=8, patch_n=8),
                       dict(tile_m=32, tile_n=64, patch_m=4, patch_n=4), dict(tile_m=64, tile_n=32),
                       "k_blocks/2", "k_blocks*2", dict(stages=3)),
    ("dwsep_conv2d", "cuda"): ("tile_f/2", "tile_h/2", "tile_w/2", "tile_f*2", "c_split*2", "c_split/2"),
    ("dwconv2d", "cuda"): ("tile_h/2", "tile_w/2", "tile_h*2", "patch_h*2"),
    # best unpadded first, where best pads (conv1d_pads_whole, fitted on 8 shapes, not yet judged on held-out ones:
    # within an 8-trial search's first batch at 255347x980)
    ("conv1d", "cuda"): ({"pad_tiles": False}, "tile/2", "tile*2", "k_split/2", "k_split*2"),
}


def _override(k, v) -> dict:
    """A VARIANTS entry as knob values for k: a dict as it is, 'name*2' or 'name/2' from k's value."""
    if isinstance(v, dict):
        return v
    name, op, _ = v.partition("*") if "*" in v else v.partition("/")
    cur = getattr(k, name)
    new = {name: cur * 2 if op == "*" else max(1, cur // 2)}
    patch = name.replace("tile", "patch")          # a halved tile keeps at least one patch of threads' outputs
    if patch != name and getattr(k, patch, 0) > new[name]:
        new[patch] = new[name]
    return new


# GEMM on CUDA where an operand's rows are an odd number of floats (A's rows are K, B's N): its copies are 4 bytes
# wide, and as cp.async each comes with a zero fill and three never-true loads that nvcc puts beside it; copied
# synchronously through registers the same knobs leave those out. At fourteen held-out shapes with odd N or K the
# multiply-adds' share of the machine code rose by 3.9 to 11.3 points (data/cpu_gemm_sync_copies_mix.json); no
# GPU has timed it, so it is a proposal, measured right after best where its machine code is the sharper.
SYNC_COPIES = {"async_copy": False, "one_barrier": False}


def odd_rows(op: str, shape: dict) -> bool:
    """A GEMM operand whose rows are an odd number of floats (copied 4 bytes at a time)."""
    return op == "gemm" and bool(shape["N"] % 2 or shape["K"] % 2)


FEW_BLOCKS = 2 * H200_SMS   # under two blocks per SM of the H100 / H200: variants with more blocks are tried first


def sharper(op: str, shape: dict, base, ks: list) -> list:
    """Of these CUDA settings, those whose machine code gives multiply-adds a larger share of its instructions
    than base's does (kernels.sass.mix, the cubins compiled here; over the conv1d settings timed on the H200 the
    log of the time follows that share at r = -0.76, data/cpu_conv1d_mix.json). All of them where the cubins
    cannot be made here."""
    if not ks:
        return ks
    from .sass.mix import mix
    try:
        least = mix(op, shape, base)["ffma_share"]
        return [k for k in ks if mix(op, shape, k)["ffma_share"] > least]
    except Exception:       # noqa: BLE001 - no compiler here, or a schedule it refuses: the measurement decides
        return ks


def first_choices(op: str, target: str, shape: dict) -> list:
    """What the search measures first, in this order: best; best padded to whole tiles (padded) and best with
    tiles that divide the shape (exact_tiles), conv1d on CUDA, where their machine code is sharper; GEMM on CUDA
    with rows of an odd number of floats, best with synchronous copies (SYNC_COPIES) where sharper; the other
    side of best's size rule (the knobs best takes on the other side of it); best's
    VARIANTS; the seed's schedule. On CUDA, where best launches fewer than FEW_BLOCKS blocks, those between best
    and the seed with more blocks first. Each valid and once."""
    from .knobs import BEST_FEW_OUTPUTS, PRESETS, few_outputs
    b = preset(op, target, "best", shape)
    # judged against best unpadded, as these proposals were (at 255347x980 tiles of 714 outputs, 6 a thread, ran
    # 1.6x faster than best padded on an H100 with a smaller share than its 57%: data/h100_conv1d_exact.json)
    plain = replace(b, pad_tiles=False) if getattr(b, "pad_tiles", False) else b
    out = sharper(op, shape, plain, padded(op, target, b, shape) + exact_tiles(op, target, b, shape))
    if target == "cuda" and odd_rows(op, shape) and getattr(b, "async_copy", False):
        out += sharper(op, shape, b, [fit(replace(b, **SYNC_COPIES), shape)])
    if (op, target) in BEST_FEW_OUTPUTS:
        cls = knob_class(op, target)
        other = PRESETS[(op, target)]["best"] if few_outputs(op, target, shape) else BEST_FEW_OUTPUTS[(op, target)][1]
        out.append(fit(cls(**other), shape))
    for v in VARIANTS.get((op, target), ()):
        try:
            out.append(fit(replace(b, **_override(b, v)), shape))
        except (TypeError, ValueError):     # a knob this class does not have
            continue
    out = [k for k in out if not validate(op, target, k, shape)] + spread(op, target, b, shape)
    if target == "cuda" and blocks(op, b, shape) < FEW_BLOCKS:
        out.sort(key=lambda k: -blocks(op, k, shape))       # stable: the listed order among equals
    return list(dict.fromkeys([b] + out + [k for k in [preset(op, target, "seed", shape)]
                                           if not validate(op, target, k, shape)]))


def pool(op: str, target: str, shape: dict, rng, size: int, first: list | None = None) -> list:
    """The first choices (given, or worked out here), the naive preset, then random valid settings: the first
    candidates to score."""
    out = list(first) if first is not None else first_choices(op, target, shape)
    seen = set(out)
    k = preset(op, target, "naive", shape)
    if not validate(op, target, k, shape) and k not in seen:
        seen.add(k)
        out.append(k)
    for _ in range(size * 3):
        k = random_valid(op, target, shape, rng, tries=50)
        if k is not None and k not in seen:
            seen.add(k)
            out.append(k)
        if len(out) >= size:
            break
    return out


# ------------------------------------------------------------------ cost model
def features(op: str, shape: dict, knobs, target: str) -> np.ndarray:
    """What the schedule asks of each level at full size (reads, writes, accesses), the work per block and
    per thread: the simulator's exact counts, on a log scale."""
    from . import traffic
    c = traffic.counts(op, shape, knobs, target, machine=False)
    rd, wr = c.level_totals("read"), c.level_totals("write")
    asked = {lv: sum(v.get(lv, {}).get(kind, 0) for v in c.instructions["asked"].values() for kind in ("read", "write"))
             for lv in ("global", "shared", "register")}
    raw = [rd["global"], wr["global"], rd["shared"], wr["shared"], rd["register"], wr["register"],
           asked["global"], asked["shared"], asked["register"], c.blocks, c.threads, c.flops,
           c.flops / max(c.threads * c.blocks, 1)]
    return np.log1p(np.asarray(raw, dtype=np.float64))


# Loop points the simulator may visit to count one candidate the search found itself (random or a neighbour):
# about 10 s on these cores. A random GEMM candidate at 4206x347x642 took 309 s (6.7e9 points) and its search
# waited for it until the H100's step ran out of time (data/h100_suite_4.json, 2026-12-06); best and its variants
# took 0.2-18 s up to 8111x7777x6001 and are always counted in full.
SEARCH_POINTS = 300_000_000


def counted(op: str, shape: dict, knobs, target: str, points: int | None = None) -> np.ndarray | None:
    """features(), or None where the simulator cannot count this candidate at full size (a bounds test over
    more loop points than it visits, or more than `points` points in all): such a candidate is left out of the
    search instead of ending it (two GEMM shapes of the H200 suite, 448x5937x955 and 2411x5445x919, ended that
    way, 2026-12-05) or holding it up."""
    from ._count import visiting
    try:
        with visiting(points):
            return features(op, shape, knobs, target)
    except NotImplementedError:
        return None


def _counted(args: tuple) -> np.ndarray | None:
    return counted(*args)


_POOL: dict = {}


def count_all(op: str, shape: dict, ks: list, target: str, workers: int, points: int | None = None) -> dict:
    """{candidate: features} of those the simulator can count, in order. With more than two workers (the H200's
    host has 16 cores) in a pool of processes kept for the next search: a GEMM shape's first 42 candidates
    took 11.5 s of counting in one process; on two cores (here, CI) it stays in this one."""
    if workers <= 2 or len(ks) < 8:
        return {k: x for k in ks if (x := counted(op, shape, k, target, points)) is not None}
    if _POOL.get("workers") != workers:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        if _POOL:
            _POOL["ex"].shutdown(cancel_futures=True)
        # spawned, not forked: this process may hold a CUDA context and TVM's threads
        _POOL.update(workers=workers, ex=ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")))
    with isolated.plain_main():            # the pool's processes start here, on the first map
        xs = list(_POOL["ex"].map(_counted, [(op, dict(shape), k, target, points) for k in ks]))
    return {k: x for k, x in zip(ks, xs) if x is not None}


def prior_ms(x: np.ndarray) -> float:
    """Before any measurement: global traffic dominates, then shared, then registers (a rough roofline)."""
    g = math.expm1(x[0]) + math.expm1(x[1])
    s = math.expm1(x[2]) + math.expm1(x[3])
    r = math.expm1(x[4]) + math.expm1(x[5])
    return (4 * g / 500e9 + 4 * s / 5e12 + 4 * r / 50e12) * 1e3


class Model:
    """Ridge regression of log(ms) on the features, refitted after every measurement."""

    def __init__(self, alpha: float = 1.0):
        self.alpha, self.w, self.mu, self.sd = alpha, None, None, None

    def fit(self, X: np.ndarray, y_ms: np.ndarray) -> None:
        self.mu, self.sd = X.mean(0), X.std(0) + 1e-9
        Z = np.hstack([(X - self.mu) / self.sd, np.ones((len(X), 1))])
        A = Z.T @ Z + self.alpha * np.eye(Z.shape[1])
        self.w = np.linalg.solve(A, Z.T @ np.log(y_ms))

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.w is None:
            return np.array([prior_ms(x) for x in X])
        Z = np.hstack([(X - self.mu) / self.sd, np.ones((len(X), 1))])
        return np.exp(np.clip(Z @ self.w, -60.0, 60.0))      # a wild extrapolation stays a finite time


# ------------------------------------------------------------------ the search
def search(op: str, shape: dict, target: str, trials: int, measure, rng=None, batch: int = 4, progress=None,
           start: list | None = None, count_workers: int | None = None) -> list[Trial]:
    """`trials` measurements, `batch` at a time: the model scores the pool, the best-predicted unmeasured
    candidates (one in four picked at random, to explore) are measured, their neighbours join the pool.
    `measure(knobs_list)` -> [(median ms | None, rel. error | None, error sentence)]."""
    rng = rng or np.random.default_rng()
    workers = count_workers if count_workers is not None else compile_workers()
    ranked = first_choices(op, target, shape)
    start = start or pool(op, target, shape, rng, max(4 * trials, 32), first=ranked)
    full = set(ranked)
    feats = count_all(op, shape, [k for k in start if k in full], target, workers)         # counted in full
    feats.update(count_all(op, shape, [k for k in start if k not in full], target, workers, SEARCH_POINTS))
    feats = {k: feats[k] for k in start if k in feats}
    cands = list(feats)
    model, done, history = Model(), {}, []
    ranked = [k for k in ranked if k in feats]
    while len(history) < trials:
        todo = [k for k in cands if k not in done]
        if not todo:
            break
        pred = model.predict(np.stack([feats[k] for k in todo]))
        order = list(np.argsort(pred))
        n = min(batch, trials - len(history), len(todo))
        first = [k for k in ranked if k not in done][:n]         # best and its variants are measured first
        order = [i for i in order if todo[i] not in first]
        m = n - len(first)
        pick = first + [todo[i] for i in order[:m - m // 4]]
        rest = [todo[i] for i in order[m - m // 4:]]
        pick += [rest[j] for j in rng.permutation(len(rest))[:n - len(pick)]] if rest else []
        for k, (ms, rel, err) in zip(pick, measure(pick)):
            p = float(pred[todo.index(k)])
            done[k] = ms
            history.append(Trial(knobs_text(k), p, ms, rel, ms is not None, err))
            if progress:
                progress(len(history) / trials, history)
        good = [(k, ms) for k, ms in done.items() if ms is not None]
        if len(good) >= PRIOR_POINTS:
            model.fit(np.stack([feats[k] for k, _ in good]), np.array([ms for _, ms in good]))
        near = [nb for k, _ in sorted(good, key=lambda kv: kv[1])[:2]     # explore around the fastest so far
                for nb in _neighbours(op, target, shape, k, rng, 6)]
        new = [nb for nb in dict.fromkeys(near) if nb not in feats]     # each once, in the order drawn
        got = count_all(op, shape, new, target, workers, SEARCH_POINTS)
        feats.update(got)
        cands += [nb for nb in new if nb in got]
    return history


def compile_workers() -> int:
    """Threads that compile candidates at once: one per core this process may use (2 here, 16 on the H200's
    host), at most 16."""
    from . import build
    return max(2, min(16, build._physical_cores()))


def preflight(op: str, shape: dict, k, target: str) -> str | None:
    """On CUDA, the emulated SASS first: a kernel whose lane addresses are misaligned would fault on the GPU and
    take the tuning process with it ('misaligned address' is not recoverable), so it is a failed trial instead.
    A kernel the emulator cannot follow is measured all the same."""
    if target != "cuda":
        return None
    from . import sass
    try:
        sass.machine_counts(op, shape, k)
    except sass.Misaligned as e:
        return f"it would fault on the GPU: {e}"
    except Exception:           # noqa: BLE001 - not provable either way: the GPU decides
        return None
    return None


def local_measure(op: str, shape: dict, target: str, repeat: int = 5, workers: int | None = None,
                  isolate: bool | None = None):
    """measure() on this machine: candidates compiled in parallel threads, then verified and timed one at a
    time on the device: verified against float64 before any time counts (on inputs drawn at random for this
    search, the reference computed once), then timed `repeat` times, or only once when that first timing is
    over SLOW times the fastest so far. With `isolate` (the default on CUDA) each candidate runs in a child
    process (kernels.isolated), so one that faults on the GPU is a failed trial, not the end of the search.
    `measure.close()` ends the child and removes the libraries."""
    from . import build
    workers = workers or compile_workers()
    isolate = target == "cuda" if isolate is None else isolate
    libs: dict = {}                 # candidate -> its linked library (isolate)

    def compile_one(k):
        try:
            if isolate:
                if k not in libs:
                    path = os.path.join(measure.dir.name, f"k{len(libs)}_{threading.get_ident()}.so")
                    build.executable(op, shape, k, target).export_library(path)
                    libs[k] = path
            else:
                build.compiled(op, tuple(shape.items()), k, target)
        except Exception as e:      # noqa: BLE001 - a candidate that fails to build is a failed trial
            return f"it did not build: {str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__}"
        return preflight(op, shape, k, target)

    def one(k):
        if isolate:
            return measure.worker.measure(libs[k], measure.fastest)
        _, mod, _ = build.compiled(op, tuple(shape.items()), k, target)
        if measure.checked is None:     # inputs drawn for this search, one float64 reference for all
            measure.checked = build.fresh_check(op, shape, target)
        return isolated.judge(op, shape, target, mod, build._tvm_dev(target), measure.checked, measure.fastest,
                              repeat, SLOW)

    def measure(ks):
        if isolate and measure.worker is None:      # the child starts while the first candidates compile
            measure.worker = isolated.Worker(op, shape, target, repeat, SLOW)
            measure.worker.begin()
        with ThreadPoolExecutor(workers) as ex:
            built = list(ex.map(compile_one, ks))
        out = []
        for k, err in zip(ks, built):
            got = (None, None, err) if err else one(k)
            if got[0] is not None:
                measure.fastest = min(measure.fastest or got[0], got[0])
            out.append(got)
        return out

    def close():
        if measure.worker is not None:
            measure.worker.close()
            measure.worker = None
        measure.dir.cleanup()
    measure.fastest, measure.checked, measure.worker, measure.close = None, None, None, close
    measure.dir = tempfile.TemporaryDirectory(prefix="kernels-tune-")
    return measure


def tune(op: str, shape: dict, target: str, trials: int = 32, rpc: str | None = None, progress=None,
         seed: int | None = None, record: bool = True) -> Tuned:
    """Search, then time the winner against the reference library on the same machine, and record it all."""
    from . import build, results
    t0 = time.perf_counter()
    if rpc:
        from . import remote
        measure = remote.measure_pool(op, shape, target, rpc)
        device = remote.device_name(rpc, target)
    else:
        if build.target_available(target):
            raise KnobError([build.target_available(target) + " Tune on a machine with a GPU, or pass --rpc."])
        measure, device = local_measure(op, shape, target), build.device_name(target)
    batch = 4 if rpc else max(4, min(8, compile_workers()))     # a batch keeps the compiling threads busy
    try:
        history = search(op, shape, target, trials, measure, np.random.default_rng(seed), batch=batch,
                         progress=progress)
        if record:          # every trial, also where none verified or the winner's run fails
            for t in history:
                results.record(_trial_row(op, shape, target, device, t), preset="", source="tune")
        ok = [t for t in history if t.ok]
        if not ok:
            raise KnobError([none_verified(history)])
        winner = final_pick(op, target, ok, measure, shape)
    finally:
        if hasattr(measure, "close"):
            measure.close()
    k = parse_knobs(op, target, winner.knobs, knob_class(op, target)())
    r = remote.run(op, shape, k, target, rpc) if rpc else build.run(op, shape, k, target)
    if record:
        results.record(r, preset="best", source="tune:winner")
    return Tuned(op, dict(shape), target, device, len(history), winner.knobs, r.median_ms, r.ref, r.ref_ms, r.vs_ref,
                 time.perf_counter() - t0, history, sorted(getattr(measure, "used", ())), r.timer)


def none_verified(history: list) -> str:
    """The sentence of a search none of whose candidates built and verified: with its commonest failure, so that a
    suite's row says what went wrong (the trials are recorded too)."""
    said = collections.Counter(t.error or "no reason was given" for t in history).most_common(1)
    what = f"; {said[0][1]} of them: {said[0][0]}" if said else "."
    return f"None of the {len(history)} candidates built and verified{what}"


FINALISTS = 4


def final_pick(op: str, target: str, ok: list, measure, shape: dict | None = None) -> "Trial":
    """The fastest few trials, and `best` where it was measured, timed again twice in opposite orders; the
    fastest of those wins. One search measurement is a few repeats, and on a busy CPU a slower kernel can look
    faster in it (a 64-trial GEMM tune once ended on a winner 5% slower than best, a side-by-side run on one 2x
    slower). A parallel kernel measured while another thread held the second core (OpenBLAS's spinning worker,
    before the checks ran on one BLAS thread) took a scheduler tick per call, and `best` dropped out of the
    top few (a dwconv tune ended on a serial kernel at half best's speed): it always gets the second look."""
    top = sorted(ok, key=lambda t: t.median_ms)[:FINALISTS]
    if shape is not None:
        b = knobs_text(preset(op, target, "best", shape))
        top += [t for t in ok if t.knobs == b and t not in top][:1]
    if len(top) == 1:
        return top[0]
    ks = [parse_knobs(op, target, t.knobs, knob_class(op, target)()) for t in top]
    again = [measure(ks), measure(ks[::-1])[::-1]]

    def best_of(i):
        got = [a[i][0] for a in again if a[i][0] is not None]
        return min(got) if got else math.inf
    return top[min(range(len(top)), key=best_of)]


def _trial_row(op, shape, target, device, t: Trial) -> dict:
    import datetime as dt
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "target": target, "op": op, "shape": dict(shape), "knobs": t.knobs, "median_ms": t.median_ms,
            "rel_err": t.rel_err, "ok": t.ok}


def tuned_best(op: str, target: str, shape: dict, device: str | None = None) -> tuple[str, str] | None:
    """(knob text, a sentence saying where it comes from) of the newest tuned winner for this shape on this
    device in the results store, or None."""
    from . import build, results
    device = device or build.device_name(target)
    try:
        df = results.load()
    except Exception:           # noqa: BLE001 - an unreadable store holds no tuned record
        return shipped_best(op, target, shape, device)
    import json
    mine = df[(df["source"] == "tune:winner") & (df["op"] == op) & (df["target"] == target)
              & (df["device"] == device) & (df["shape"] == json.dumps(dict(shape))) & df["ok"]]
    mine = mine[[searched_today(op, target, k, shape) for k in mine["knobs"]]] if not mine.empty else mine
    if mine.empty:
        return shipped_best(op, target, shape, device)
    row = mine.iloc[-1]
    return row["knobs"], (f"best is the tuner's winner for this shape on {device} ({row['date'][:10]}, "
                          f"{row['median_ms']:.4g} ms in the results store)")


SHIPPED = ("data/h200_anchors.json", "data/h200_suite.json", "data/h100_suite.json", "data/h100_dwsep_suite.json",
           "data/h100_dwsep_suite_2.json", "data/h100_dwsep_suite_3.json", "data/h100_suite_2.json",
           "data/h100_ms_builder.json", "data/h100_suite_4.json", "data/h100_suite_5.json",
           "data/h100_gemm_cubes.json", "data/h100_suite_6.json",
           "data/h100_suite_7.json", "data/h100_suite_8.json", "data/h100_suite_9.json",
           "data/h100_ms_conv1d.json", "data/h100_conv1d_exact.json", "data/h100_gemm_align.json",
           "data/h100_ms_dwsep.json")        # tuner runs made by bench/plans


def searched_today(op: str, target: str, text: str, shape: dict | None = None) -> bool:
    """Whether a tuned winner's knob text names every knob the operator has today, or (given the shape) the
    knobs it does not name are ones today's rules leave at their defaults there. A winner found before a knob
    existed was found among candidates without it, against the best of its day: where today's best uses the
    knob (d_kernel took depthwise-separable from 0.40x to 1.1x cuDNN) it can be the faster, so best keeps its
    rules there; where it does not, the winner beat the same best it would beat today."""
    from .knobs import fields_of, knob_class, preset
    missing = set(fields_of(knob_class(op, target)())) - _named(text)
    if not missing or shape is None:
        return not missing
    rules, default = preset(op, target, "best", dict(shape)), knob_class(op, target)()
    return all(getattr(rules, n) == getattr(default, n) for n in missing)


def _named(text: str | None) -> set[str]:
    """The knobs a knob text names."""
    return {item.partition("=")[0].strip() for item in (text or "").split(",") if item.strip()}


# The most padding has sped conv1d's best up on CUDA: 1.53x at 230400x1279 (0.0803 ms to 0.0524, H100,
# data/h100_conv1d_exact.json step 3; 1.10x to 1.53x at the seven shapes where it helped).
CONV1D_PAD_GAIN = 1.53


def stands(r: dict) -> bool:
    """Whether a shipped tuner row's winner stands for best at its shape: found with today's knobs
    (searched_today), or a conv1d winner from before pad_tiles, at a shape where best now pads, that beat the
    best of its day by more than padding has ever sped best up (at 1308275x12, 2.6x)."""
    o, op, target = r["ours"], r["op"], r.get("target")
    if searched_today(op, target, o["knobs"], r["shape"]):
        return True
    return ((op, target) == ("conv1d", "cuda") and "pad_tiles" not in _named(o["knobs"])
            and bool(o.get("best_preset_ms"))
            and searched_today(op, target, o["knobs"] + ",pad_tiles=false", r["shape"])
            and o["best_preset_ms"] / o["median_ms"] > CONV1D_PAD_GAIN)


def shipped_rows(files=SHIPPED) -> list[tuple[str, str, dict]]:
    """(file, date, row) of every anchors row in the shipped data files (bench.anchors' output, one per shape)."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    out = []
    for f in files:
        try:
            doc = json.loads((root / f).read_text())
        except (OSError, ValueError):
            continue
        for st in doc.get("steps", []):
            rows = st.get("output")
            for r in rows if isinstance(rows, list) else [rows]:
                if isinstance(r, dict) and "op" in r and "ours" in r:
                    out.append((f, doc.get("date", "")[:10], r))
    return out


def shipped_best(op: str, target: str, shape: dict, device: str) -> tuple[str, str] | None:
    """The tuner's verified winner for this shape and device in the shipped data, with where it comes from."""
    for f, date, r in reversed(shipped_rows()):
        o = r["ours"]
        if (r["op"], r.get("target"), r["shape"], r.get("device")) == (op, target, dict(shape), device) \
                and o.get("ok") and o.get("knobs") and stands(r):
            return o["knobs"], (f"best is the tuner's winner for this shape on {device} ({f}, {date}: "
                                f"{o['median_ms']:.4g} ms, {r['vendor']} {r['vendor_ms']:.4g} ms)")
    return None
