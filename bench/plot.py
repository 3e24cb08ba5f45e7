"""Line charts drawn as SVG by hand: a benchmark's curve for docs/, with no plotting library."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 760, 330


def svg(title: str, panels: Sequence[tuple[Panel, list[Series]]], *, footer: str) -> str:
    """Return a whole SVG document: ``title`` on top, the panels, ``footer`` below."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
    ]
    for panel, series in panels:
        parts += panel.draw(series)
    parts.append(
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" fill="#555">{footer}</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    values: list[float]
    colour: str


@dataclass(frozen=True, slots=True)
class Panel:
    """One chart of the plot: its first series gets the ±10 % band of its first value."""

    left: float
    top: float
    title: str
    width: float = 300
    height: float = 220

    def draw(self, series: list[Series]) -> list[str]:
        """Return the SVG elements of the chart."""
        first = series[0].values[0]
        band = (first * 0.9, first * 1.1)
        every = [v for s in series for v in s.values]
        low, high = min(*every, band[0]) * 0.97, max(*every, band[1]) * 1.03
        y = self._scale(low, high)
        out = [
            f'<text x="{self.left + self.width / 2}" y="{self.top - 10}" '
            f'text-anchor="middle">{self.title}</text>',
            f'<rect x="{self.left}" y="{self.top}" width="{self.width}" '
            f'height="{self.height}" fill="none" stroke="#999"/>',
        ]
        for v in band:
            out.append(
                f'<line x1="{self.left}" x2="{self.left + self.width}" y1="{y(v):.1f}" '
                f'y2="{y(v):.1f}" stroke="#888" stroke-dasharray="5,4"/>'
            )
        for v in (low, (low + high) / 2, high):
            out.append(
                f'<text x="{self.left - 4}" y="{y(v) + 4:.1f}" text-anchor="end" '
                f'font-size="10">{v:,.0f}</text>'
            )
        for i in range(len(series[0].values)):
            out.append(
                f'<text x="{self._x(i, series):.1f}" y="{self.top + self.height + 14}" '
                f'text-anchor="middle" font-size="10">{i + 1}</text>'
            )
        for n, line in enumerate(series):
            out += self._line(line, series, y)
            if len(series) > 1:
                out.append(
                    f'<text x="{self.left + 8}" y="{self.top + 16 + 14 * n}" '
                    f'fill="{line.colour}" font-size="11">{line.label}</text>'
                )
        return out

    def _x(self, i: int, series: list[Series]) -> float:
        return self.left + (i + 0.5) * self.width / len(series[0].values)

    def _scale(self, low: float, high: float) -> Callable[[float], float]:
        return lambda v: self.top + self.height - (v - low) / (high - low) * self.height

    def _line(self, line: Series, series: list[Series], y: Callable[[float], float]) -> list[str]:
        at = [(self._x(i, series), y(v)) for i, v in enumerate(line.values)]
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in at)
        out = [f'<polyline points="{points}" fill="none" stroke="{line.colour}" stroke-width="2"/>']
        for (px, py), v in zip(at, line.values, strict=True):
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{line.colour}"/>')
            out.append(
                f'<text x="{px:.1f}" y="{py - 7:.1f}" text-anchor="middle" '
                f'font-size="9">{v:,.1f}</text>'
            )
        return out
