"""Evaluation metrics computed on the host from samples, never inside the training step.

``toy``: modes covered, high-quality fraction and exact W1 for the 2-D sets; ``image_scores``:
FID, Inception Score, KID and precision/recall/density/coverage from feature and logit arrays, as
their reference code computes them; ``images``: the feature extractors they run on.
"""
