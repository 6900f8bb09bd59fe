"""Derivatives of the dynamics against Pinocchio's (issue 30): ``computeRNEADerivatives`` and
``computeABADerivatives`` on random 3-D chains.

Run from the repository root (needs ``pip install pin``)::

    python -m validation.pinocchio_derivatives [--save tests/data/pinocchio_derivatives.npz]

The chains are :func:`benchmarks.bench_forward_dynamics.random_chain` (the same bodies, revolute joints about
random axes, offsets and inertias built in both libraries; 3, 7 and 20 bodies), at seeded random states. For each,
mbkron's :meth:`~mbkron.Model.inverse_dynamics_derivatives` and :meth:`~mbkron.Model.forward_dynamics_derivatives`
are compared with Pinocchio's ``dtau_dq``, ``dtau_dv``, ``M`` and ``ddq_dq``, ``ddq_dv``, ``Minv``, entry by entry,
relative to each matrix's largest entry; exits 1 if any exceeds 1e-10. ``--save`` writes the states and Pinocchio's
matrices, which ``tests/test_derivatives.py`` holds mbkron to where Pinocchio is not installed (CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_forward_dynamics import random_chain  # noqa: E402

SIZES = (3, 7, 20)
STATES = 4
TOLERANCE = 1e-10


def pinocchio_values(size: int) -> dict[str, np.ndarray]:
    """The seeded states of the ``size``-body chain and Pinocchio's derivatives there (``pin`` must be installed)."""
    import pinocchio as pin

    _, pin_model = random_chain(size)
    data = pin_model.createData()
    rng = np.random.default_rng(size)
    q, qd, qdd, tau = rng.uniform(-1.0, 1.0, (4, STATES, size))
    out = {name: [] for name in ("dtau_dq", "dtau_dv", "M", "ddq_dq", "ddq_dv", "Minv")}
    for s in range(STATES):
        pin.computeRNEADerivatives(pin_model, data, q[s], qd[s], qdd[s])
        out["dtau_dq"].append(data.dtau_dq.copy())
        out["dtau_dv"].append(data.dtau_dv.copy())
        M = data.M.copy()
        out["M"].append(np.triu(M) + np.triu(M, 1).T)  # Pinocchio fills the upper triangle
        pin.computeABADerivatives(pin_model, data, q[s], qd[s], tau[s])
        out["ddq_dq"].append(data.ddq_dq.copy())
        out["ddq_dv"].append(data.ddq_dv.copy())
        Minv = data.Minv.copy()
        out["Minv"].append(np.triu(Minv) + np.triu(Minv, 1).T)
    return {"q": q, "qd": qd, "qdd": qdd, "tau": tau, **{name: np.array(v) for name, v in out.items()}}


def differences(size: int, values: dict[str, np.ndarray]) -> dict[str, float]:
    """mbkron's derivatives of the ``size``-body chain at ``values``' states against ``values``' matrices: the
    largest difference of each, relative to the matrix's largest entry."""
    model, _ = random_chain(size)
    inverse = model.inverse_dynamics_derivatives(values["q"], values["qd"], values["qdd"])
    forward = model.forward_dynamics_derivatives(values["q"], values["qd"], values["tau"])
    ours = {"dtau_dq": inverse.dtau_dq, "dtau_dv": inverse.dtau_dqd, "M": inverse.mass_matrix,
            "ddq_dq": forward.dqdd_dq, "ddq_dv": forward.dqdd_dqd, "Minv": forward.dqdd_dtau}
    return {name: float(np.abs(ours[name] - values[name]).max() / np.abs(values[name]).max()) for name in ours}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="write the states and Pinocchio's matrices to this .npz")
    arguments = parser.parse_args(argv)
    saved, worst = {}, 0.0
    for size in SIZES:
        values = pinocchio_values(size)
        found = differences(size, values)
        worst = max(worst, *found.values())
        print(f"{size:2d} bodies: " + ", ".join(f"{name} {value:.1e}" for name, value in found.items()))
        saved.update({f"{size}/{name}": value for name, value in values.items()})
    print(f"largest relative difference {worst:.1e} (tolerance {TOLERANCE:g})")
    if arguments.save is not None:
        arguments.save.parent.mkdir(parents=True, exist_ok=True)
        temporary = arguments.save.with_suffix(".tmp.npz")
        np.savez_compressed(temporary, **saved)
        temporary.replace(arguments.save)
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
