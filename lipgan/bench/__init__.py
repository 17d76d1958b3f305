"""``lipgan bench``: throughput of the Lipschitz penalty, measured on the engine's own step.

Where the code lives: the harness is this installed package (so ``lipgan bench`` works from any
installation, not just a source checkout); the repository's ``benchmarks/`` folder holds only the
latest figures (``RESULTS.md``, ``results.json``, the chart) and the script that made them.

Modules: :mod:`.timing` (repetitions, median and spread), :mod:`.flops` (FLOPs from the traced graph),
:mod:`.keras_io_baseline` (the keras-io WGAN-GP recipe users copy today), :mod:`.sweep` (what a
sweep is), :mod:`.cases` (what is timed), :mod:`.harness` (the sweep run), :mod:`.report` (JSON,
Markdown, PNG).
"""
