"""The critic rewrite ``sll`` and ``cpl`` share (a helper module, not a plugin: nothing registers).

Both plugins rebuild a ``keras.Sequential`` critic with :class:`lipgan.core.residual_layers.
ResidualConstruction`'s rules and differ only in the residual layers' per-unit scale (``kind``).
What the core leaves to a plugin is the same for both, and lives here once: every Dense or Conv2D
that changes shape becomes an AOL-rescaled layer (:mod:`lipgan_plugins.aol`), residual conv
kernels start delta-orthogonal (where SLL's T and CPL's Schur bound are exact), and ``lipgan
tune`` searches Adam's ranges.
"""

from lipgan.core.residual_layers import ResidualConstruction
from lipgan.core.search_space import ADAM
from lipgan_plugins.aol import AOL, DeltaOrthogonal


class AOLResidualConstruction(ResidualConstruction):
    """Residual layers of ``kind`` where the critic keeps its shape, AOL where it changes it.

    Args:
        kernel_size: of the residual conv layer inserted after each strided or width-changing
            Conv2D (1 by default, for cost: docs/plugins.md, "#### sll").

    Raises:
        ConfigError: ``kernel_size < 1``; a critic that is not ``keras.Sequential``; a
            convolution other than Conv2D.
    """

    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = dict(ADAM)

    def rescaled(self, layer):
        return AOL().wrap_layer(layer)

    def conv_initializer(self):
        return DeltaOrthogonal()
