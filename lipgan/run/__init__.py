"""One training run: the Trainer (the Python API), its host loop, callbacks' progress, checkpoints,
the run directory and its record (run.json). Imports core, models, data, metrics and plots; never
gin (docs/layout.md)."""
