"""Pretrained Hugging Face checkpoints converted into the playground's own families (not wrapped).

:func:`~playground.pretrained.importer.import_pretrained` is what the CLI's ``import`` and My
space's import box call; each family keeps its own conversion (``families/<name>/hf_import.py``).
"""
