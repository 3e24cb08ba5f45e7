"""The overview's chart of the last days' spending: bars drawn as inline SVG on the server.

No script and no front-end build: the page carries the bars as ``<rect>`` elements, each
with a ``<title>`` a browser shows on hover, and the stylesheet colours them. A bar's
height is the day's cost when prices are set, else its tokens, against the tallest day.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.budget import format_cost
from bot.ops.cost import DayCost

WIDTH = 350
PLOT_HEIGHT = 100  # the tallest bar
TOP = 10  # room above the tallest bar
LABEL_BELOW = 18  # the day's label under its bar
BAR_WIDTH = 30
HEIGHT = TOP + PLOT_HEIGHT + LABEL_BELOW + 4


@dataclass(frozen=True, slots=True)
class Bar:
    """One day's bar: where it stands, its label, and what it says on hover."""

    x: float
    y: float
    height: float
    day: str  # YYYY-MM-DD
    label: str  # MM-DD, under the bar
    tokens: int
    cost_text: str


def bars(days: Sequence[DayCost], *, currency: str, by_cost: bool) -> list[Bar]:
    """Lay out one bar per day, oldest on the left, scaled to the tallest."""
    values = [day.spent.cost if by_cost else float(day.spent.tokens.total) for day in days]
    tallest = max(values, default=0.0) or 1.0
    step = WIDTH / max(len(days), 1)
    laid_out = []
    for index, (day, value) in enumerate(zip(days, values, strict=True)):
        height = PLOT_HEIGHT * value / tallest
        laid_out.append(
            Bar(
                x=index * step + (step - BAR_WIDTH) / 2,
                y=TOP + PLOT_HEIGHT - height,
                height=height,
                day=day.day.isoformat(),
                label=f"{day.day:%m-%d}",
                tokens=day.spent.tokens.total,
                cost_text=format_cost(day.spent.cost, currency, priced=day.spent.priced),
            )
        )
    return laid_out
