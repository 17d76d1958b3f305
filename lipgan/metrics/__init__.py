"""Evaluation metrics computed on the host from samples (never inside the training step)."""
