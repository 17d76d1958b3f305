"""One study cell in its own process: ``python -m lipgan.study.cell CELL_JSON RUN_DIR``.

Trains through the same path as ``lipgan run`` (gin config -> ``train``; re-running on the run dir
resumes from its checkpoint), then evaluates the latest checkpoint on the PacGAN protocol's 2,500
samples and writes ``result.json`` (and ``samples.npy`` for the study's scatter plots) in the run
dir. A failure of any kind is written there as ``status: failed`` with its first line, exit 1. A
SIGINT/SIGTERM stop writes no result: the run saves its checkpoint and the process exits 128 +
signal, leaving the cell unfinished for the study's resume.

Time per iteration comes from the progress callbacks of the run itself: the wall time between the
end of the first compiled call and the end of the last one, over the iterations in between, so
process start-up, data set build and tracing/compilation are excluded. With a single compiled call
(steps <= train.steps_per_execution) nothing can be excluded and ``time_includes_compile`` is true.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

from lipgan.errors import Interrupted
from lipgan.interrupt import ORPHAN_ENV, stop_when_orphaned
from lipgan.progress import Progress


class Timing(Progress):
    """A silent progress display that records when each compiled call ended."""

    def __init__(self):
        super().__init__(lambda line: None)
        self.marks: list[tuple[int, float]] = []

    def start(self, total: int, initial: int) -> None:
        super().start(total, initial)
        self.marks = [(initial, time.perf_counter())]

    def update(self, step: int, metrics: dict | None) -> None:
        self.marks.append((step, time.perf_counter()))

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


def class_metrics(fake: np.ndarray, data_dir=None) -> dict:
    """Class coverage and reverse KL of the predicted class histogram of generated digits.

    The Stacked-MNIST way of counting modes (Metz et al. 2017; PacGAN §5): a pretrained classifier
    labels every sample; a class is covered when at least one sample is assigned to it; the reverse
    KL is KL(p_fake || uniform over 10 classes), 0 for a balanced generator, log 10 for one class.
    """
    from lipgan.metrics import images

    classifier = images.digits_classifier(data_dir)
    logits = images._batched(
        lambda x: classifier(images._resize(x, images.DIGITS_SIZE), training=False), fake, 500
    )
    counts = np.bincount(np.argmax(logits, axis=-1), minlength=10)
    p = counts / counts.sum()
    nz = p > 0
    return {
        "classes_covered": int(nz.sum()),
        "num_classes": 10,
        "class_reverse_kl": float(np.sum(p[nz] * np.log(p[nz] * 10))),
    }


def run_cell(cell: dict, run_dir: Path) -> dict:
    from lipgan import config
    from lipgan.plugins import load_registry
    from lipgan.study.spec import Cell

    threads = int(os.environ.get("LIPGAN_STUDY_THREADS", "0"))
    if threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    spec = Cell(**{**cell, "bindings": tuple(cell.get("bindings", ()))})
    gin_files, bindings = spec.gin()
    registry = load_registry().registry
    # --steps shortens the run: stretch the config's learning-rate decay to match (bindings the
    # user passed with --bind come last and still win).
    schedule = config.stretched_schedules(gin_files, spec.steps, registry)
    config.parse(gin_files, schedule + bindings, registry)
    timing = Timing()
    started = time.perf_counter()
    config.train_configured(run_dir=run_dir, progress=timing)  # exactly what `lipgan run` does
    train_seconds = time.perf_counter() - started
    trainer = config.build_trainer()
    step = trainer.restore(run_dir, lambda line: None)
    metrics = {k.removeprefix("eval/"): v for k, v in trainer.evaluate(spec.eval_samples).items()}
    fake = trainer.sample(spec.eval_samples)  # the same fixed-noise samples evaluate() used
    if trainer.wgan.data_shape == (2,):
        np.save(run_dir / "samples.npy", np.asarray(fake, np.float32))
    else:  # images: the first 64 for the report's sample grid
        np.save(run_dir / "samples.npy", np.asarray(fake[:64], np.float32))
    if "digits_fd" in metrics:
        metrics.update(class_metrics(fake, getattr(trainer.dataset, "data_dir", None)))
    per_iteration, includes_compile = timing.per_iteration()
    return {
        "status": "ok",
        "step": step,
        "metrics": metrics,
        "seconds_per_iteration": per_iteration,
        "time_includes_compile": includes_compile,
        "train_seconds": train_seconds,
    }


def main(argv: list[str]) -> int:
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
    except BaseException as exc:  # any failure is the cell's result, never the study's
        text = str(exc).strip().splitlines()
        message = f"{type(exc).__name__}: {text[0] if text else ''}".strip()
        result, code = {"status": "failed", "error": message}, 1
        print(f"Error: {message}", file=sys.stderr)
    result["cell"] = cell
    tmp = run_dir / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2, default=float))
    os.replace(tmp, run_dir / "result.json")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
