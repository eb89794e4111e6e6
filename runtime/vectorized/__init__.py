"""DAPHNE's vectorized engine: running fused pipelines over row blocks."""
