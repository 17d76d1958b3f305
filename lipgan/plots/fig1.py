"""The Fig. 1 panels, drawn from the JSON that :mod:`lipgan.reproduce.fig1` writes (not from models),
so a figure can be redrawn from the shipped numbers alone."""

from __future__ import annotations

import numpy as np

TOY_LABELS = {"8gaussians": "8 Gaussians", "25gaussians": "25 Gaussians", "swissroll": "Swiss Roll"}
#: The generated points of Fig. 1a: the real batch plus Gaussian noise (a fixed generator).
FAKE_LABEL = "generated: real + N(0, 1)"
ROW_LABELS = {
    "weight_clip": "Weight clipping",
    "gradient_penalty": "Gradient penalty",
    "bjorck": "Björck + MaxMin",
    "aol": "AOL + MaxMin",
}


#: The banner of a figure from ``lipgan reproduce fig1 --quick`` (``result['quick']``).
QUICK_BANNER = (
    "QUICK (smoke-test budget, --quick): fewer critic steps, a coarser grid, narrower 1b nets; "
    "not the paper's settings"
)


def _pyplot():
    from lipgan.plots import pyplot

    return pyplot()


def _title(fig, result: dict, title: str) -> None:
    """The figure's title, under :data:`QUICK_BANNER` in red for a ``--quick`` result."""
    if result.get("quick"):
        fig.suptitle(f"{QUICK_BANNER}\n{title}", color="firebrick", fontweight="bold")
    else:
        fig.suptitle(title)


def plot_fig1a(result: dict, path) -> None:
    """Write :func:`draw_fig1a`'s figure to ``path``."""
    fig = draw_fig1a(result)
    fig.savefig(path)
    _pyplot().close(fig)


def draw_fig1a(result: dict):
    """Value surfaces, one row per constraint in the result (clipping, GP, then the constructions),
    each with its colour bar: a critic is defined up to a constant and its scale differs by
    constraint, so each panel's levels are its own."""
    plt = _pyplot()
    s = result["settings"]
    sets = list(result["fig1a"])
    kinds = list(result["fig1a"][sets[0]])
    fig, axes = plt.subplots(
        len(kinds),
        len(sets),
        figsize=(3.8 * len(sets), 3.2 * len(kinds) + 0.6),
        dpi=64,
        squeeze=False,
        layout="constrained",
    )
    fig.get_layout_engine().set(w_pad=0.1)  # room for the row names at the left edge
    xs = np.linspace(-s["lim"], s["lim"], s["grid"])
    for col, toy_set in enumerate(sets):
        for row, kind in enumerate(kinds):
            panel = result["fig1a"][toy_set][kind]
            ax = axes[row][col]
            levels = ax.contour(
                xs, xs, np.asarray(panel["surface"]), levels=20, cmap="viridis", linewidths=0.8
            )
            bar = fig.colorbar(levels, ax=ax, fraction=0.05, pad=0.02)
            bar.ax.tick_params(labelsize=7)
            if col == len(sets) - 1:
                bar.set_label("critic value D(x)", fontsize=8)
            real, fake = np.asarray(panel["real"]), np.asarray(panel["fake"])
            ax.scatter(fake[:, 0], fake[:, 1], s=1, c="tab:green", alpha=0.4, label=FAKE_LABEL)
            ax.scatter(real[:, 0], real[:, 1], s=1, c="tab:orange", alpha=0.6, label="real")
            ax.set_xlim(-s["lim"], s["lim"])
            ax.set_ylim(-s["lim"], s["lim"])
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == len(kinds) - 1:
                ax.set_xlabel(TOY_LABELS.get(toy_set, toy_set))
            if col == 0:
                ax.set_ylabel(ROW_LABELS.get(kind, kind))
    _title(fig, result, "Fig. 1a: optimal-critic value surfaces")
    fig.legend(
        *axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
        markerscale=6, frameon=False,
    )  # fmt: skip
    return fig


def plot_fig1b(result: dict, path) -> None:
    """Write :func:`draw_fig1b`'s figure to ``path``."""
    fig = draw_fig1b(result)
    fig.savefig(path)
    _pyplot().close(fig)


def draw_fig1b(result: dict):
    """Per-layer gradient norms (log scale) and critic weight histograms, clipping c=0.01 vs GP."""
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    b = result["fig1b"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), dpi=80)
    for name, norms in b["layer_grad_norms"].items():
        label = (
            "Gradient penalty"
            if name == "gradient_penalty"
            else name.replace("weight_clip_c", "Weight clipping (c=") + ")"
        )
        axes[0].plot(np.arange(1, len(norms) + 1), norms, marker="o", ms=3, label=label)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("Discriminator layer")
    axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("Gradient norm (log scale)")
    axes[0].legend(fontsize=7)
    for ax, name, title in (
        (axes[1], "weight_clip_c0.01", "Weight clipping (c=0.01)"),
        (axes[2], "gradient_penalty", "Gradient penalty"),
    ):
        hist = b["weight_histograms"].get(name)
        if hist is None:
            ax.set_axis_off()
            continue
        edges = np.asarray(hist["edges"])
        ax.bar(edges[:-1], hist["counts"], width=np.diff(edges), align="edge", color="tab:blue")
        ax.set_title(title)
        ax.set_xlabel("Weights")
        ax.set_ylabel("weights per bin (count)")
    _title(fig, result, f"Fig. 1b: Swiss roll, {result['settings']['b_depth']}-layer critic")
    fig.tight_layout()
    return fig
