"""The benchmark harness: datasets with the papers' label mappings, runs, metrics, reports."""
