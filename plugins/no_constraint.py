"""``none``: an unconstrained critic, the reference point every benchmark ratio is taken against."""

from lipgan import Constraint, hookimpl


class NoConstraint(Constraint):
    """No Lipschitz constraint at all (the critic loss alone)."""

    name = "none"
    description = "No Lipschitz constraint (baseline for benchmarks)."


@hookimpl
def lipgan_register_constraints(register):
    register(NoConstraint)
