"""``sll``: SDP-based Lipschitz Layers (Araujo et al., ICLR 2023), residual and 1-Lipschitz.

"A Unified Algebraic Perspective on Lipschitz Neural Networks", Theorem 3: for any W, b and any
positive q, the residual layer

    h(x) = x − 2·W·T⁻¹·relu(Wᵀx + b),   T = diag(Σⱼ |WᵀW|ᵢⱼ qⱼ/qᵢ)

is 1-Lipschitz (``T − WᵀW`` is diagonally dominant after the scaling by q, so ``T ≽ WᵀW``, and the
layer's Jacobian between any two points has eigenvalues in [−1, 1]). The convolutional form takes
``Wᵀx`` as a stride-1 convolution, ``W·h`` as its transposed convolution and T from the kernel's
autocorrelation. Reference code: ``github.com/araujoalexandre/Lipschitz-SLL-Networks``
(``core/models/layers.py``: ``SDPBasedLipschitzConvLayer``, ``SDPBasedLipschitzDense``). The
layers and their certificates are :mod:`lipgan.core.residual_layers`; the critic rewrite is
:class:`lipgan.core.residual_layers.ResidualConstruction`:

* a square Dense (the MLP critic's 512 → 512 layers) becomes an SLL dense layer of that width;
* a shape-preserving Conv2D becomes an SLL conv layer;
* every other Dense/Conv2D (the first and last Dense, the DCGAN critic's stride-2 convs and its
  output) becomes an AOL-rescaled layer (:mod:`lipgan_plugins.aol`, orthogonal / delta-orthogonal
  start), and each such Conv2D is followed by an SLL conv layer (``kernel_size``: 1 by default,
  1.37x a plain DCGAN critic step's FLOPs and 1.58x its time; the reference's 3 triples both) at
  its output channels.

Differences from the reference: kernels start orthogonal (Dense) or delta-orthogonal (Conv), where
T is exact (T = I), instead of Xavier-normal; q starts at 1 (the reference: ``exp(randn)``); biases
start at 0. Stateless (T is recomputed from the weights at every call): replica-invariant and
XLA-safe with no sync. ``lipschitz_bound`` recomputes each layer's certificate in float64.
"""

from lipgan import hookimpl
from lipgan_plugins.aol_residual import AOLResidualConstruction


class SLL(AOLResidualConstruction):
    """Rebuild the critic from SLL residual layers and AOL-rescaled changes of shape (module doc).

    Args and errors: :class:`lipgan_plugins.aol_residual.AOLResidualConstruction`.
    """

    name = "sll"
    kind = "sll"
    description = (
        "SDP-based Lipschitz layers (Araujo et al. 2023): residual x − 2W·T⁻¹·relu(Wᵀx + b), "
        "1-Lipschitz by construction; AOL layers for changes of width and stride."
    )


@hookimpl
def lipgan_register_constraints(register):
    register(SLL)
