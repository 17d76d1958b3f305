"""FID's own network: the 2015 Inception graph, run from TensorFlow 2 as the original GraphDef.

Every published FID (Heusel et al. 2017) and Inception Score (Salimans et al. 2016) comes from
one network: ``classify_image_graph_def.pb`` of ``inception-2015-12-05.tgz``. TTUR's ``fid.py``
(github.com/bioinf-jku/TTUR) imports that GraphDef and feeds ``ExpandDims:0`` so that the
graph's own ``ResizeBilinear`` (TF1's, corners not aligned) takes any image size to 299x299, then
``Sub``/``Mul`` map [0, 255] to [-1, 1]; FID reads ``pool_3:0`` (``[n, 1, 1, 2048]``). pytorch-fid,
torch-fidelity and clean-fid run ports of the same weights. Here the original graph is imported
with ``tf.graph_util.import_graph_def`` into a graph of its own and run by a
``tf.compat.v1.Session``, as TTUR runs it, so the network is the published one, not a port. (Not
inside ``tf.compat.v1.wrap_function``, as TF-GAN wraps its frozen graphs: TF2 functions refuse
this graph's batch-norm op, see :func:`load_network`.)

The graph was exported for batch 1: ``pool_3/_reshape`` reshapes to the constant ``[1, 2048]``
before the classifier, so the graph's own ``softmax/logits`` fail on a batch. TTUR patches the
static shapes of every tensor (batch 1 -> None); here the shapes of the imported graph are
inferred from the ``[None, None, None, 3]`` input fed to it, so that patch is not needed, and
the 1008 logits are rebuilt
from ``pool_3`` with the graph's own weights, as OpenAI's Inception Score code does
(github.com/openai/improved-gan, ``inception_score/model.py``: ``softmax/logits/MatMul``'s
weight, **without** the bias — torch-fidelity calls these ``logits_unbiased`` and computes its IS
on them). ``logits_bias=True`` adds the bias (the graph's ``softmax/logits``).

Resizing (``resize=``):

* ``"tf_graph"`` (default): the graph's own bilinear resize, as TTUR, TF-GAN, mimicry and
  StudioGAN's TF rows and clean-fid's ``legacy_tensorflow`` mode compute FID;
* ``"pil_bicubic"``: clean-fid's ``clean`` mode (``cleanfid/resize.py``, ``make_resizer("PIL",
  False, "bicubic", (299, 299))``): each channel of the uint8 image resized as a float32 PIL
  image with bicubic filtering; the graph's resize is then the identity.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lipgan.metrics.weights import WeightsError, weights_path

INPUT = "ExpandDims:0"
POOL = "pool_3:0"
RESIZE = "ResizeBilinear"
MATMUL = "softmax/logits/MatMul"
LOGITS = "softmax/logits"
RESIZES = ("tf_graph", "pil_bicubic")


@dataclass(frozen=True)
class Network:
    """The imported graph: ``run(images)`` takes ``[n, h, w, 3]`` float32 in [0, 255] and returns
    numpy ``pool3 [n, C]``, ``logits [n, K]`` (no bias) and the bias ``[K]``."""

    run: object
    image_size: tuple[int, int]
    path: str


def _node(graph_def, name: str):
    return next((n for n in graph_def.node if n.name == name), None)


def _resize_size(graph_def) -> tuple[int, int]:
    """The constant output size of the graph's ``ResizeBilinear`` (299x299 in the real graph)."""
    import tensorflow as tf

    resize = _node(graph_def, RESIZE)
    size = _node(graph_def, resize.input[1].split(":")[0]) if resize else None
    if size is None or size.op != "Const":
        raise WeightsError(f"the graph has no {RESIZE} to a constant size")
    height, width = tf.make_ndarray(size.attr["value"].tensor).tolist()
    return int(height), int(width)


def _read_graph_def(path: str):
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef()
    try:
        graph_def.ParseFromString(Path(path).read_bytes())
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and OSError alike
        raise WeightsError(f"{path} is not a TensorFlow GraphDef ({exc})") from None
    missing = [
        n for n in ("ExpandDims", "pool_3", RESIZE, MATMUL, LOGITS) if not _node(graph_def, n)
    ]
    if missing:
        raise WeightsError(f"{path} is not the 2015 Inception graph: no {', '.join(missing)} node")
    return graph_def


@functools.lru_cache(maxsize=2)
def load_network(path: str) -> Network:
    """Import the GraphDef at ``path`` once per process into its own graph and session.

    A ``tf.compat.v1.Session``, not ``tf.compat.v1.wrap_function``: the 2015 graph's batch norms
    are ``BatchNormWithGlobalNormalization``, an op removed at GraphDef version 9. A graph that
    imports the file keeps the file's old producer version, so a session over it runs them (as
    TTUR's did); a TF2 function runs at the current version and refuses them ("Op
    BatchNormWithGlobalNormalization is not available in GraphDef version 2474", TF 2.21).
    """
    import tensorflow as tf

    graph_def = _read_graph_def(path)
    graph = tf.Graph()
    with graph.as_default():
        images = tf.compat.v1.placeholder(tf.float32, [None, None, None, 3], name="images")
        pool3, matmul, logits = tf.graph_util.import_graph_def(
            graph_def,
            input_map={INPUT: images},
            return_elements=[POOL, MATMUL, LOGITS],
            name="inception",
        )
        weights = matmul.inputs[1]
        bias = next(t for t in logits.inputs if t.name != matmul.outputs[0].name)
        # pool_3 is [n, 1, 1, C]; the graph's own pool_3/_reshape is to [1, C] (batch 1 only)
        pool3 = tf.reshape(pool3, [-1, weights.shape[0]])
        unbiased = tf.matmul(pool3, weights)
    session = tf.compat.v1.Session(graph=graph)

    def run(batch):
        return session.run([pool3, unbiased, bias], {images: batch})

    return Network(run=run, image_size=_resize_size(graph_def), path=path)


# -- inputs --------------------------------------------------------------------------------------
def to_pixels(images, value_range=(-1.0, 1.0), quantize: bool = True) -> np.ndarray:
    """``[n, h, w, 3]`` float32 pixel values in [0, 255] from images of any of lipgan's forms.

    Args:
        images: ``[n, h, w]``, ``[n, h, w, 1]`` (grayscale, repeated to 3 channels) or
            ``[n, h, w, 3]``. uint8 arrays are pixel values already.
        value_range: the range of float ``images``: ``(-1, 1)`` for lipgan's generators and data
            (the default) or ``(0, 255)``. Values outside it are an error, not clipped, since they
            mean the range was misstated.
        quantize: round to whole pixel values (as saving a PNG does, and as clean-fid, mimicry and
            StudioGAN do to generated images before scoring).
    """
    x = np.asarray(images)
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4 or x.shape[-1] not in (1, 3) or min(x.shape[:3]) < 1:
        raise ValueError(f"images must be [n, h, w, 1 or 3] (or [n, h, w]), got shape {x.shape}")
    if x.dtype == np.uint8:
        x = x.astype(np.float32)
    elif np.issubdtype(x.dtype, np.floating):
        low, high = (float(v) for v in value_range)
        lowest, highest = float(x.min()), float(x.max())
        slack = 1e-3 * (high - low)
        if not (np.isfinite(lowest) and np.isfinite(highest)) or (
            lowest < low - slack or highest > high + slack
        ):
            raise ValueError(
                f"images span [{lowest:.4g}, {highest:.4g}], outside their stated value_range "
                f"({low:g}, {high:g}); pass value_range=(0, 255) for pixel values"
            )
        x = np.clip((x.astype(np.float32) - low) * (255.0 / (high - low)), 0.0, 255.0)
    else:
        raise ValueError(f"images must be uint8 or float, got {x.dtype}")
    if quantize:
        x = np.rint(x)
    if x.shape[-1] == 1:
        x = np.repeat(x, 3, axis=-1)
    return x.astype(np.float32)


def pil_bicubic(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """clean-fid's ``clean`` resize: each channel as a float32 (mode ``F``) PIL image, bicubic.

    ``pixels`` ``[n, h, w, c]`` float32 in [0, 255]; returns ``[n, size[0], size[1], c]``.
    """
    from PIL import Image

    height, width = size
    if pixels.shape[1:3] == (height, width):
        return pixels
    out = np.empty((len(pixels), height, width, pixels.shape[-1]), np.float32)
    for i, image in enumerate(pixels):
        for c in range(pixels.shape[-1]):
            channel = Image.fromarray(np.ascontiguousarray(image[..., c], np.float32), mode="F")
            out[i, ..., c] = np.asarray(channel.resize((width, height), Image.BICUBIC))
    return out


# -- features ------------------------------------------------------------------------------------
def inception_features(
    images,
    batch_size: int = 50,
    resize: str = "tf_graph",
    value_range=(-1.0, 1.0),
    quantize: bool = True,
    logits_bias: bool = False,
    path: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """FID's features and IS's logits of ``images`` from the 2015 Inception graph.

    Args:
        images: see :func:`to_pixels`: any size, grayscale or RGB, uint8 or float in
            ``value_range`` (lipgan's [-1, 1] by default).
        batch_size: images per call of the network; the result does not depend on it.
        resize: ``"tf_graph"`` (the graph's own bilinear resize: TTUR, TF-GAN, the anchor papers)
            or ``"pil_bicubic"`` (clean-fid's ``clean`` mode).
        logits_bias: False gives OpenAI's Inception Score logits (no bias), True the graph's
            ``softmax/logits``.
        path: the GraphDef file; default :func:`lipgan.metrics.weights.weights_path` (a local
            copy, the cache, or a download on first use).

    Returns:
        ``pool3`` ``[n, 2048]`` and ``logits`` ``[n, 1008]``, float64.
    """
    if resize not in RESIZES:
        raise ValueError(f"resize must be one of {', '.join(RESIZES)}, got {resize!r}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    network = load_network(str(path or weights_path()))
    images = images if hasattr(images, "shape") else np.asarray(images)
    if images.ndim not in (3, 4) or len(images) < 1:
        raise ValueError(f"images must be [n, h, w, 1 or 3] (or [n, h, w]), got {images.shape}")
    pools, logits = [], []
    for start in range(0, len(images), int(batch_size)):  # converted a batch at a time: memory
        batch = to_pixels(images[start : start + int(batch_size)], value_range, quantize)
        if resize == "pil_bicubic":
            batch = pil_bicubic(batch, network.image_size)
        pool3, unbiased, bias = network.run(batch)
        pools.append(pool3)
        logits.append(unbiased + bias if logits_bias else unbiased)
    return np.concatenate(pools).astype(np.float64), np.concatenate(logits).astype(np.float64)
