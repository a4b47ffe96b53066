"""QueueFlow's benchmark harness (`make bench`, `make bench-smoke`): every figure beside its same-run baseline."""
