"""How a run reports progress: a live bar on a terminal, plain lines in logs, nothing when quiet.

A :class:`Progress` is a :class:`lipgan.Callback`: the training loop calls its ``on_train_begin``
and ``on_log`` like any callback's, plus ``update`` after every compiled call (the live bar) and
``message`` for one-off notes (resumed, stopped, run dir). Which one the CLI uses depends on whether
stdout is a terminal (:func:`for_terminal`); ``Trainer.fit(verbose=...)`` picks one with
:func:`for_verbose`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from lipgan.core.callbacks import METRICS, Callback


def format_metrics(metrics: dict, keys) -> str:
    return "  ".join(f"{k} {metrics[k]:+.4f}" for k in keys if k in metrics)


class Progress(Callback):
    """Plain periodic lines (``step 100/1000  critic_loss ...  4.2 it/s``): logs, CI, pipes."""

    def __init__(self, write: Callable[[str], None] = print):
        self.write = write
        self.total = 0
        self.first = 0
        self.started = time.perf_counter()

    def start(self, total: int, initial: int) -> None:
        self.total, self.first = total, initial
        self.started = time.perf_counter()

    def on_train_begin(self, step: int, steps: int) -> None:
        self.start(steps, step)

    def on_log(self, step: int, metrics: dict) -> None:
        if any(k in metrics for k in METRICS):  # not a row of evaluation only
            self.log(step, metrics, METRICS)

    def rate(self, step: int) -> float:
        """Iterations per second of this session (resumed steps do not count)."""
        return (step - self.first) / max(time.perf_counter() - self.started, 1e-9)

    def update(self, step: int, metrics: dict | None) -> None:
        """After every compiled call; plain output waits for :meth:`log`."""

    def log(self, step: int, metrics: dict, keys) -> None:
        self.write(
            f"step {step}/{self.total}  {format_metrics(metrics, keys)}  {self.rate(step):.1f} it/s"
        )

    def message(self, text: str) -> None:
        self.write(text)

    def close(self) -> None:
        pass


class Quiet(Progress):
    """Nothing at all (``--quiet``): errors still reach stderr, and the CLI prints the run dir."""

    def __init__(self):
        super().__init__(lambda line: None)


class Bar(Progress):
    """A tqdm bar with it/s and the latest losses, for a terminal; messages print above it."""

    def __init__(self, file=None):
        super().__init__()
        self.file = file or sys.stdout
        self.bar = None

    def start(self, total: int, initial: int) -> None:
        from tqdm import tqdm

        super().start(total, initial)
        self.bar = tqdm(
            total=total,
            initial=initial,
            unit="it",
            file=self.file,
            dynamic_ncols=True,
            desc="train",
            smoothing=0.1,
        )

    def update(self, step: int, metrics: dict | None) -> None:
        if self.bar is None:
            return
        if metrics:
            self.bar.set_postfix({k: f"{v:+.3f}" for k, v in metrics.items()}, refresh=False)
        self.bar.update(step - self.bar.n)

    def log(self, step: int, metrics: dict, keys) -> None:
        pass  # the bar shows the same numbers live; metrics.jsonl keeps the record

    def message(self, text: str) -> None:
        if self.bar is None:
            print(text, file=self.file)
        else:
            self.bar.write(text, file=self.file)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def for_terminal(quiet: bool, stream=None) -> Progress:
    """``Quiet`` when asked, a :class:`Bar` when ``stream`` (stdout) is a terminal, else lines."""
    stream = stream or sys.stdout
    if quiet:
        return Quiet()
    if stream.isatty():
        return Bar(stream)
    return Progress(lambda line: print(line, file=stream, flush=True))


def for_verbose(verbose: int) -> Progress:
    """Keras' ``verbose``: 0 nothing, 1 a bar on a terminal (lines elsewhere), 2 lines."""
    if isinstance(verbose, bool) or verbose not in (0, 1, 2):
        from lipgan.core.errors import ConfigError

        raise ConfigError(f"verbose={verbose!r} is invalid: use 0 (silent), 1 (bar) or 2 (lines)")
    if verbose == 2:
        return Progress(lambda line: print(line, flush=True))
    return for_terminal(quiet=verbose == 0)
