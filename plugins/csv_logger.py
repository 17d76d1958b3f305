"""``csv``: every logged row of a run appended to ``metrics.csv`` in its run dir.

A spreadsheet's view of ``metrics.jsonl``: one column per key seen in the first row written (later
keys are added as the header grows, so the file is rewritten only when a new key appears). Off by
default; ``lipgan run --logger csv`` switches it on. The built-in example of the logger hook, which
a third party's logger uses the same way.
"""

from __future__ import annotations

import csv
import os

from lipgan import hookimpl
from lipgan.core.logger import Logger

FILE = "metrics.csv"


class CsvLogger(Logger):
    """Append each logged row to ``<run dir>/metrics.csv`` (chief only; nothing without a run dir)."""

    name = "csv"
    description = "Every logged row appended to metrics.csv in the run dir."

    def __init__(self):
        self.columns: list[str] = []

    @property
    def path(self):
        view = self.view
        return (
            None if view is None or view.run_dir is None or not view.chief else view.run_dir / FILE
        )

    def on_train_begin(self, step: int, steps: int) -> None:
        """A resumed run continues from its checkpoint's ``step``: rows past it, logged before a
        crash and trained again now, are dropped (as ``metrics.jsonl`` drops them)."""
        path = self.path
        if path is None or not path.exists():
            return
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            self.columns = list(reader.fieldnames or [])
            rows = list(reader)
        kept = [r for r in rows if int(float(r["step"])) <= step]
        if len(kept) < len(rows):
            self._write(path, kept)

    def _write(self, path, rows) -> None:
        tmp = path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)

    def on_log(self, step: int, metrics: dict) -> None:
        path = self.path
        if path is None:
            return
        row = {"step": step, **metrics}
        new = [k for k in row if k not in self.columns]
        if new or not path.exists():
            self.columns += new
            rows = []
            if path.exists():
                with open(path, newline="") as f:
                    rows = list(csv.DictReader(f))
            self._write(path, rows)
        with open(path, "a", newline="") as f:
            csv.DictWriter(f, self.columns).writerow(row)


@hookimpl
def lipgan_register_loggers(register):
    register(CsvLogger)
