"""Benchmarks: the interpreter beside hand-written Temporal workflows doing the same work."""
