"""Sample grids for image GANs: one PNG (and one TensorBoard image) per evaluation.

Images come from generators with a tanh output, so they are in [-1, 1]; grids are uint8 so that the
same array goes to a PNG file and to ``tf.summary.image`` unchanged.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def to_uint8(images: np.ndarray) -> np.ndarray:
    """[-1, 1] floats -> [0, 255] uint8 (values outside the range are clipped)."""
    images = np.asarray(images, dtype=np.float32)
    return np.clip(np.round((images + 1.0) * 127.5), 0, 255).astype(np.uint8)


def grid(images: np.ndarray, cols: int | None = None, pad: int = 1) -> np.ndarray:
    """Tile ``[n, h, w, c]`` images in [-1, 1] into one uint8 ``[H, W, c]`` image, row by row.

    ``cols`` defaults to a near-square layout; cells are separated by ``pad`` black pixels.
    """
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[0] == 0:
        raise ValueError(f"grid expects a non-empty batch [n, h, w, c], got shape {images.shape}")
    n, h, w, c = images.shape
    cols = cols or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    out = np.zeros((rows * (h + pad) + pad, cols * (w + pad) + pad, c), dtype=np.uint8)
    for i, image in enumerate(to_uint8(images)):
        r, k = divmod(i, cols)
        top, left = pad + r * (h + pad), pad + k * (w + pad)
        out[top : top + h, left : left + w] = image
    return out


def save_grid(path, images: np.ndarray, cols: int | None = None, scale: int = 1):
    """Write ``images`` ([n, h, w, c] in [-1, 1]) as one PNG grid; ``scale`` repeats pixels (no blur).

    ``path`` may also be a binary file object (a PNG for TensorBoard in memory).
    """
    from lipgan.plots import pyplot

    plt = pyplot()

    tiled = grid(images, cols)
    if scale > 1:
        tiled = tiled.repeat(scale, axis=0).repeat(scale, axis=1)
    if isinstance(path, (str, Path)):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    if tiled.shape[-1] == 1:
        plt.imsave(path, tiled[..., 0], cmap="gray", vmin=0, vmax=255, format="png")
    else:
        plt.imsave(path, tiled, format="png")
    return path


def summary_grid(name: str, images: np.ndarray, step: int, cols: int | None = None) -> None:
    """Log the grid to the default TensorBoard writer (call inside ``writer.as_default()``)."""
    import tensorflow as tf

    tf.summary.image(name, grid(images, cols)[None], step=step)
