"""Benchmarks: each module measures ours beside a peer in the same run and prints both."""
