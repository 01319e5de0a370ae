"""How big a GPT is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from dataclasses import replace

from playground.families.layer_sizes import (
    TransformerSizes,
    attention,
    d_ff,
    ffn,
    final_norm,
    norm,
    positions,
    transformer_layer_floats,
)
from playground.models.gpt import GPTConfig


def kv_width(c: GPTConfig) -> int:
    """Width of one layer's keys (and of its values): n_kv_heads x head size (d_model for MHA)."""
    return c.kv_heads * (c.d_model // c.n_head)


def block_ffn(c: GPTConfig) -> int:
    """One block's feed-forward parameters: a dense FFN, or E experts and the router [E, D]."""
    dense = ffn(c.d_model, d_ff(c), c.ffn, c.bias)
    return c.ffn_experts * dense + c.d_model * c.ffn_experts if c.moe else dense


def idle_experts(c: GPTConfig) -> int:
    """Parameters of the experts a token is not sent to (E - top_k per layer; 0 without experts)."""
    return c.n_layer * (c.ffn_experts - c.ffn_top_k) * ffn(c.d_model, d_ff(c), c.ffn, c.bias) if c.moe else 0


class GPTSizes(TransformerSizes):
    """Token embedding (tied with the output head unless tie_embeddings is off), positions,
    n_layer blocks; sequences of block_size. Grouped-query attention has smaller key/value
    projections and cache; a mixture of experts holds E FFNs but runs top_k of them per token."""

    seq_fields = ("block_size",)

    def parameter_parts(self, config: GPTConfig) -> dict[str, int]:
        c = config
        n = c.n_layer
        return {
            "token embedding": c.vocab_size * c.d_model,
            "output head": 0 if c.tie_embeddings else c.vocab_size * c.d_model,  # an untied lm_head (no bias)
            "positions": positions(c, c.block_size),
            "attention": n * attention(c.d_model, c.bias, kv_width(c)),
            "feed-forward": n * block_ffn(c),
            "norms": n * 2 * norm(c.norm, c.d_model, c.bias) + final_norm(c),
        }

    def train_flops_parts(self, config: GPTConfig) -> dict[str, int]:
        """PaLM's estimate (Chowdhery et al. 2022, appendix B), as nanoGPT's estimate_mfu uses it,
        in its two terms: 6 N for the matrices' forward and backward plus 12 L d T for QKᵀ and AV
        over a full block_size context. N leaves out what no matrix product touches: the position
        table and, when untied, the token embedding (a lookup), and the experts a token is not sent
        to (E - top_k per layer); a sliding window W shortens the context the scores span to W."""
        c = config
        lookups = positions(c, c.block_size) + (0 if c.tie_embeddings else c.vocab_size * c.d_model)
        n_matmul = self.count_parameters(c) - lookups - idle_experts(c)
        span = min(c.attn_window or c.block_size, c.block_size)
        return {"weights": 6 * n_matmul, "attention scores": 12 * c.n_layer * c.d_model * span}

    def train_flops_per_unit(self, config: GPTConfig) -> int:
        """Training FLOPs per token: the sum of :meth:`train_flops_parts`."""
        return sum(self.train_flops_parts(config).values())

    def sequence_length(self, config: GPTConfig, seq_len: int | None = None) -> int:
        return int(config.block_size)

    def activation_floats(self, config: GPTConfig, batch: int, seq: int) -> int:
        """Floats kept for backward; a mixture of experts keeps top_k FFNs' hidden activations
        per token (and the router's E scores) instead of one."""
        c = config
        layer = transformer_layer_floats(c, seq, 1)
        if c.moe:
            fc_out = 2 * d_ff(c) if c.ffn == "swiglu" else d_ff(c)
            layer += (c.ffn_top_k - 1) * 2 * fc_out + 2 * c.ffn_experts
        return batch * seq * (c.n_layer * layer + 2 * c.d_model + 4 * c.vocab_size)

    def notes(self, config: GPTConfig) -> list[str]:
        """What the attention kinds and experts change: the KV cache next to multi-head attention's,
        the keys a windowed query sees, the share of the weights a token runs through."""
        c = config
        out = []
        if c.kv_heads != c.n_head:
            kib = self.kv_cache_floats(c) * 4 / 1024  # float32
            out.append(f"KV cache {kib:.0f} KiB per sequence of {c.block_size} tokens, {c.kv_heads}/{c.n_head} "
                       f"of multi-head attention's ({c.kv_heads} key/value head{'s' * (c.kv_heads > 1)} for {c.n_head} query heads).")
        if c.attn_window and c.attn_window < c.block_size:
            out.append(f"Each token attends to at most {c.attn_window} tokens (itself and {c.attn_window - 1} before).")
        if c.moe:
            total = self.count_parameters(c)
            out.append(f"{c.ffn_experts} experts per FFN, {c.ffn_top_k} per token: each token uses "
                       f"{(total - idle_experts(c)) / 1e6:.2f}M of the {total / 1e6:.2f}M parameters.")
        return out

    def kv_cache_floats(self, config: GPTConfig, batch: int = 1, length: int | None = None,
                        windowed: bool = False) -> int:
        """Floats of a KV cache for ``batch`` sequences of ``length`` tokens (block_size when None):
        keys and values of every layer, n_kv_heads heads each (n_kv_heads / n_head of MHA's).
        ``windowed`` with a sliding window W: only the last W positions are kept."""
        c = config
        kept = length or c.block_size
        if windowed and c.attn_window:
            kept = min(kept, c.attn_window)
        return 2 * c.n_layer * batch * kept * kv_width(c)

    def kv_cache_table(self, config: GPTConfig, length: int, batch: int = 1, element_size: int = 4) -> list[dict]:
        """Bytes of the KV cache after ``length`` tokens, one row per way of keeping it: every
        position with a key/value head per query head (multi-head), with this model's key/value
        heads (grouped-query), and the last attn_window positions only (a windowed cache).
        Rows: {"cache", "positions", "kv_heads", "bytes"}; the last row is what this model uses."""
        c = config
        mha = replace(c, n_kv_heads=0)
        rows = [{"cache": "full, multi-head", "positions": length, "kv_heads": c.n_head,
                 "bytes": self.kv_cache_floats(mha, batch, length) * element_size}]
        if c.kv_heads != c.n_head:
            heads = f"{c.kv_heads} key/value head{'s' * (c.kv_heads > 1)}"
            rows.append({"cache": f"full, {heads} (grouped-query)", "positions": length,
                         "kv_heads": c.kv_heads, "bytes": self.kv_cache_floats(c, batch, length) * element_size})
        if c.attn_window and c.attn_window < length:
            rows.append({"cache": f"windowed, last {c.attn_window} positions", "positions": c.attn_window,
                         "kv_heads": c.kv_heads,
                         "bytes": self.kv_cache_floats(c, batch, length, windowed=True) * element_size})
        return rows


def kv_cache_note(config: GPTConfig, length: int, batch: int = 1, element_size: int = 4) -> str:
    """One line for a run's stats: the KV cache this model keeps after ``length`` positions and,
    for grouped-query or windowed attention, what a full multi-head cache would take."""
    rows = GPTSizes().kv_cache_table(config, length, batch, element_size)
    used, full = rows[-1], rows[0]
    text = f"KV cache {_kib(used['bytes'])} for {length} positions"
    if used is full:
        return text
    return f"{text} ({used['cache']}; {_kib(full['bytes'])} {full['cache']}, {full['bytes'] / used['bytes']:.0f}x more)"


def _kib(n_bytes: int) -> str:
    return f"{n_bytes / 1024:,.1f} KiB"
