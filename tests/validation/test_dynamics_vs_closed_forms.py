"""mbkron's planar dynamics against the independent closed forms of seeds 000, 001 and 003.

validation.closed_form imports nothing from mbkron; here mbkron's generalized forces, muscle torques
and joint reaction forces must equal them to 1e-10 relative.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mbkron import examples as models
from mbkron.multibody.loads import LineForce
from validation.closed_form import cesari_three_link as cesari
from validation.closed_form import duarte_two_link as duarte
from validation.closed_form import planar_chain as seed000

RTOL = 1e-10


def close(actual, desired):
    scale = max(np.abs(desired).max(), 1.0)
    np.testing.assert_allclose(actual, desired, rtol=0, atol=RTOL * scale)


def random_chain(rng, n):
    """The same random chain for both sides: seed-000 parameters and mbkron's model."""
    params = dict(l=rng.uniform(0.2, 0.6, n), l_C=rng.uniform(0.05, 0.3, n), eps_C=rng.uniform(-0.4, 0.4, n),
                  m=rng.uniform(0.5, 5.0, n), I_C=rng.uniform(0.01, 0.2, n))
    contacts, muscles = [], []
    for link in rng.choice(np.arange(1, n + 1), size=min(n, 3), replace=False):
        contacts.append(dict(link=int(link), magnitude=float(rng.uniform(-20, 20)), l_R=float(rng.uniform(0, 0.5)),
                             eps_R=float(rng.uniform(-1, 1)), gamma_R=float(rng.uniform(-3, 3))))
    for _ in range(n + 1):
        j1 = int(rng.integers(0, n))
        j2 = int(rng.integers(j1 + 1, n + 1))  # spans 1 .. n joints
        muscles.append(dict(j1=j1, point1=tuple(rng.uniform(-0.1, 0.3, 2)), j2=j2,
                            point2=tuple(rng.uniform(-0.1, 0.3, 2)), tension=float(rng.uniform(10, 200))))
    reference = seed000.PlanarChain(
        **params,
        contacts=tuple(seed000.ContactForce(**c) for c in contacts),
        muscles=tuple(seed000.Muscle(m["j1"], m["point1"], m["j2"], m["point2"], m["tension"]) for m in muscles),
    )

    def build(coordinates):
        return models.planar_chain(
            params["l"], params["l_C"], params["eps_C"], params["m"], params["I_C"],
            contacts=[models.ChainContact(**c) for c in contacts],
            muscles=[models.ChainMuscle(**m) for m in muscles], coordinates=coordinates,
        )

    return reference, build("absolute"), build("relative")


def split_loads(model):
    muscle_loads = tuple(load for load in model.loads if isinstance(load, LineForce))
    others = tuple(load for load in model.loads if not isinstance(load, LineForce))
    return muscle_loads, others


@pytest.mark.parametrize("n", range(1, 9))
def test_seed_000_torques_and_reactions(n):
    rng = np.random.default_rng(1000 + n)
    reference, absolute, relative = random_chain(rng, n)
    for _ in range(3):
        theta, theta_dot, theta_ddot = rng.uniform(-2, 2, size=(3, n))
        tau = seed000.joint_torques(reference, theta, theta_dot, theta_ddot)  # Eq. 23
        close(seed000.joint_torques_proximal(reference, theta, theta_dot, theta_ddot), tau)  # Eq. 24 == Eq. 23
        # relative coordinates α: τ_k is the generalized force conjugate to α_k
        alpha = seed000.relative_from_absolute(theta)
        alpha_dot, alpha_ddot = seed000.relative_from_absolute(theta_dot), seed000.relative_from_absolute(theta_ddot)
        muscles, contacts = split_loads(relative)
        close(relative.inverse_dynamics(alpha, alpha_dot, alpha_ddot, loads=contacts), tau)
        close(relative.applied_forces(alpha, alpha_dot, muscles), seed000.muscle_joint_torques(reference, theta))  # Eq. 22
        # absolute coordinates θ: the conjugate generalized forces are τ_k − τ_{k+1} (Eq. 20)
        muscles, contacts = split_loads(absolute)
        close(absolute.inverse_dynamics(theta, theta_dot, theta_ddot, loads=contacts),
              seed000.absolute_generalized_forces(tau))
        # reactions: φ_{k,k+1} is the force on link k from link k+1 (Eq. 9); mbkron reports the force
        # on body k+1 from its parent k. Muscles and contacts act at body points.
        phi = seed000.joint_reaction_forces(reference, theta, theta_dot, theta_ddot)
        close(seed000.joint_reaction_forces_proximal(reference, theta, theta_dot, theta_ddot), phi)  # Eq. 10
        reactions = absolute.joint_reactions(theta, theta_dot, theta_ddot)
        close(reactions.force[:, :2], -phi)
        np.testing.assert_allclose(reactions.force[:, 2], 0.0, atol=1e-12)


def test_seed_000_unique_contributions_sum_to_the_torques():
    """Each muscle's unique contribution equals mbkron's generalized force of that muscle alone."""
    rng = np.random.default_rng(7)
    reference, _, relative = random_chain(rng, 5)
    theta = rng.uniform(-1, 1, 5)
    alpha = seed000.relative_from_absolute(theta)
    contributions = seed000.muscle_torque_contributions(reference, theta)  # (..., muscles, n)
    muscles, _ = split_loads(relative)
    for index, muscle in enumerate(muscles):
        close(relative.applied_forces(alpha, np.zeros(5), (muscle,)), contributions[index])


def test_cesari_three_link():
    rng = np.random.default_rng(3)
    arm, spring = cesari.EXAMPLE_ARM, cesari.EXAMPLE_SPRING
    model = models.three_link_arm(**dataclasses.asdict(arm), spring_force=spring)
    for _ in range(5):
        a, ad, add = rng.uniform(-2, 2, size=(3, 3))
        close(model.mass_matrix(a), cesari.inertia_matrix(arm, a))
        close(model.velocity_forces(a, ad), cesari.velocity_torques(arm, a, ad))
        close(-model.gravity_forces(a), cesari.gravity_torques(arm, a))
        close(model.inverse_dynamics(a, ad, add), cesari.joint_moments(arm, a, ad, add, spring_force=spring))
        solution = cesari.newton_euler(arm, a, ad, add, spring_force=spring)
        close(model.joint_reactions(a, ad, add).force[:, :2], solution.reaction_forces)


def test_duarte_two_link():
    rng = np.random.default_rng(4)
    p = duarte.dempster_parameters()
    model = models.two_link_arm()
    reference_values = [p.L1, p.L2, p.d1, p.d2, p.m1, p.m2, p.I1, p.I2]
    assert np.allclose(list(models.dempster_two_link().values()), reference_values, rtol=1e-15)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, size=(3, 2))
        close(model.mass_matrix(q), duarte.inertia_matrix(p, q))
        close(model.velocity_forces(q, qd), duarte.coriolis_centripetal(p, q, qd))
        close(-model.gravity_forces(q), duarte.gravity_torques(p, q))
        close(model.inverse_dynamics(q, qd, qdd), duarte.joint_torques(p, q, qd, qdd))
        solution = duarte.newton_euler(p, q, qd, qdd)
        close(model.joint_reactions(q, qd, qdd).force[:, :2], solution.reaction_forces)
