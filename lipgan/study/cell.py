"""One study cell in its own process (``python -m lipgan.config.cells CELL_JSON RUN_DIR``).

The process is the gin edge's (:mod:`lipgan.config.cells`): it turns the cell's SPEC into a
:class:`lipgan.Trainer` and trains it through the same call as ``lipgan run`` (the gin root
``train``; re-running on the run dir resumes from its checkpoint). This module, which imports no
gin, is the rest: it takes the quality curve between compiled calls (:mod:`lipgan.study.curve`),
then evaluates the trained models on the PacGAN protocol's 2,500 samples and writes ``result.json``
(with the curve, and ``samples.npy`` for the study's scatter plots) in the run dir. gin only turns a
cell's SPEC into a trainer: :func:`train_cell` measures a :class:`lipgan.Trainer` made from Python
objects the same way, without gin. The toy sets' W1 floor is left to
the study (once per data set, :mod:`lipgan.study.references`). A failure of any kind is written
there as ``status: failed`` with its first line, exit 1, except a refused run dir (exit
:data:`RUN_DIR_REFUSED`, no result). A SIGINT/SIGTERM stop writes no result:
the run saves its checkpoint, the curve marks its clock, and the process exits 128 + signal,
leaving the cell unfinished for the study's resume.

Time per iteration comes from the progress callbacks of the run itself: the training clock between
the end of the first compiled call and the end of the last one, over the iterations in between, so
process start-up, data set build, tracing/compilation and curve evaluations are excluded. With a
single compiled call (steps <= train.steps_per_execution) nothing can be excluded and
``time_includes_compile`` is true.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lipgan.core import machine
from lipgan.core.errors import Interrupted, LipganError, RunDirError, first_line
from lipgan.run.interrupt import ORPHAN_ENV, stop_when_orphaned
from lipgan.run.progress import Progress
from lipgan.study.spec import EVAL_EVERY, EVAL_SAMPLES


class Timing(Progress):
    """A silent progress display that keeps the training clock and takes the curve's points.

    The clock runs from the start of the training loop (after the run dir is restored), tracing
    and compilation included, and stops while the curve evaluates, so curve points cost no
    training time and ``seconds_per_iteration`` does not include them. The curve (every
    ``eval_every`` iterations, on toy data only) is set up when fit hands over its view.
    """

    def __init__(self, run_dir: Path | None = None, eval_every: int = 0, eval_samples: int = 0):
        super().__init__(lambda line: None)
        self.run_dir, self.eval_every, self.eval_samples = run_dir, eval_every, eval_samples
        self.curve = None
        self.marks: list[tuple[int, float]] = []
        self.paused = 0.0

    def set_view(self, view) -> None:
        from lipgan.metrics import evaluation
        from lipgan.study.curve import CURVE_FILE, Curve

        super().set_view(view)
        toy = evaluation.toy_set_of(view.data, view.data_shape)
        if self.eval_every and toy:
            self.curve = Curve(
                view.sampler,
                toy,
                seed=view.seed,
                num_samples=self.eval_samples,
                every=self.eval_every,
                run_dir=self.run_dir,
                raw=raw_sampler(view),
                emas=ema_samplers(view),
            )
        elif self.run_dir is not None and (self.run_dir / CURVE_FILE).exists():
            (self.run_dir / CURVE_FILE).unlink()

    def start(self, total: int, initial: int) -> None:
        super().start(total, initial)
        self.paused = 0.0
        self.marks = [(initial, 0.0)]
        if self.curve is not None and self.curve.resume(initial):
            self._record(initial)

    def clock(self) -> float:
        """Training seconds of this session so far (curve evaluations excluded)."""
        return time.perf_counter() - self.started - self.paused

    def update(self, step: int, metrics: dict | None) -> None:
        self.marks.append((step, self.clock()))
        if self.curve is not None and self.curve.due(step, self.total):
            self._record(step)

    def _record(self, step: int) -> None:
        began = time.perf_counter()
        self.curve.record(step, self.clock())
        self.paused += time.perf_counter() - began

    def stopped(self) -> None:
        """Record where a stopped session's clock was, so that a resumed one continues it."""
        if self.curve is not None and self.marks:
            self.curve.mark_stop(self.marks[-1][0], self.clock())

    def per_iteration(self) -> tuple[float | None, bool]:
        """(seconds per iteration, whether compilation is included)."""
        if len(self.marks) >= 3:
            (s0, t0), (s1, t1) = self.marks[1], self.marks[-1]
            if s1 > s0:
                return (t1 - t0) / (s1 - s0), False
        if len(self.marks) == 2 and self.marks[1][0] > self.marks[0][0]:
            (s0, t0), (s1, t1) = self.marks
            return (t1 - t0) / (s1 - s0), True
        return None, False


def train_cell(
    trainer,
    run_dir: Path,
    steps: int,
    *,
    eval_samples: int = EVAL_SAMPLES,
    eval_every: int = EVAL_EVERY,
    metrics: tuple[str, ...] = (),
) -> dict:
    """Train ``trainer`` (a :class:`lipgan.Trainer` made from Python objects) to ``steps`` in
    ``run_dir`` and measure it as a study cell; the result
    :func:`lipgan.config.cells.run_cell` returns. No gin. ``metrics``: scores recorded beside the
    default metrics (a study's image scores)."""
    return measure(
        lambda timing: trainer.fit(steps, run_dir=run_dir, progress=timing),
        Path(run_dir),
        eval_samples=eval_samples,
        eval_every=eval_every,
        metrics=metrics,
    )


#: The training clock of the session that trained a cell to its end, kept in its run dir.
TIMING_FILE = "timing.json"
TIMING_KEYS = ("seconds_per_iteration", "time_includes_compile", "train_seconds")


def timing_of(timing: Timing, train_seconds: float, step: int, run_dir: Path) -> dict:
    """The result's timing fields, from the session that trained the cell to ``step``.

    A session that trained nothing (a finished cell run again: its ``result.json`` was lost,
    or a second driver on the same study) measured no iteration: it reports the timing that
    the training session kept in ``run_dir/timing.json``, never its own. Where none was kept
    (a run dir of an older lipgan), the fields are None and ``timing_lost`` says why, so the
    report marks the row rather than average fewer seeds' timings silently.
    """
    per_iteration, includes_compile = timing.per_iteration()
    trained = len(timing.marks) >= 2 and timing.marks[-1][0] > timing.marks[0][0]
    path = run_dir / TIMING_FILE
    if trained:
        fields = {
            "seconds_per_iteration": per_iteration,
            "time_includes_compile": includes_compile,
            "train_seconds": train_seconds,
        }
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"step": step, **fields}, indent=1))
        os.replace(tmp, path)
        return fields
    try:
        kept = json.loads(path.read_text())
        if isinstance(kept, dict) and kept.get("step") == step:
            return {key: kept.get(key) for key in TIMING_KEYS}
    except (OSError, ValueError):
        pass
    lost = f"this run dir was trained to step {step} before and its timing was not kept"
    return {**dict.fromkeys(TIMING_KEYS), "timing_lost": lost}


def measure(
    fit,
    run_dir: Path,
    *,
    eval_samples: int,
    eval_every: int,
    metrics: tuple[str, ...] = (),
    evaluate=None,
) -> dict:
    """Call ``fit(progress)`` (a fit of one trainer in ``run_dir``) with the cell's clock and
    curve, then evaluate what it trained on ``eval_samples`` with the default metrics and
    ``metrics`` (the study's image scores, :func:`lipgan.study.spec.image_metrics`): the cell's
    result. ``evaluate``: ``(view, sampler) -> metrics`` instead of the registered metrics
    (a user data set's, against its held-out rows: :mod:`lipgan.study.own_metrics`)."""
    from lipgan.metrics import evaluation
    from lipgan.study.curve import NO_EMA, by_decay, points, read, samples_file

    started = time.perf_counter()
    timing = Timing(run_dir, eval_every, eval_samples)
    try:
        state = fit(timing)
    except Interrupted:
        timing.stopped()
        raise
    view = timing.view  # the one run: training, the curve and the final evaluation
    spec = view.spec
    # Kept before the evaluation, so that a second driver's re-run finds it as soon as it can.
    timed = timing_of(timing, time.perf_counter() - started, state.step, run_dir)
    began = time.perf_counter()

    def measured(sampler) -> dict:
        if evaluate is not None:
            return evaluate(view, sampler)
        # The study computes the W1 floor once per data set from many pairs (report.references).
        values = evaluation.evaluate(
            sampler,
            view.data,
            critic=view.critic,
            seed=view.seed,
            batch_size=spec.step_config.global_batch_size,
            num_samples=eval_samples,
            inception_weights=spec.inception_weights,
            w1_floor=False,
            extra=metrics,
        )
        return {k.removeprefix("eval/"): v for k, v in values.items()}

    # Not named `metrics`: measured() reads that (the extra scores) on its second call too.
    found = measured(view.sampler)  # the EMA when train.ema_decay is on
    raw = raw_sampler(view)
    if raw is not None:  # the raw generator too (lipgan.study.curve.NO_EMA)
        sampled = dict(found)
        found[NO_EMA] = measured(raw)
        found.update(by_decay(ema_samplers(view), measured, sampled))  # every decay
    kept = {"samples.npy": view.sampler}  # the sampler's; with several decays each other one's too
    for decay, sampler in list(ema_samplers(view).items())[1:]:
        kept[samples_file(decay)] = sampler
    for name, sampler in kept.items():
        fake = evaluation.generate(sampler, eval_samples, view.seed)  # evaluate()'s fixed noise
        if len(fake.shape) == 2:  # points (a figure draws the first two coords)
            np.save(run_dir / name, np.asarray(fake, np.float32))
        else:  # images: the first 64 for the report's sample grid
            np.save(run_dir / name, np.asarray(fake[:64], np.float32))
    result = {
        "status": "ok",
        "step": state.step,
        "metrics": found,
        **timed,
        "final_eval_seconds": time.perf_counter() - began,
    }
    if timing.curve is not None:
        result["curve"] = points(read(run_dir))
        result["curve_eval_seconds"] = timing.curve.eval_seconds
    return result


def ema_samplers(view) -> dict:
    """``{decay: Sampler}`` of a run keeping several generator EMAs (``train.ema_decays``)."""
    from lipgan.core.callbacks import Sampler

    shape = view.sampler.latent_shape
    return {decay: Sampler(model, shape) for decay, model in view.generator_emas.items()}


def raw_sampler(view):
    """The raw generator's :class:`lipgan.core.callbacks.Sampler` where the run samples from its EMA
    (measured beside it, :data:`lipgan.study.curve.NO_EMA`); None otherwise."""
    from lipgan.core.callbacks import Sampler

    if view.generator_ema is None:
        return None
    return Sampler(view.generator, view.sampler.latent_shape)


#: Exit status of a cell whose run dir was refused (written by an older lipgan, in use by another
#: process, ...): a problem of the study's files, not a result of the method, so the cell writes
#: no result (recording it as failed would put a failed seed in the study's table for good) and
#: the study stops with the cell's line (:func:`lipgan.study.runner.execute`).
RUN_DIR_REFUSED = 3


_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): ")


def failure_summary(exc: BaseException) -> str:
    """A failed cell's error in one line: an error raised while ``tf.function`` traces reads "in
    user code:", then the Python stack, then the original error, which is the line to keep."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if lines and lines[0] == "in user code:":
        return next((ln for ln in reversed(lines) if _RAISED.match(ln)), lines[-1])
    return first_line(exc)


def main(argv: list[str], run_cell: Callable[[dict, Path], dict]) -> int:
    """The cell process: ``run_cell(cell, run_dir)`` (the gin edge's,
    :func:`lipgan.config.cells.run_cell`) for ``argv = [CELL_JSON, RUN_DIR]``, its result (or
    failure) written to ``RUN_DIR/result.json``; the exit status."""
    cell_file, run_dir = Path(argv[0]), Path(argv[1])
    if os.environ.get(ORPHAN_ENV):  # under Ray: stop (checkpoint) if the worker dies under us
        stop_when_orphaned(int(os.environ[ORPHAN_ENV]))
    cell = json.loads(cell_file.read_text())
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        result = run_cell(cell, run_dir)
        code = 0
    except Interrupted as exc:
        # A signal stop is no result: the run dir keeps its checkpoint and the cell stays
        # unfinished, so re-running the study resumes it (the runner reads the exit status).
        print(f"{exc.prefix}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # SIGINT before training installed its handlers, or during eval
        print("Stopped: SIGINT", file=sys.stderr)
        return 128 + signal.SIGINT
    except RunDirError as exc:  # gin appends "In call to configurable ..." lines: the first only
        print(f"Error: {first_line(exc)}", file=sys.stderr)
        return RUN_DIR_REFUSED
    except BaseException as exc:  # any failure is the cell's result, never the study's
        message = f"{type(exc).__name__}: {failure_summary(exc)}"
        # A LipganError (a refused setting, a non-finite loss) says what the method did; anything
        # else (a TensorFlow crash, an OSError) may be the machine's, so the runner retries it once.
        result, code = {"status": "failed", "error": message}, 1
        if not isinstance(exc, LipganError):
            result["unexpected"] = True
        traceback.print_exc(file=sys.stderr)  # cell.log keeps the whole story
        print(f"Error: {message}", file=sys.stderr)
    result["cell"] = cell
    try:  # what it ran on (lipgan.core.machine says why); never in the way of the result itself
        result["machine"] = machine.describe()
    except Exception as exc:  # e.g. the TensorFlow import that failed the cell fails here too
        result["machine"] = {"error": first_line(exc)}
    tmp = run_dir / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2, default=float))
    os.replace(tmp, run_dir / "result.json")
    return code
