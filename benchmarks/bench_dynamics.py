"""M + N q̇ + G of the planar n-link chain: mbkron against a hand-written numpy closed form.

Run from the repository root: ``python benchmarks/bench_dynamics.py``. The baseline is the chain's
closed form in absolute angles (links with centres of mass on their axes),

    M_ij = K_ij cos(θ_i − θ_j) + δ_ij I_i,  (N q̇)_i = Σ_j K_ij sin(θ_i − θ_j) θ̇_j²,
    G_i = −g cos θ_i Σ_k m_k a_ki,           K = aᵀ diag(m) a,

with ``a_ki = l_i`` (i < k), ``d_k`` (i = k), 0 (i > k): one vectorised numpy expression per term,
checked against mbkron before timing. Prints µs per state and ratios, one state and 10 000 states in
one batched call, for n = 7, then a scaling table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import best_time, machine  # noqa: E402
from mbkron import examples as models  # noqa: E402

G = 9.81


def chain_parameters(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return dict(l=rng.uniform(0.2, 0.5, n), d=rng.uniform(0.05, 0.2, n), m=rng.uniform(0.5, 3, n),
                I=rng.uniform(0.005, 0.05, n))


def closed_form(p: dict[str, np.ndarray]):
    """A hand-written closed-form M, N q̇, G for the chain, vectorised over leading axes."""
    n = p["l"].size
    a = np.tril(np.broadcast_to(p["l"], (n, n)), -1) + np.diag(p["d"])  # a[k, i]
    K = a.T @ (p["m"][:, None] * a)
    weight = p["m"] @ a
    inertia = np.diag(p["I"])

    def terms(theta, theta_dot):
        c, s = np.cos(theta), np.sin(theta)
        cos_ij = c[..., :, None] * c[..., None, :] + s[..., :, None] * s[..., None, :]
        sin_ij = s[..., :, None] * c[..., None, :] - c[..., :, None] * s[..., None, :]
        M = K * cos_ij + inertia
        N = ((K * sin_ij) @ (theta_dot**2)[..., None])[..., 0]
        return M, N, -G * c * weight

    return terms


def mbkron_chain(p: dict[str, np.ndarray]):
    n = p["l"].size
    return models.planar_chain(p["l"], p["d"], np.zeros(n), p["m"], p["I"], coordinates="absolute", g=G)


def main() -> None:
    print(f"# M + N q̇ + G, planar chain — {machine()}")
    print(f"{'n':>3} {'closed form µs':>15} {'mbkron µs':>10} {'ratio':>7} {'closed, 10k batch ms':>21} "
          f"{'mbkron, 10k batch ms':>21} {'ratio':>7}")
    for n in (2, 3, 5, 7, 10, 20, 30, 50):
        p = chain_parameters(n)
        reference, model = closed_form(p), mbkron_chain(p)
        rng = np.random.default_rng(0)
        theta, theta_dot = rng.uniform(-2, 2, size=(2, n))
        terms = model.equations_of_motion(theta, theta_dot, loads=())
        for mine, theirs in zip((terms.mass_matrix, terms.velocity_forces, terms.gravity_forces),
                                reference(theta, theta_dot)):
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10)
        single_ref = best_time(lambda: reference(theta, theta_dot))
        single = best_time(lambda: model.equations_of_motion(theta, theta_dot, loads=()))
        batch = rng.uniform(-2, 2, size=(2, 10_000, n))
        batch_ref = best_time(lambda: reference(*batch), repeat=3)
        batched = best_time(lambda: model.equations_of_motion(*batch, loads=()), repeat=3)
        print(f"{n:3d} {single_ref * 1e6:15.1f} {single * 1e6:10.1f} {single / single_ref:7.2f} "
              f"{batch_ref * 1e3:21.2f} {batched * 1e3:21.2f} {batched / batch_ref:7.2f}")


if __name__ == "__main__":
    main()
