"""GPU measurements (correctness sweep, benchmark table, Nsight Compute launches) run through `device`."""
