"""``cpl``: Convex Potential Layers (Meunier et al., ICML 2022), with a certified normalizer.

"A Dynamical System Perspective for Lipschitz Neural Networks" (Sec. 4): the layer

    h(x) = x − (2/‖W‖₂²)·W·relu(Wᵀx + b)

is an explicit Euler step of the gradient flow of a convex potential and is 1-Lipschitz; it stays
1-Lipschitz with ‖W‖₂² replaced by any ``c ≥ ‖W‖₂²`` (the Jacobian's eigenvalues lie in
``[1 − 2‖W‖²/c, 1]``). The paper's code estimates ‖W‖₂ by a power iteration (one step per training
call, a persistent vector), and a power iteration approaches ‖W‖ from *below*: until it has
converged the layer it trains is not 1-Lipschitz, and the certificate would rest on an estimate.
lipgan normalizes by a **certified** upper bound instead (:mod:`lipgan.core.residual_layers`): the
Schur test ``c = maxᵢ (|WᵀW|w)ᵢ/wᵢ`` with ``w`` from ten power iterations on ``|WᵀW|``; it is
valid for every positive ``w`` (the iteration only tightens it), exact for the orthogonal
(delta-orthogonal) kernels training starts from, stateless and differentiable, at the cost of the
Gram matrix SLL also computes. Its price: ``c = ρ(|WᵀW|) ≥ ‖W‖²``, so a trained layer's reflection
is weaker than the paper's (docs/plugins.md, "#### cpl", measures the ratio). Convolutions: the
same with the kernel's autocorrelation bound (:func:`lipgan.core.residual_layers.conv_abs_gram`),
valid at any image size.

The critic is rewritten as for ``sll`` (:class:`lipgan.core.residual_layers.ResidualConstruction`):
square Dense → CPL dense layer, shape-preserving Conv2D → CPL conv layer, every other Dense/Conv2D →
AOL-rescaled (:mod:`lipgan_plugins.aol`), each such Conv2D followed by a CPL conv layer.
"""

from lipgan import hookimpl
from lipgan_plugins.aol_residual import AOLResidualConstruction


class CPL(AOLResidualConstruction):
    """Rebuild the critic from CPL residual layers and AOL-rescaled changes of shape (module doc).

    Args and errors: :class:`lipgan_plugins.aol_residual.AOLResidualConstruction`.
    """

    name = "cpl"
    kind = "cpl"
    description = (
        "Convex potential layers (Meunier et al. 2022): residual x − (2/c)·W·relu(Wᵀx + b) with "
        "c a certified bound on ‖W‖², 1-Lipschitz by construction; AOL for changes of shape."
    )


@hookimpl
def lipgan_register_constraints(register):
    register(CPL)
