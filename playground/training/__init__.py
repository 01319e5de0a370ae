"""Training: presets resolved into typed configs, the adapter contract families implement, a generator engine.

- :mod:`playground.training.config`: TrainConfig (`[train]`), `[model]` value checks, preset_to_toml.
- :mod:`playground.training.spec`: resolve_run(preset, overrides) -> RunSpec, through the family registry.
- :mod:`playground.training.data`: `[data]` configs per family, seeded batches, corpus loading.
- :mod:`playground.training.adapters`: FamilyAdapter, what the engine asks of a family
  (prepare / batch / loss / evaluate / preview); each family's own lives in playground/families/.
- :mod:`playground.training.schedules`: constant, cosine with warmup, inverse-sqrt (LambdaLR).
- :mod:`playground.training.device`: DeviceCaps (bf16 autocast, TF32, fused AdamW, pinning, compile).
- :mod:`playground.training.engine`: train(...) -> Iterator[TrainEvent], run_training, DistInfo.
- :mod:`playground.training.checkpoint`: bundles with optimizer state (safetensors + JSON), resume.
- :mod:`playground.training.runs`: workspace runs as tables (final metrics, curves, length buckets).
"""
