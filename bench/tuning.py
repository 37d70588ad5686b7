"""Knob sets measured beside the presets on the H200, chosen by reading each schedule's access pattern.

Each comment says what the variant tests. The winners become the `best` presets in kernels/knobs.py.
"""

CANDIDATES: dict[str, dict[str, str]] = {
    "gemm": {
        # which level wins: the seed's tiles with operands in registers, in shared, or staged through both
        "seed-local": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,vector=4",
        "seed-shared": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared,cache_b=shared,vector=4",
        "seed-shared+local": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared+local,"
                             "cache_b=shared+local,vector=4",
        # 8x8 patches: 64 accumulators per thread, each shared value reused 8 times from a register
        "t128p8k8": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,cache_a=shared+local,cache_b=shared+local,vector=4",
        "t128p8k16": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,cache_a=shared+local,"
                     "cache_b=shared+local,vector=4",
        "t128p8k8u": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,cache_a=shared+local,cache_b=shared+local,"
                     "vector=4,unroll=512",
        "t128x64p8x4k16": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,cache_a=shared+local,"
                          "cache_b=shared+local,vector=4",
        "t64p4k16u": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared+local,cache_b=shared+local,"
                     "vector=4,unroll=512",
        "t64x128p4x8k16": "tile_m=64,tile_n=128,patch_m=4,patch_n=8,k_split=16,cache_a=shared+local,"
                          "cache_b=shared+local,vector=4",
    },
    "conv1d": {
        "seed-local": "tile=256,patch=4,k_split=32,cache_a=local,cache_w=local",
        "seed-shared": "tile=256,patch=4,k_split=32,cache_a=shared,cache_w=shared",
        "t1024p4k128s": "tile=1024,patch=4,k_split=128,cache_a=shared,cache_w=shared",
        "t1024p8k128s": "tile=1024,patch=8,k_split=128,cache_a=shared,cache_w=shared",
        "t2048p8k256s": "tile=2048,patch=8,k_split=256,cache_a=shared,cache_w=shared,unroll=512",
        "t512p2k256s": "tile=512,patch=2,k_split=256,cache_a=shared,cache_w=shared",
        "t1024p4k64l": "tile=1024,patch=4,k_split=64,cache_a=local,cache_w=local",
        "t1024p8k64sl": "tile=1024,patch=8,k_split=64,cache_a=shared+local,cache_w=shared",
    },
    "dwconv2d": {
        "t8x64p1x2s": "tile_h=8,tile_w=64,patch_h=1,patch_w=2,cache_x=shared,cache_w=local",
        "t16x32p2x2s": "tile_h=16,tile_w=32,patch_h=2,patch_w=2,cache_x=shared,cache_w=local",
        "t8x128p2x4s": "tile_h=8,tile_w=128,patch_h=2,patch_w=4,cache_x=shared,cache_w=local,vector=4",
        "t4x128p1x4g": "tile_h=4,tile_w=128,patch_h=1,patch_w=4,cache_x=global,cache_w=local,vector=4",
        "t8x32p1x1g": "tile_h=8,tile_w=32,patch_h=1,patch_w=1,cache_x=global,cache_w=local",
        "t32x32p4x4s": "tile_h=32,tile_w=32,patch_h=4,patch_w=4,cache_x=shared,cache_w=local,vector=4",
        "t16x64p4x2l": "tile_h=16,tile_w=64,patch_h=4,patch_w=2,cache_x=local,cache_w=local",
    },
    "dwsep_conv2d": {
        "f64p8h2w32": "tile_f=64,patch_f=8,tile_h=2,tile_w=32,patch_h=1,patch_w=2,c_split=8,cache_d=shared,cache_p=local",
        "f64p16h4w32": "tile_f=64,patch_f=16,tile_h=4,tile_w=32,patch_h=1,patch_w=4,c_split=8,cache_d=shared,"
                       "cache_p=local",
        "f64p8h4w32c16": "tile_f=64,patch_f=8,tile_h=4,tile_w=32,patch_h=1,patch_w=4,c_split=16,cache_d=shared,"
                         "cache_p=shared+local",
        "f32p4h4w32": "tile_f=32,patch_f=4,tile_h=4,tile_w=32,patch_h=1,patch_w=2,c_split=8,cache_d=shared,"
                      "cache_p=local",
    },
}
