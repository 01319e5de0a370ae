"""Transformer Playground: from raw text to a tokenizer, a trained model, samples and an honest look at attention."""

__version__ = "0.1.0"
