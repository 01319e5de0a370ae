"""Tokenizers over Hugging Face `tokenizers`: building, inspecting, comparing, saving.

- `bpe`: TokenizerOptions, `build_tokenizer` / `iter_build` (with progress), `truncate_bpe`.
- `simple`: character- and word-level tokenizers (WordLevel over a fixed vocabulary).
- `vocab`: TokenizerInfo, readable tokens, vocabulary and merge tables.
- `walk`: the merge-by-merge walk that replays BPE encoding.
- `stats`: compression on held-out text, token counts, spans, comparisons, vocabulary sweeps.
- `store`: corpus -> built tokenizer -> workspace folder (tokenizer.json, meta.json, counts) and back.

Import the submodules; this package imports nothing heavy on its own.
"""
