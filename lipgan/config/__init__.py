"""The gin edge: gin files and ``--bind`` strings become Trainer arguments (gin_binding), gin's
errors become one-line messages (gin_messages), the gin root ``train`` (train_root), and a run dir's
Trainer rebuilt from its record (recorded). With ``lipgan.cli``, the only place that imports gin
(docs/layout.md)."""
