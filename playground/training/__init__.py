"""Training: presets resolved into typed configs, one adapter per family, a generator engine.

- :mod:`playground.training.config`: TrainConfig (`[train]`), resolve_run(preset, overrides), preset_to_toml.
- :mod:`playground.training.data`: `[data]` configs per family, seeded batches, corpus loading.
- :mod:`playground.training.adapters`: ADAPTERS (gpt, vit, rnn_seq2seq, transformer_seq2seq):
  prepare / batch / loss / evaluate / preview; greedy_decode.
- :mod:`playground.training.schedules`: constant, cosine with warmup, inverse-sqrt (LambdaLR).
- :mod:`playground.training.device`: DeviceCaps (bf16 autocast, TF32, fused AdamW, pinning, compile).
- :mod:`playground.training.engine`: train(...) -> Iterator[TrainEvent], run_training, DistInfo.
- :mod:`playground.training.checkpoint`: bundles with optimizer state (safetensors + JSON), resume.
- :mod:`playground.training.runs`: workspace runs as tables (final metrics, curves, length buckets).
"""
