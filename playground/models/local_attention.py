"""Attention options of the RNN decoder: Luong's local attention and See et al.'s coverage.

Local attention (Luong et al. 2015, §3.2) looks only at a window of 2D+1 source positions
around a centre p_t (positions count from 0 here):

- ``monotonic`` (local-m): p_t = t, the output step, clamped to the last real source token;
  inside the window the weights are the score's softmax, as in the paper.
- ``predictive`` (local-p): p_t = (S - 1) * sigmoid(v_p^T tanh(W_p s)), S the source's true
  (unpadded) length, so p_t lies on the real tokens; the weights are the score's softmax over
  the window times a Gaussian exp(-(j - p_t)^2 / (2 sigma^2)), sigma = D / 2. As in the paper
  they are not renormalised, so a row sums to at most 1.

Positions outside the window or on padding get weight exactly 0 (the maps show the band).

Coverage (See et al. 2017): c^t = sum_{t' < t} alpha^{t'} over the source, fed into the score.
Additive: e_j = v^T tanh(W_s s + W_h h_j + w_c c_j) (their formula; w_c a vector of the
attention size). dot / general / scaled_dot have no hidden layer to put it in, so a learned
scalar adds w_c * c_j to the score (w_c starts at 0: the score is unchanged until training
moves it; a negative w_c steers away from covered words). uniform reads nothing, coverage
included. The coverage loss sum_j min(alpha_j^t, c_j^t) is computed by the model's forward.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from playground.models.attention import (
    AdditiveScore,
    ScoredAttention,
    UniformScore,
    masked_softmax,
)
from playground.models.hooks import needs_explicit, process_weights

LOCAL_KINDS = ("none", "monotonic", "predictive")


def window_weights(centre: Tensor, lengths: Tensor, n_keys: int, d: int, gaussian: bool) -> tuple[Tensor, Tensor]:
    """Luong's window around ``centre`` [B] (float positions) for sources of ``lengths`` [B].

    Returns (inside [B,K] bool: |j - p| <= d and j a real token, factor [B,K]: the Gaussian
    exp(-(j - p)^2 / (2 (d/2)^2)) when ``gaussian``, else 1).
    """
    j = torch.arange(n_keys, device=centre.device, dtype=centre.dtype)[None, :]  # [1,K]
    dist = j - centre[:, None]  # [B,K]
    inside = (dist.abs() <= d) & (j < lengths[:, None])  # [B,K]
    if not gaussian:
        return inside, torch.ones_like(dist)
    sigma = d / 2.0
    return inside, torch.exp(-dist.square() / (2.0 * sigma * sigma))  # [B,K]


class LocalCoverageAttention(ScoredAttention):
    """:class:`ScoredAttention` with a local window (``local``: none / monotonic / predictive,
    half-width ``d``) and optionally the coverage vector in the score (``coverage``).

    forward(query [B,Dq], keys, values [B,K,Dv], key_mask [B,K], step, coverage [B,K] or None)
    -> (context [B,Dv], alpha [B,K]); alpha is the final weight (zeros outside the window).
    """

    def __init__(self, score: nn.Module, query_dim: int, attn_dim: int, local: str = "none", d: int = 0,
                 coverage: bool = False) -> None:
        super().__init__(score)
        self.local, self.d = local, d
        if local == "predictive":
            self.W_p = nn.Linear(query_dim, attn_dim, bias=False)
            self.v_p = nn.Linear(attn_dim, 1, bias=False)
        self.w_c: nn.Parameter | None = None
        if coverage and isinstance(score, AdditiveScore):
            self.w_c = nn.Parameter(torch.zeros(attn_dim))  # inside the tanh, one weight per unit
        elif coverage and not isinstance(score, UniformScore):
            self.w_c = nn.Parameter(torch.zeros(1))  # a scalar added to the score

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """The coverage weight starts at 0 (the score as without coverage); W_p, v_p are Linears."""
        if self.w_c is not None:
            nn.init.zeros_(self.w_c)

    def centre(self, query: Tensor, lengths: Tensor, step: int) -> Tensor:
        """p_t [B] (float): the step clamped to the source (monotonic) or predicted from the query."""
        last = (lengths - 1).clamp_min(0).float()  # [B] float32 even under autocast: positions need the bits
        if self.local == "monotonic":
            return torch.clamp(torch.full_like(last, float(step)), max=last)
        return last * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query))).float()).squeeze(-1)  # [B]

    def scores(self, query: Tensor, keys: Tensor, coverage: Tensor | None) -> Tensor:
        """e [B,1,K] of the score, with the coverage term when there is one."""
        q = query[:, None, :]  # [B,1,Dq]
        if coverage is None or self.w_c is None:
            return self.score(q, keys)
        if isinstance(self.score, AdditiveScore):
            s = q @ self.score.W.weight[:, : self.score.query_dim].T  # [B,1,A]
            hidden = torch.tanh(s[:, :, None, :] + keys[:, None, :, :]
                                + coverage[:, None, :, None] * self.w_c)  # [B,1,K,A]
            return self.score.v(hidden).squeeze(-1)  # [B,1,K]
        return self.score(q, keys) + self.w_c * coverage[:, None, :]  # [B,1,K]

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, key_mask: Tensor | None,  # type: ignore[override]
                step: int = 0, coverage: Tensor | None = None) -> tuple[Tensor, Tensor]:
        B, K = values.shape[0], values.shape[1]
        mask = key_mask if key_mask is not None else values.new_ones(B, K, dtype=torch.bool)  # [B,K]
        scores = self.scores(query, keys, coverage)  # [B,1,K]
        factor = None
        if self.local != "none":
            lengths = mask.sum(1)  # [B] true source lengths (padding on the right)
            inside, factor = window_weights(self.centre(query, lengths, step), lengths, K, self.d,
                                            gaussian=self.local == "predictive")
            mask = mask & inside
        alpha = masked_softmax(scores, mask[:, None, :])  # [B,1,K]
        if factor is not None:
            alpha = alpha * factor[:, None, :]
        if needs_explicit(self):
            alpha = process_weights(self, alpha[:, None], step)[:, 0]  # via [B,1,1,K]
        context = (alpha @ values)[:, 0]  # [B,Dv]
        return context, alpha[:, 0]


def coverage_step_loss(alpha: Tensor, coverage: Tensor) -> Tensor:
    """See et al.'s coverage loss of one step: sum_j min(alpha_j, c_j) -> [B] (alpha, c [B,K])."""
    return torch.minimum(alpha, coverage).sum(-1)
