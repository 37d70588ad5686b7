"""The Operator record: one operator's math, reference, cost and sizes, stated once."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Shape = dict[str, int]
SMALL_OUTPUT = 64          # outputs this small are checked for cancellation before they are used
CANCELLATION = 100.0       # terms' magnitudes over the result's norm beyond which a draw is drawn again


def rel_error(got, ref) -> float:
    """||got - ref|| / ||ref||, and infinity when got holds a NaN or an infinity (an unwritten output)."""
    got = np.asarray(got, dtype="float64")
    if not np.isfinite(got).all():
        return float("inf")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


@dataclass(frozen=True)
class Operator:
    name: str
    title: str
    math: str                                   # the definition, one line, for people
    dims: tuple[str, ...]                       # shape keys, in command-line order
    inputs: tuple[str, ...]                     # input tensor names, in argument order
    output: str                                 # output tensor name
    define: Callable[[Shape], list]             # te tensors: inputs..., output
    input_shapes: Callable[[Shape], list[tuple[int, ...]]]
    output_shape: Callable[[Shape], tuple[int, ...]]
    reference: Callable[..., np.ndarray]        # float64 numpy, same argument order
    flops: Callable[[Shape], int]
    shape_rules: Callable[[Shape], list[str]] = lambda s: []
    sizes: dict[str, Shape] = field(default_factory=dict)   # named shapes: speed-test, large, tile
    # the definition padded to whole tiles, (shape, tiles, splits) -> te tensors, for the pad_tiles knob where
    # TVM's pad_einsum cannot pad the operator (conv1d reads A_pad[i + k]); None: pad_einsum pads it
    define_padded: Callable[[Shape, tuple, tuple], list] | None = None

    def random_inputs(self, shape: Shape, rng: np.random.Generator) -> list[np.ndarray]:
        """Uniform(-1, 1) float32 inputs. Where the output has at most SMALL_OUTPUT entries, a draw whose float64
        result nearly cancels (its terms' magnitudes, the reference on |inputs|, over CANCELLATION times its
        norm) is drawn again: there float32 rounding alone can exceed the 1e-4 check whatever the kernel does
        (GEMM 1x1x33: 0.04% of plain draws fail with a correct sequential sum, none of the kept ones)."""
        small = int(np.prod(self.output_shape(shape))) <= SMALL_OUTPUT
        while True:
            xs = self.uniform_inputs(shape, rng)
            if not small or not self.cancels(xs):
                return xs

    def uniform_inputs(self, shape: Shape, rng: np.random.Generator) -> list[np.ndarray]:
        """One plain draw: uniform(-1, 1) float32 inputs, whatever their result."""
        return [rng.uniform(-1.0, 1.0, s).astype("float32") for s in self.input_shapes(shape)]

    def cancels(self, xs: list[np.ndarray]) -> bool:
        """The float64 result of these inputs is CANCELLATION times smaller than the sum of its terms' sizes."""
        terms = np.linalg.norm(self.reference(*[np.abs(x) for x in xs]))
        return bool(terms > CANCELLATION * np.linalg.norm(self.reference(*xs)))

    def min_bytes(self, shape: Shape) -> int:
        """Each input read once and the output written once, float32."""
        elems = sum(int(np.prod(s)) for s in self.input_shapes(shape))
        return 4 * (elems + int(np.prod(self.output_shape(shape))))
