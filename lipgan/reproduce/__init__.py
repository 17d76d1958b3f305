"""Reproductions of published figures, each a module with a ``run(out_dir, quick)`` entry point."""
