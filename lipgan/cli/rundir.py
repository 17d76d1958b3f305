"""The commands that read a run dir: ``eval``, ``audit`` and ``sample`` (``run --resume DIR`` is
:mod:`lipgan.cli.run`'s).

Each rebuilds the run's :class:`lipgan.Trainer` from its one record, ``run.json``
(:mod:`lipgan.run.rebuild`), whether ``lipgan run`` or a script made it, then restores its latest
checkpoint. A dir that is not a run dir, holds no record, or was written by an older lipgan is
one line. Evaluation and sampling run where the user is (the default strategy), not where the run
trained (maybe a TPU).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from lipgan.cli.options import (
    PATH,
    SEED,
    bind_option,
    call,
    disable_option,
    discover,
    mock_data_option,
)
from lipgan.core.errors import ConfigError


def load_run(run_dir: Path, bindings, mock_data: bool, disabled, need_data: bool = True):
    """The Trainer of ``run_dir`` (its own config, default strategy) with its latest checkpoint,
    and the step restored."""
    from lipgan.config import recorded
    from lipgan.run import rebuild

    run_record = rebuild.read(run_dir)
    discovery = discover(disabled)
    if mock_data and rebuild.gin_config(run_record) is None:
        rebuild.check_mock_data(run_dir, run_record)
    trainer, _ = call(
        recorded.rebuild_trainer,
        mock_data,
        run_dir=run_dir,
        registry=discovery.registry,
        bound=bindings,
        need_data=need_data,
    )
    step = trainer.restore(run_dir, lambda line: click.echo(line, err=True))
    return trainer, step


#: ``--generator`` of eval, sample and audit (:meth:`lipgan.Trainer.generator_model`).
def _checked_generator(ctx, param, value: str) -> str:
    """Refuse a malformed ``--generator`` in one line before the run is loaded."""
    from lipgan.core.step_config import parse_generator

    parse_generator(value)
    return value


generator_option = click.option(
    "--generator",
    default="default",
    show_default=True,
    metavar="default|raw|ema|ema:DECAY",
    callback=_checked_generator,
    help="Which generator: the raw one, its EMA (train.ema_decay; the first decay's when it "
    "keeps several), the EMA at one of its decays (e.g. ema:0.99), or the run's default (the "
    "EMA when the run has one).",
)


def generator_name(trainer, which: str) -> str:
    """``raw``, ``ema`` or ``ema:<decay>`` (a decay other than the sampling one): the generator
    ``--generator which`` measured (recorded in the JSON)."""
    model = trainer.generator_model(which)
    if model is trainer.wgan.generator:
        return "raw"
    if model is trainer.wgan.generator_ema:
        return "ema"
    decay = next(d for d, m in trainer.wgan.generator_emas.items() if m is model)
    return f"ema:{decay}"


@click.command(name="eval")
@click.argument("run_dir", type=PATH)
@click.option(
    "--samples",
    "num_samples",
    type=click.IntRange(min=2),
    help="Generated samples (default: train.eval_samples).",
)
@bind_option(", e.g. train.inception_weights")
@click.option(
    "--metric",
    "metric_names",
    multiple=True,
    metavar="NAME",
    help="A registered metric to compute (repeatable; `lipgan plugins` lists them; default: "
    "every metric that applies to the data).",
)
@generator_option
@mock_data_option
@disable_option
def eval_command(run_dir, num_samples, bindings, metric_names, generator, mock_data, disabled):
    """Metrics of the latest checkpoint of RUN_DIR, as JSON on stdout."""
    trainer, step = load_run(run_dir, bindings, mock_data, disabled)
    metrics = call(
        trainer.evaluate,
        mock_data,
        num_samples=num_samples,
        metrics=metric_names or None,
        generator=generator,
    )
    payload = {
        "run_dir": str(run_dir),
        "step": step,
        "generator": generator_name(trainer, generator),
        **{k.removeprefix("eval/"): v for k, v in metrics.items()},
    }
    click.echo(json.dumps(payload, indent=2))


@click.command(name="audit")
@click.argument("run_dir", type=PATH)
@click.option(
    "--points",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="Real, fake and interpolated points each.",
)
@click.option("--seed", type=SEED, help="Sampling seed (default: the run's train.seed).")
@generator_option
@mock_data_option
@disable_option
def audit_command(run_dir, points, seed, generator, mock_data, disabled):
    """Lipschitz audit of the latest checkpoint of RUN_DIR (lower and upper bounds), as JSON."""
    trainer, step = load_run(run_dir, [], mock_data, disabled)
    result = call(trainer.audit, mock_data, points=points, seed=seed, generator=generator)
    which = generator_name(trainer, generator)
    click.echo(
        json.dumps({"run_dir": str(run_dir), "step": step, "generator": which, **result}, indent=2)
    )


@click.command()
@click.argument("run_dir", type=PATH)
@click.option(
    "-n",
    "num",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Number of samples.",
)
@click.option(
    "--out",
    "out",
    type=PATH,
    required=True,
    help="Output file: OUT.npz (array 'samples') and OUT.png next to it.",
)
@click.option("--seed", type=SEED, help="Noise seed (default: the run's train.seed).")
@generator_option
@disable_option
def sample(run_dir, num, out, seed, generator, disabled):
    """Generate samples from the latest checkpoint of RUN_DIR (.npz and a PNG grid or scatter).

    The .npz is written first, chunk by chunk in bounded memory; the PNG shows the first 10,000
    samples (a scatter of ten million points is neither drawable nor readable).
    """  # the help text: lipgan.run.sample_file writes the .npz; PLOT_POINTS caps the PNG
    import numpy as np

    from lipgan.metrics import evaluation
    from lipgan.run.sample_file import write_bytes, write_npz

    npz = out if out.suffix == ".npz" else out.with_name(out.name + ".npz")
    if npz.parent.exists() and not npz.parent.is_dir() or npz.is_dir():
        raise ConfigError(f"--out {out}: cannot write {npz} there")
    trainer, step = load_run(run_dir, [], False, disabled, need_data=False)
    seed = trainer.seed if seed is None else seed
    shown: list = []

    def kept(chunks):  # the PNG's samples: the first PLOT_POINTS, kept while they stream by
        for chunk in chunks:
            held = sum(len(c) for c in shown)
            if held < PLOT_POINTS:
                shown.append(chunk[: PLOT_POINTS - held])
            yield chunk

    png_path = npz.with_suffix(".png")
    written = []
    try:
        npz.parent.mkdir(parents=True, exist_ok=True)
        chunks = kept(evaluation.generate_chunks(trainer.sampler(generator), num, seed))
        write_npz(npz, chunks, (num, *trainer.wgan.data_shape), step=step, seed=seed)
        written.append(npz)
        samples = np.concatenate(shown)
        real = real_points(trainer, len(samples), seed)
        png = evaluation.render(trainer.critic, samples, real, title=f"{run_dir.name} step {step}")
        if png:
            write_bytes(png_path, png)
            written.append(png_path)
    except OSError as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()  # nothing half-written
        raise ConfigError(
            f"--out {out}: cannot write {exc.filename or npz} ({exc.strerror or exc}); "
            "choose a writable place"
        ) from None
    click.echo(" ".join(str(p) for p in written))


#: Samples drawn in ``lipgan sample``'s PNG (all of them up to this many).
PLOT_POINTS = 10_000


def real_points(trainer, n: int, seed: int):
    """``n`` real examples to draw beside a 2-D run's samples, from the run's data; None for
    images (a grid of samples only) and for a Python run whose data was not stored (its rebuilt
    data is shape-only, marked ``no_examples`` by :mod:`lipgan.run.rebuild`)."""
    from lipgan.metrics import evaluation

    if trainer.wgan.data_shape != (2,) or getattr(trainer.data_factory, "no_examples", False):
        return None
    return evaluation.real_samples(trainer.data_factory, n, trainer.global_batch_size, seed)
