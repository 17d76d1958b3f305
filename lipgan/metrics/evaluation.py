"""Sample quality of a trained generator: the numbers behind ``lipgan eval`` and ``train.eval_every``.

The metrics are plugins (``lipgan_register_metrics``, :class:`lipgan.core.metric.Metric`): this
module draws the samples once and asks each metric that applies (or each one named) for its values.
The built-ins (``plugins/metrics.py``), by data:

* 2-D toy sets: exact W1 to real samples beside ``w1_floor`` (the W1 between two independent real
  samples of the same size: what a perfect generator scores), and for the Gaussian mixtures
  PacGAN's protocol: modes covered, high-quality fraction and the reverse KL of the mode histogram
  (:mod:`lipgan.metrics.toy`; PacGAN evaluates 2,500 samples, set ``train.eval_samples = 2500``);
* ``lipgan_digits``: Fréchet distance and KID in the feature space of the digits classifier that
  lipgan trains on the dataset and caches in its data dir;
* any image set: FID and KID on InceptionV3 features when ``inception_weights`` names a local file.

Every evaluation also reports the critic's own Wasserstein estimate on fresh real and generated
samples. Samples come from a fixed noise (``seed``) so that evaluations of one run are comparable;
real samples come from a separate stream of the input pipeline, never from the training iterator.
"""

from __future__ import annotations

import io

import numpy as np
import tensorflow as tf

from lipgan.core.callbacks import Sampler
from lipgan.core.errors import ConfigError
from lipgan.core.metric import EvalData

#: The counter of the noise stream for samples, so that it never meets the training noise.
SAMPLE_STREAM = 7
GENERATE_BATCH = 512


def generate(sampler: Sampler, n: int, seed: int) -> np.ndarray:
    """``n`` samples from a fixed noise (same ``seed`` ⇒ same samples).

    Args:
        sampler: the :class:`lipgan.core.callbacks.Sampler` (``trainer.sampler()``: the generator's
            EMA when ``train.ema_decay`` is on, else the generator).
        n: how many samples.
        seed: the noise's seed.

    Returns:
        A ``[n, *data_shape]`` float32 array: the chunks of :func:`generate_chunks`, joined.
    """
    return np.concatenate(list(generate_chunks(sampler, n, seed)))


#: Samples drawn (noise and outputs held in memory) at a time by :func:`generate_chunks`.
NOISE_CHUNK = 2**16


def generate_chunks(sampler: Sampler, n: int, seed: int):
    """:func:`generate`'s ``n`` samples as arrays of at most :data:`NOISE_CHUNK` examples, drawn
    one at a time: ``lipgan sample -n 10000000`` holds one chunk, not ten million samples.

    The first chunk's noise is ``stateless_normal([m, latent], seed=[seed, SAMPLE_STREAM])`` as it
    always was (samples of up to ``NOISE_CHUNK`` are unchanged); chunk ``j`` folds ``j`` into that
    seed, so the samples do not depend on how they are read.
    """
    generator = sampler.generator
    key = [seed, SAMPLE_STREAM]
    for j, start in enumerate(range(0, n, NOISE_CHUNK)):
        size = min(NOISE_CHUNK, n - start)
        chunk_key = key if j == 0 else tf.random.experimental.stateless_fold_in(key, j)
        z = tf.random.stateless_normal([size, *sampler.latent_shape], seed=chunk_key)
        out = [
            generator(z[i : i + GENERATE_BATCH], training=False)
            for i in range(0, size, GENERATE_BATCH)
        ]
        yield np.concatenate([np.asarray(o, np.float32) for o in out])


def real_samples(dataset, n: int, batch_size: int, seed: int) -> np.ndarray:
    """``n`` real examples from their own shuffled stream of the training data.

    Args:
        dataset: the ``(global_batch_size, seed) -> tf.data.Dataset`` factory (``trainer.data_factory``).
        n: how many examples.
        batch_size: the batch size to read them with.
        seed: the run's seed (the stream is seeded apart from the training one).

    Returns:
        A ``[n, *data_shape]`` array.
    """
    data = dataset(batch_size, seed + 2)
    out = np.concatenate([np.asarray(b) for b in data.take(-(-n // batch_size))])
    return out[:n]


def toy_set_of(dataset, data_shape: tuple) -> str | None:
    """The toy set name (``8gaussians``...) when training on 2-D lipgan toy data, else None.

    Args:
        dataset: the data factory.
        data_shape: the shape of one example.

    Returns:
        The toy set's name in :data:`lipgan.data.toy.SAMPLERS`, or None.
    """
    from lipgan.data.toy import SAMPLERS

    name = getattr(dataset, "dataset_name", "") or ""
    if tuple(data_shape) != (2,) or not name.startswith("lipgan_toy"):
        return None
    toy = name.split("/")[-1].split(":")[0]
    return toy if toy in SAMPLERS else None


def check_num_samples(
    dataset, data_shape: tuple, num_samples: int, what: str = "train.eval_samples"
) -> None:
    """Raise :class:`ConfigError` when ``num_samples`` is too few for the metrics of this data.

    Called before a run writes anything, so a periodic evaluation cannot fail only after the
    training and checkpointing that led up to it.

    Args:
        dataset: the data factory.
        data_shape: the shape of one example.
        num_samples: the samples an evaluation will draw.
        what: the setting's name in the message.

    Raises:
        ConfigError: too few samples for the toy metrics.
    """
    toy = toy_set_of(dataset, data_shape)
    if toy:
        from lipgan.metrics.toy import MIN_W1_POINTS

        if num_samples < MIN_W1_POINTS:
            raise ConfigError(
                f"{what}={num_samples} is too few for the toy metrics of {toy} (they need >= "
                f"{MIN_W1_POINTS} points; PacGAN's protocol uses 2500): raise it, or set "
                "train.eval_every=0"
            )


def critic_wasserstein(critic, real: np.ndarray, fake: np.ndarray) -> float:
    """The critic's gap mean D(real) − mean D(fake): a W1 estimate only for a 1-Lipschitz critic.

    Args:
        critic: the critic (``trainer.critic``).
        real: real examples.
        fake: generated examples.

    Returns:
        The gap as a float (docs/metrics.md says when it estimates W1).
    """
    scores = lambda x: np.asarray(critic(tf.convert_to_tensor(x), training=False), np.float64)  # noqa: E731
    return float(scores(real).mean() - scores(fake).mean())


#: Exact W1 (an n x n assignment) up to this many pairwise distance terms n²·d; sliced above.
EXACT_W1_MAX_TERMS = 2048 * 2048 * 64


def check_evaluate_samples(num_samples) -> None:
    """Refuse a sample count an evaluation cannot use.

    Args:
        num_samples: the requested count.

    Raises:
        ConfigError: not an integer, or below 2.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise ConfigError(f"num_samples={num_samples!r} is invalid: use an integer >= 2")
    if num_samples < 2:
        raise ConfigError(
            f"num_samples={num_samples} is invalid: evaluation compares samples, so it needs >= 2"
        )


def _is_digits(dataset) -> bool:
    name = getattr(dataset, "dataset_name", "") or ""
    return name.split(":")[0] == "lipgan_digits"


def data_w1(fake: np.ndarray, real: np.ndarray, real_again: np.ndarray) -> dict:
    """W1 from the generated to the real examples on data lipgan has no metric for,
    with its real-vs-real floor: the same distance between two real samples of the same size,
    which is what a perfect generator scores at this n. Exact (:func:`wasserstein1`) when the
    assignment is affordable (:data:`EXACT_W1_MAX_TERMS`), else sliced (a lower bound, under its
    own key so the two are never compared). A dataset smaller than 2n repeats examples, which
    lowers the floor.

    Args:
        fake: generated examples.
        real: real examples.
        real_again: other real examples, for the floor.

    Returns:
        ``{'eval/w1', 'eval/w1_floor'}``, or ``{'eval/sliced_w1', 'eval/sliced_w1_floor'}`` when
        the exact problem is too large; all on the first ``min`` of the three sizes.
    """
    from lipgan.metrics.toy import sliced_wasserstein1, wasserstein1

    flat = lambda x: np.asarray(x, np.float64).reshape(len(x), -1)  # noqa: E731
    fake, real, real_again = flat(fake), flat(real), flat(real_again)
    n = min(len(fake), len(real), len(real_again))
    fake, real, real_again = fake[:n], real[:n], real_again[:n]
    if n * n * fake.shape[1] <= EXACT_W1_MAX_TERMS:
        return {
            "eval/w1": wasserstein1(fake, real),
            "eval/w1_floor": wasserstein1(real_again, real),
        }
    return {
        "eval/sliced_w1": sliced_wasserstein1(fake, real),
        "eval/sliced_w1_floor": sliced_wasserstein1(real_again, real),
    }


def evaluate(
    sampler: Sampler,
    dataset,
    *,
    critic,
    seed: int,
    batch_size: int,
    num_samples: int,
    inception_weights: str | None = None,
    w1_floor: bool = True,
    metrics: tuple[str, ...] | None = None,
    extra: tuple[str, ...] = (),
) -> dict:
    """The registered metrics (``lipgan_register_metrics``) that apply to this run's data, or the
    ones named, as a flat ``{'eval/...': float}`` dict.

    Args:
        sampler: the generator measured and its noise's shape (:class:`lipgan.core.callbacks.Sampler`;
            ``trainer.sampler()``: the EMA when it is on).
        dataset: the data factory (``trainer.data_factory``).
        critic: the critic whose Wasserstein estimate is reported.
        seed: the seed of the samples' noise and of the real samples' stream.
        batch_size: the batch size real examples are read with.
        num_samples: generated samples (and as many real ones), >= 2.
        inception_weights: a local InceptionV3 weights file for FID/KID on images, or None.
        w1_floor: False skips the toy sets' real-vs-real floor (a study computes it once).
        metrics: metric names to compute (``lipgan eval --metric``); None: every default metric
            that applies (:func:`select_metrics`).
        extra: with ``metrics`` None, metrics computed beside the defaults (a study's image
            scores, ``lipgan study --metric``); each must apply.

    Returns:
        ``{'eval/<metric>': float}`` (docs/metrics.md says what each means).

    Raises:
        ConfigError: ``num_samples`` is not an integer >= 2, or a named metric is unknown or
            does not apply to this data.
    """
    check_evaluate_samples(num_samples)
    fake = generate(sampler, num_samples, seed)
    data_shape = tuple(fake.shape[1:])
    toy = toy_set_of(dataset, data_shape)
    image = len(data_shape) == 3
    data = EvalData(
        fake=fake,
        real=np.empty((0, *data_shape), np.float32),
        critic=critic,
        data_shape=data_shape,
        toy=toy,
        digits=image and _is_digits(dataset),
        data_dir=getattr(dataset, "data_dir", None),
        inception_weights=inception_weights,
        w1_floor=w1_floor,
        seed=seed,
    )
    chosen = select_metrics(data, metrics, extra=extra)
    # One stream for both real samples when a metric needs the second (the real-vs-real floor).
    twice = any(m.needs_more_real for m in chosen)
    drawn = real_samples(dataset, num_samples * (2 if twice else 1), batch_size, seed)
    data.real = drawn[:num_samples]
    data.more_real = (lambda: drawn[num_samples:]) if twice else None
    out = {}
    for metric in chosen:
        out.update({f"eval/{k}": v for k, v in metric.compute(data).items()})
    return out


def select_metrics(data: EvalData, names=None, registry=None, extra=()) -> list:
    """Instances of the metrics to compute on ``data``: the ``names`` given, each of which must
    apply (one line otherwise), or every registered default metric that applies followed by the
    ``extra`` names (each must apply; one already among the defaults is computed once)."""
    from lipgan.core.plugins import default_registry

    registry = registry or default_registry()
    if names is None:
        entries = [e for e in registry.entries("metric") if e.cls.default]
        defaults = [e.cls() for e in entries]
        defaults = [m for m in defaults if m.applies(data)]
        added = [n for n in dict.fromkeys(extra) if n not in {m.name for m in defaults}]
        return defaults + (select_metrics(data, added, registry) if added else [])
    metrics = [registry.get("metric", name)() for name in dict.fromkeys(names)]
    here = [e.name for e in registry.entries("metric") if e.cls().applies(data)]
    for metric in metrics:
        if not metric.applies(data):
            raise ConfigError(
                f"metric {metric.name!r} does not apply to this run's data "
                f"(shape {data.data_shape}); metrics that do: {', '.join(here)}"
            )
    return metrics


def render(
    critic, fake: np.ndarray, real: np.ndarray | None = None, title: str = ""
) -> bytes | None:
    """A PNG of samples: points over the critic's contour (2-D) or an image grid; None otherwise.

    Args:
        critic: the critic whose contour is drawn under 2-D points.
        fake: generated examples.
        real: real points drawn beside them (2-D data only), or None.
        title: the plot's title (2-D data only).

    Returns:
        The PNG's bytes, or None for data that is neither 2-D points nor images.
    """
    buffer = io.BytesIO()
    data_shape = tuple(fake.shape[1:])
    if data_shape == (2,):
        from lipgan.plots.toy import plot_samples

        plot_samples(buffer, critic, real if real is not None else fake[:0], fake, title=title)
    elif len(data_shape) == 3:
        from lipgan.plots.images import save_grid

        save_grid(buffer, fake[:64], scale=2)
    else:
        return None
    return buffer.getvalue()


def summary_line(history: list[dict], run_dir=None) -> str:
    """One line with the headline numbers of the last evaluation in ``history`` (a fit's rows):
    modes and high quality (PacGAN's protocol) on the Gaussian mixtures, W1 and its real-vs-real
    floor, FD/KID on digits, FID/KID on images; ``lipgan run`` ends with it.

    Args:
        history: the rows of a fit (``TrainState.history``).
        run_dir: the run dir, named in the line when no row holds an evaluation.

    Returns:
        The line, e.g. ``last evaluation (step 1000): 8/8 modes, 63.0 % high quality, ...``.
    """
    rows = [row for row in history if any(k.startswith("eval/") for k in row)]
    if not rows:
        where = f" {run_dir}" if run_dir is not None else " RUN_DIR"
        return f"no evaluation in this call (train.eval_every); measure the run with `lipgan eval{where}`"
    row = {k.removeprefix("eval/"): v for k, v in rows[-1].items()}
    parts = []
    if "modes_covered" in row:
        parts.append(f"{row['modes_covered']}/{row['num_modes']} modes")
        parts.append(f"{100 * row['high_quality_fraction']:.1f} % high quality")
    for key, label in (("w1", "W1"), ("sliced_w1", "sliced W1")):
        if key in row:
            floor = f" (floor {row[key + '_floor']:.3g})" if key + "_floor" in row else ""
            parts.append(f"{label} {row[key]:.3g}{floor}")
    for key, label in (
        ("digits_fd", "digits FD"),
        ("fid", "FID"),
        ("inception_v3_fd", "InceptionV3 FD"),
    ):
        if key in row:
            parts.append(f"{label} {row[key]:.3g}")
    if not parts and "critic_wasserstein" in row:
        parts.append(f"critic W1 estimate {row['critic_wasserstein']:.3g}")
    return f"last evaluation (step {row['step']}): " + ", ".join(parts)
