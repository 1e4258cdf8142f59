"""One module per family of benchmark datasets; `verity.bench.datasets` names them all."""
