"""The SASS toolchain from NVIDIA's pip wheels: CUDA C -> sm_90 cubin (NVRTC), cubin -> SASS text (nvdisasm).

The cubin analysed here is the one the GPU runs: kernels/lowering registers `compile_cubin` as TVM's CUDA
compile callback, so a GPU build loads this very cubin (no PTX is left to the driver's JIT). The compiler
and its flags are pinned (requirements.txt, NVRTC_VERSION, FLAGS); `sass_hash` names the machine code.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile
from pathlib import Path

NVRTC_VERSION = "13.0.88"       # the wheel pinned in requirements.txt; the H200 machine's torch carries the same
ARCH = "sm_90"
FLAGS = (f"--gpu-architecture={ARCH}", "-default-device", "--use_fast_math",
         "--ptxas-options=--register-usage-level=10")
# TVM's generated source includes libcu++'s <cuda/std/cstdint> and <cuda/std/type_traits> when NVRTC compiles
# it. The kernels use the fixed-width integer types and nothing else from them; defining those here makes the
# compile depend on the pinned NVRTC alone, not on which CUDA headers a machine has.
_RTC_PRELUDE = """
  typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t;
  typedef unsigned short uint16_t; typedef int int32_t; typedef unsigned int uint32_t;
  typedef long long int64_t; typedef unsigned long long uint64_t;
  #ifndef __asm__
  #define __asm__ asm
  #endif
  #ifndef __volatile__
  #define __volatile__ volatile
  #endif
"""


class ToolchainError(RuntimeError):
    """The pinned NVIDIA wheels are missing or refused a kernel; the message is one sentence."""


def _files(dist: str) -> list[Path]:
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return []
    return [Path(d.locate_file(f)) for f in (d.files or ())]


def _installed(dist: str, want: str | None = None) -> list[Path]:
    try:
        have = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise ToolchainError(f"The SASS view needs NVIDIA's '{dist}' wheel; install the project's requirements "
                             "(pip install -r requirements.txt).") from None
    if want and have != want:
        raise ToolchainError(f"'{dist}' {have} is installed but the project pins {want} (the compiler the "
                             f"GPU runs must be the one analysed); pip install {dist}=={want}.")
    return _files(dist)


@functools.lru_cache(maxsize=None)
def _nvrtc():
    files = _installed("nvidia-cuda-nvrtc", NVRTC_VERSION)
    lib = next((p for p in files if re.fullmatch(r"libnvrtc\.so\.\d+", p.name)), None)
    builtins = next((p for p in files if re.fullmatch(r"libnvrtc-builtins\.so\.[\d.]+", p.name)), None)
    if lib is None or builtins is None:
        raise ToolchainError("The nvidia-cuda-nvrtc wheel holds no libnvrtc.so; reinstall it "
                             f"(pip install --force-reinstall nvidia-cuda-nvrtc=={NVRTC_VERSION}).")
    ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)     # NVRTC dlopens it by name: load it first
    return ctypes.CDLL(str(lib))


@functools.lru_cache(maxsize=None)
def nvdisasm_path() -> str:
    exe = next((p for p in _installed("nvidia-cuda-nvdisasm") if p.name == "nvdisasm"), None)
    if exe is None:
        raise ToolchainError("The nvidia-cuda-nvdisasm wheel holds no nvdisasm; reinstall it.")
    if not os.access(exe, os.X_OK):     # some installs drop the run bit: use a private executable copy
        copy = Path(tempfile.gettempdir()) / f"kernel-lab-nvdisasm-{os.getuid()}"
        if not copy.exists():
            shutil.copyfile(exe, copy)
            copy.chmod(copy.stat().st_mode | stat.S_IXUSR)
        exe = copy
    return str(exe)


def nvrtc_version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value} (nvidia-cuda-nvrtc {NVRTC_VERSION})"


def prepared_source(code: str) -> str:
    """TVM's CUDA source with its NVRTC header block replaced by the self-contained prelude."""
    return re.sub(r"#ifdef __CUDACC_RTC__\n.*?\n#else\n", "#ifdef __CUDACC_RTC__\n" + _RTC_PRELUDE + "#else\n",
                  code, count=1, flags=re.S)


def cache_dir() -> Path:
    """Where compiled cubins are kept, by the hash of their source, compiler and flags."""
    return Path(os.environ.get("KERNEL_LAB_CACHE", Path.home() / ".cache" / "kernel-lab")) / "cubin"


@functools.lru_cache(maxsize=256)
def compile_cubin(code: str) -> bytes:
    """The sm_90 cubin of a CUDA C source, from the pinned NVRTC with the pinned flags (cached on disk)."""
    key = hashlib.sha256("\0".join((NVRTC_VERSION, *FLAGS, prepared_source(code))).encode()).hexdigest()
    path = cache_dir() / f"{key}.cubin"
    try:
        return check_local(path.read_bytes())
    except OSError:
        pass
    cubin = check_local(_compile(code))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(cubin)
        tmp.replace(path)
    except OSError:
        pass                    # a read-only home: compile again next time
    return cubin


def refusal(first: str) -> str:
    """NVRTC's first error line as one sentence; ptxas's shared-memory refusal with its cause and the fix."""
    m = re.search(r"uses too much shared data \((0x[0-9a-fA-F]+) bytes, (0x[0-9a-fA-F]+) max\)", first)
    if m is None:
        return f"NVRTC refused the kernel's CUDA source: {first}"
    need, cap = (int(x, 16) for x in m.groups())
    return (f"NVRTC refused the kernel: it needs {need / 1024:.1f} KB of shared memory per block, over the "
            f"{cap / 1024:.0f} KB a block may declare. TVM sized a shared stage larger than the knobs' tile: where a "
            "tile does not divide its axis and the stage is filled once per reduction tile, the stage can span the "
            "whole input; use a tile that divides the axis, a single reduction tile (the split equal to the whole "
            "reduction), or cache that input in 'local'.")


def _compile(code: str) -> bytes:
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    src = prepared_source(code).encode()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernel_lab.cu", 0, None, None):
        raise ToolchainError("NVRTC could not create a program from the kernel's source.")
    try:
        opts = (ctypes.c_char_p * len(FLAGS))(*(f.encode() for f in FLAGS))
        if lib.nvrtcCompileProgram(prog, len(FLAGS), opts):
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            first = next((ln for ln in log.value.decode(errors="replace").splitlines() if "error" in ln), "")
            raise ToolchainError(refusal(first.strip()))
        size = ctypes.c_size_t()
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, buf)
        return buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _sections(cubin: bytes) -> dict[str, bytes]:
    """The ELF sections of a cubin by name."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ToolchainError("The module's binary is not a 64-bit ELF cubin (PTX would be compiled by the "
                             "driver, not by the pinned compiler).")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_off = heads[shstrndx][4]

    def name(h):
        end = cubin.index(b"\0", names_off + h[0])
        return cubin[names_off + h[0]:end].decode()
    return {name(h): cubin[h[4]:h[4] + h[5]] for h in heads}


def text_sections(cubin: bytes) -> dict[str, bytes]:
    """The machine code of each kernel: the ELF sections named .text.<kernel>."""
    return {k[len(".text."):]: v for k, v in _sections(cubin).items() if k.startswith(".text.")}


LOCAL_LIMIT = 512 * 1024        # bytes of local memory a thread may have (sm_90); the driver refuses a launch above
_EIATTR_FRAME_SIZE = 0x11


def local_bytes(cubin: bytes) -> int:
    """The largest per-thread local frame (stack) of the cubin's kernels, from .nv.info's EIATTR_FRAME_SIZE
    records (format 4: a 2-byte size, then the kernel's symbol index and the frame's bytes)."""
    info, i, frames = _sections(cubin).get(".nv.info", b""), 0, [0]
    while i + 4 <= len(info):
        fmt, attr = info[i], info[i + 1]
        if fmt != 4:                    # no value, a byte or a half-word: four bytes in all
            i += 4
            continue
        size, = struct.unpack_from("<H", info, i + 2)
        if attr == _EIATTR_FRAME_SIZE and size == 8:
            frames.append(struct.unpack_from("<II", info, i + 4)[1])
        i += 4 + size
    return max(frames)


def frame_problem(frame: int, resident: int | None = None, free: int | None = None) -> str | None:
    """Why the driver cannot launch a kernel whose threads each have `frame` bytes of local memory, or None: over
    the per-thread limit, or (given the device's resident threads and free bytes) over its free memory once the
    driver reserves a frame for every thread its SMs can hold (batch 1481437295's conv1d-38 on an H100: 362 KB a
    thread, 91 GiB for 2048 x 132 threads; its launch failed and ended the process)."""
    if frame > LOCAL_LIMIT:
        return f"{frame / 1024:.0f} KB of local memory per thread, over the {LOCAL_LIMIT // 1024} KB the GPU allows"
    if resident and free is not None and frame * resident > free:
        return (f"{frame / 1024:.0f} KB of local memory per thread, {frame * resident / 2**30:.1f} GiB for the "
                f"{resident} threads the GPU's SMs can hold, over the {free / 2**30:.1f} GiB free")
    return None


def check_local(cubin: bytes, resident: int | None = None, free: int | None = None) -> bytes:
    """The cubin, or a one-sentence refusal where a thread's local frame is more than the driver can launch."""
    why = frame_problem(local_bytes(cubin), resident, free)
    if why:
        raise ToolchainError(
            f"The kernel needs {why}, so it cannot be launched. TVM sized a per-thread ('local') stage larger than "
            "the knobs' patch: where a tile does not divide its axis, the stage can span the whole input; use a "
            "tile that divides the axis, or leave that input in 'global'.")
    return cubin


def sass_hash(cubin: bytes) -> str:
    """sha256 of the kernels' machine code (names and .text bytes), the same wherever the cubin is read."""
    h = hashlib.sha256()
    for k, code in sorted(text_sections(cubin).items()):
        h.update(k.encode() + b"\0" + code)
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of the cubin's code sections (labels for branch targets, one instruction a line)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([nvdisasm_path(), "-c", f.name], capture_output=True, text=True)
    if r.returncode:
        raise ToolchainError(f"nvdisasm could not read the cubin: {r.stderr.strip().splitlines()[-1:]}")
    return r.stdout


HANDED_TO_TVM: list[str] = []      # sass_hash of every cubin this process gave TVM to load, in order


def install_tvm_callback() -> None:
    """Make TVM compile every CUDA module with compile_cubin (on a machine with a GPU; without one TVM keeps
    the source and never calls it)."""
    import tvm
    import tvm_ffi

    @tvm_ffi.register_global_func("tvm_callback_cuda_compile", override=True)
    def _compile(code):
        cubin = compile_cubin(code)
        dev = tvm.cuda(0)
        if dev.exist:           # the driver reserves a frame for every thread the SMs can hold (2048 each on sm_90)
            from ..knobs import SM_THREADS
            check_local(cubin, SM_THREADS * dev.multi_processor_count, dev.available_global_memory)
        HANDED_TO_TVM.append(sass_hash(cubin))
        return bytearray(cubin)
