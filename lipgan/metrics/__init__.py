"""Evaluation metrics computed on the host from samples, never inside the training step.

``toy``: modes covered, high-quality fraction and exact W1 for the 2-D sets; ``images``: Fréchet
distance and KID with the feature extractors they run on.
"""
