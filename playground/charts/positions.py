"""Chart of a checkpoint's loss at each position, out past the context it was trained on."""
from __future__ import annotations

import altair as alt

from playground.analysis.length import PositionLoss
from playground.charts.layout import GENERATE
from playground.charts.reproduce import claim_chart
from playground.reproduce.base import ChartSpec


def position_loss_chart(result: PositionLoss, smooth: int = 4, width: int = GENERATE) -> alt.LayerChart | alt.Chart:
    """Loss against position (means over `smooth` positions), a dashed rule at block_size: drawn
    like the position-extrapolation claim's chart."""
    spec = ChartSpec(x_title="position", y_title="loss (nats per token)", rule=result.trained,
                     rule_label=f"trained context: block_size = {result.trained}")
    title = f"Loss per position, {result.positions} positions ({result.positions // result.trained}x the trained context)"
    return claim_chart(result.frame(smooth), spec, title, width)
