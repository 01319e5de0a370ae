"""Model families (GPT, ViT, RNN seq2seq, Transformer seq2seq) and the attention you can read
and replace. Dispatch through :mod:`playground.families`."""
