"""Figures (matplotlib, Agg backend; imported only when a figure is drawn)."""


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files, no display), imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
