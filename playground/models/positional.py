"""Positional encodings: sinusoidal and learned (added to the embeddings), RoPE and ALiBi
(applied inside attention), or none."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from playground.errors import PlaygroundError
from playground.models.base import lookup


def sinusoidal_table(n_positions: int, d_model: int, base: float = 10000.0, start: int = 0) -> Tensor:
    """Vaswani et al. 2017: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(same). [P, D]
    for p = 0 .. P - 1 (rows start .. P - 1 only when ``start`` > 0: [P - start, D])."""
    if d_model % 2:
        raise ValueError("sinusoidal encoding needs an even d_model")
    pos = torch.arange(start, n_positions, dtype=torch.float64)[:, None]  # [P, 1]
    freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # [D/2]
    angle = pos * freq  # [P, D/2]
    table = torch.empty(pos.shape[0], d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table.float()


def sinusoidal_shift(delta: int, d_model: int, base: float = 10000.0) -> Tensor:
    """Block-diagonal rotation R(delta) [D, D] with PE[p + delta] = R(delta) @ PE[p] for every p."""
    freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(delta * freq), torch.sin(delta * freq)
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    i = torch.arange(0, d_model, 2)
    # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
    R[i, i], R[i, i + 1], R[i + 1, i], R[i + 1, i + 1] = c, s, -s, c
    return R.float()


def _learned_table(module: nn.Module, n_positions: int, d_model: int) -> None:
    """A trained [P, D] table, N(0, 0.02) at the start."""
    module.weight = nn.Parameter(torch.zeros(n_positions, d_model))
    nn.init.normal_(module.weight, std=0.02)


def _sinusoidal_table(module: nn.Module, n_positions: int, d_model: int) -> None:
    """A fixed [P, D] table (a buffer, not saved)."""
    module.register_buffer("weight", sinusoidal_table(n_positions, d_model), persistent=False)


ADDITIVE_TABLES: dict[str, Callable[[nn.Module, int, int], None]] = {
    "sinusoidal": _sinusoidal_table,
    "learned": _learned_table,
}
ADDITIVE = tuple(ADDITIVE_TABLES)  # added to the token embeddings


class PositionalEmbedding(nn.Module):
    """Additive position vectors for positions [offset, offset + T): learned or sinusoidal."""

    def __init__(self, kind: str, n_positions: int, d_model: int) -> None:
        super().__init__()
        self.kind = kind
        self.n_positions = n_positions
        lookup(ADDITIVE_TABLES, kind, "additive positional encoding")(self, n_positions, d_model)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Redraw a learned table from ``generator`` (a sinusoidal table has nothing to draw)."""
        if isinstance(self.weight, nn.Parameter):
            nn.init.normal_(self.weight, std=0.02, generator=generator)

    def forward(self, T: int, offset: int = 0) -> Tensor:
        """[T, D] position vectors. Past the table a sinusoidal one is computed by its formula; a
        learned one has no trained vector there and refuses."""
        end = offset + T
        if end <= self.n_positions:
            return self.weight[offset:end]
        if self.kind != "sinusoidal":
            raise PlaygroundError(
                f"Learned positions stop at {self.n_positions}: the table has one trained vector per "
                f"position seen in training, and none for position {self.n_positions} or later "
                f"({end} positions asked). Sinusoidal, RoPE, ALiBi or no positions can go further.")
        return sinusoidal_table(end, self.weight.shape[1], start=offset).to(self.weight)  # [T, D]: these rows only


class Rotary(nn.Module):
    """Rotary position embedding (Su et al. 2021), half-split layout (GPT-NeoX / Llama)."""

    def __init__(self, head_dim: int, n_positions: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError("RoPE needs an even head dimension")
        self.head_dim, self.base = head_dim, base
        cos, sin = self.table(n_positions)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def table(self, n_positions: int, start: int = 0) -> tuple[Tensor, Tensor]:
        """(cos, sin) [P - start, hd] of positions start .. P - 1, computed in float64 then rounded."""
        inv_freq = self.base ** (-torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim)
        angle = torch.arange(start, n_positions, dtype=torch.float64)[:, None] * inv_freq  # [P, hd/2]
        angle = torch.cat([angle, angle], dim=-1)  # [P, hd]
        return angle.cos().float(), angle.sin().float()

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Rotate x [B, H, T, hd] as positions offset .. offset + T - 1 (any position: past the
        cached table the angles are computed)."""
        T = x.shape[-2]
        if offset + T > self.cos.shape[0]:  # past the table: only these T positions' angles
            cos, sin = (t.to(device=x.device, dtype=x.dtype) for t in self.table(offset + T, start=offset))
        else:
            cos = self.cos[offset : offset + T].to(x.dtype)  # [T, hd]
            sin = self.sin[offset : offset + T].to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def alibi_slopes(n_head: int) -> Tensor:
    """Press et al. 2022: geometric slopes 2^(-8/n), 2^(-16/n), ... (closest power of 2 rule). [H]"""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_head).is_integer():
        slopes = power_of_2(n_head)
    else:
        closest = 2 ** math.floor(math.log2(n_head))
        slopes = power_of_2(closest) + power_of_2(2 * closest)[0::2][: n_head - closest]
    return torch.tensor(slopes)


def alibi_bias(slopes: Tensor, q_pos: Tensor, k_pos: Tensor, causal: bool) -> Tensor:
    """Additive score bias [H, Q, K]: -slope * distance (|i - j| when bidirectional)."""
    dist = q_pos[:, None] - k_pos[None, :]  # [Q, K]
    dist = dist.clamp_min(0) if causal else dist.abs()
    return -slopes[:, None, None] * dist.to(slopes.dtype)


# ----------------------------------------------------------------------------------------
# One table from the config's pos_encoding name to what it adds to a model.


@dataclass
class Positions:
    """What a positional encoding adds to a model: a table added to the token embeddings, a
    rotation of queries and keys inside attention, or ALiBi's score bias (or nothing)."""

    embedding: PositionalEmbedding | None = None
    rotary: Rotary | None = None
    alibi: bool = False


PositionsFactory = Callable[[int, int, int], Positions]  # (n_positions, d_model, head_dim) -> Positions

POSITIONS: dict[str, PositionsFactory] = {
    "none": lambda n, d, hd: Positions(),
    "sinusoidal": lambda n, d, hd: Positions(embedding=PositionalEmbedding("sinusoidal", n, d)),
    "learned": lambda n, d, hd: Positions(embedding=PositionalEmbedding("learned", n, d)),
    "rope": lambda n, d, hd: Positions(rotary=Rotary(hd, n)),
    "alibi": lambda n, d, hd: Positions(alibi=True),
}
POS_ENCODINGS = tuple(POSITIONS)


def make_positions(kind: str, n_positions: int, d_model: int, n_head: int) -> Positions:
    """The parts of positional encoding ``kind`` (one of POS_ENCODINGS) for ``n_positions``."""
    return lookup(POSITIONS, kind, "positional encoding")(n_positions, d_model, d_model // n_head)
