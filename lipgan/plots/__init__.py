"""Figures (matplotlib, Agg backend; imported only when a figure is drawn)."""
