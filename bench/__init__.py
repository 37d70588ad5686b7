"""Measurement tools (h200, variants, ncu, heldout, anchors, deps, report) and the experiment plans that run them
(bench/plans/NAME.toml, one per data file under data/; python -m bench.run NAME, here or on the GPU machine)."""
