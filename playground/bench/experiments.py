"""`python -m playground bench experiments`: the batched permutation experiment beside the per-input one."""
from playground.cli.analyze_experiment import register_bench as register

__all__ = ["register"]
