"""The ``lipgan`` command: the top-level group (main) and one module per command, none importing
another; shared options live in options.py (docs/layout.md)."""
