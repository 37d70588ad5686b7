"""Measured roofline ceilings of the GPU: device-to-device copy bandwidth and cuBLAS fp32 (TF32 off) rate."""
from __future__ import annotations

import json
import sys
import time

import torch


def _ms(fn, n=20):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(n):
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e))
    out.sort()
    return out[len(out) // 2]


def main(path: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(1 << 30, device="cuda")             # 4 GiB, far above the 60 MB L2
    y = torch.empty_like(x)
    copy_ms = _ms(lambda: y.copy_(x))
    a = torch.randn(8192, 8192, device="cuda")
    b = torch.randn(8192, 8192, device="cuda")
    mm_ms = _ms(lambda: a @ b, 10)
    out = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "copy_gbps": 2 * x.numel() * 4 / copy_ms / 1e6, "sgemm_gflops": 2 * 8192 ** 3 / mm_ms / 1e6,
           "how": "copy: median of 20 device-to-device copies of 4 GiB, bytes read + written; "
                  "sgemm: median of 10 torch.matmul 8192^3 fp32 with TF32 off (cuBLAS)"}
    json.dump(out, open(path, "w"), indent=1)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1])
