"""Real vs generated 2-D samples over the critic's value surface (as in Fig. 1a of the paper)."""

from __future__ import annotations

import numpy as np

#: Margin around the data's extent, as a fraction of its half-width.
MARGIN = 0.15
#: Where the legend of :func:`draw_samples` hangs, in axes units: under the x label.
LEGEND_BELOW = -0.12


def critic_surface(critic, lim: float = 3.0, n: int = 128, center=(0.0, 0.0)):
    """The critic on an ``n x n`` grid over ``center ± lim``: (xs, ys, values[n, n])."""
    xs = np.linspace(center[0] - lim, center[0] + lim, n, dtype=np.float32)
    ys = np.linspace(center[1] - lim, center[1] + lim, n, dtype=np.float32)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    values = np.asarray(critic(grid, training=False)).reshape(n, n)
    return xs, ys, values


def extent(real: np.ndarray, fake: np.ndarray) -> tuple[tuple[float, float], float]:
    """Centre and half-width of a square view that holds the data (a fixed [-3, 3]² lost
    most points of data with std 10). Taken from the real points (the generated ones when there
    are none), so a diverged generator does not shrink the data to a dot."""
    points = real if len(real) else fake
    if not len(points):
        return (0.0, 0.0), 3.0
    lo, hi = np.min(points, axis=0), np.max(points, axis=0)
    center = (lo + hi) / 2
    half = max(float(np.max(hi - lo)) / 2, 1e-3) * (1 + MARGIN)
    return (float(center[0]), float(center[1])), half


def title_size(title: str, width_chars: int = 48) -> float:
    """A font size at which ``title`` fits the 5-inch figure (about 48 characters at 10 pt)."""
    return 10.0 if len(title) <= width_chars else max(5.0, 10.0 * width_chars / len(title))


def draw_samples(ax, critic, real: np.ndarray, fake: np.ndarray, lim: float | None = None):
    """Contour, generated points, then the real points on top (smaller, translucent), so both
    stay visible where they overlap; the view is the data's :func:`extent` unless ``lim``.

    Each point has an edge of the opposite lightness (generated: light fill, dark edge; real:
    dark fill, light edge): the contour runs from dark to light, and a point without an edge
    vanished into the part of it that matched its colour (orange real points on the yellow
    peaks where they lie). With no real points (a run whose data was not stored) the legend
    says so rather than leaving the reader to look for them.
    """
    center, half = ((0.0, 0.0), lim) if lim is not None else extent(real, fake)
    xs, ys, values = critic_surface(critic, half, center=center)
    contour = ax.contourf(xs, ys, values, levels=20, cmap="viridis", alpha=0.8)
    ax.scatter(
        fake[:, 0], fake[:, 1], s=9, c="lime", edgecolors="black", linewidths=0.3,
        label="generated", alpha=0.8,
    )  # fmt: skip
    ax.scatter(
        real[:, 0], real[:, 1], s=5, c="red", edgecolors="white", linewidths=0.3,
        label="real" if len(real) else "real: not available", alpha=0.8,
    )  # fmt: skip
    ax.set_xlim(center[0] - half, center[0] + half)
    ax.set_ylim(center[1] - half, center[1] + half)
    ax.set_aspect("equal")
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    # Below the axes, outside the data: inside, at any corner, it covered a mode of some set
    # (the ring's at (0.7, 0.7) under "upper right").
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, LEGEND_BELOW), ncols=2, markerscale=2,
        frameon=False,
    )  # fmt: skip
    return contour


def plot_samples(
    path, critic, real: np.ndarray, fake: np.ndarray, title: str = "", lim: float | None = None
):
    """Write a PNG: critic contour, generated points (green) and real points (orange) on top."""
    from lipgan.plots import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5, 5.4), dpi=100, layout="constrained")
    contour = draw_samples(ax, critic, real, fake, lim)
    fig.colorbar(contour, ax=ax, fraction=0.046, pad=0.04, label="critic D(x)")
    ax.set_title(title, fontsize=title_size(title))
    fig.savefig(path, format="png")
    plt.close(fig)
