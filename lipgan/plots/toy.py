"""Real vs generated 2-D samples over the critic's value surface (as in Fig. 1a of the paper)."""

from __future__ import annotations

import numpy as np


def critic_surface(critic, lim: float = 3.0, n: int = 128):
    """The critic evaluated on an ``n x n`` grid over ``[-lim, lim]²``: (xs, ys, values[n, n])."""
    xs = np.linspace(-lim, lim, n, dtype=np.float32)
    grid = np.stack(np.meshgrid(xs, xs), axis=-1).reshape(-1, 2)
    values = np.asarray(critic(grid, training=False)).reshape(n, n)
    return xs, xs, values


def plot_samples(
    path, critic, real: np.ndarray, fake: np.ndarray, title: str = "", lim: float = 3.0
):
    """Write a PNG: critic contour, real points (orange) and generated points (green)."""
    from lipgan.plots import pyplot

    plt = pyplot()

    xs, ys, values = critic_surface(critic, lim)
    fig, ax = plt.subplots(figsize=(5, 5), dpi=100)
    contour = ax.contourf(xs, ys, values, levels=20, cmap="viridis", alpha=0.8)
    fig.colorbar(contour, ax=ax, fraction=0.046, pad=0.04, label="critic D(x)")
    ax.scatter(real[:, 0], real[:, 1], s=2, c="tab:orange", label="real", alpha=0.6)
    ax.scatter(fake[:, 0], fake[:, 1], s=2, c="lime", label="generated", alpha=0.6)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.legend(loc="upper right", markerscale=4)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
