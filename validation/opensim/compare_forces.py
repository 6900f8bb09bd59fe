"""mbkron's force elements against OpenSim 4.6: BushingForce, CoordinateLimitForce, Ligament, PathSpring,
PointToPointSpring.

For each model of :data:`MODELS` and each of its force elements, at the states of
:func:`force_states`, OpenSim's generalized force of that element alone is

    Q = Cᵀ (τ(off) − τ(on)),

``τ`` being ``InverseDynamicsSolver.solve`` at the state's ``q``, ``u = C q̇`` and ``u̇ = 0`` with every
force disabled (``off``) or with only that element applying its force (``on``,
``Force.setAppliesForce(state, True)``): ``τ = M u̇ + c(q, u) − g(q) − f``, so the difference is the
element's generalized force ``f`` conjugate to ``u``, reduced to the model's coordinates by ``C``
(couplers, locked coordinates and the speeds set as in :mod:`validation.opensim.compare_osim`). mbkron's
is ``model.applied_forces(q, q̇, loads=(load,))``; the elements are matched by order (the ForceSet's
CoordinateLimitForces, PathSprings, PointToPointSprings, Ligaments and BushingForces are the model's loads,
in file order).

Models: the two gait10dof18musc files with springs of the public collection (``gait10dof18musc_spring``:
the CoordinateLimitForce ``AnkleLimitSpringDamper``; ``gait10dof18musc_path_spring``: the PathSpring
``BiarticularSpringDamper`` with a conditional point), at the default pose and seeded random poses in the
ranges with normal random speeds, and ``forces`` (:func:`write_force_model`, written by OpenSim's API):
two PinJoints and a SliderJoint, a CoordinateLimitForce on an angle and one on the slider, a PathSpring
over three bodies with a ConditionalPathPoint, a PointToPointSpring and a Ligament over three bodies with
OpenSim's default force-length curve and a BushingForce between offset frames of the first and the third
body (rotated frames, every axis stiff and damped), at chosen states that put each limited coordinate inside its limits,
in each transition and beyond each limit, the path spring slack and taut, and the ligament slack, on its
curve's rising part and beyond it (:data:`FORCE_MODEL_STATES`, :data:`LIGAMENT_RESTING_LENGTH`).

Run ``python -m validation.opensim.compare_forces`` from the repository root: it writes
``tests/data/osim/forces_<model>.json`` (read by ``tests/test_osim_forces.py``) and prints mbkron's
largest deviation per element, relative to the largest entry of OpenSim's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import tempfile
from pathlib import Path

import numpy as np

from validation.opensim.compare_osim import DATA, OpenSimModel, load_mbkron, rounded, states, stored_osim

#: Stored models (``tests/data/osim/<name>.osim.gz``) and the written one.
MODELS = ("gait10dof18musc_spring", "gait10dof18musc_path_spring", "forces")
FORCE_TYPES = ("BushingForce", "CoordinateLimitForce", "Ligament", "PathSpring", "PointToPointSpring")
FORCE_MODEL = "forces"
#: States of ``forces`` (coordinates a, b in rad, s in m): b's limits are [-30°, 20°] with a 5° transition,
#: s's [-0.05, 0.1] m with 0.02 m; the path spring's resting length is 1.3 m, its conditional point
#: active for b in [-0.3, 1] rad.
FORCE_MODEL_STATES = (
    (0.0, 0.0, 0.0),                     # inside both limits; path spring slack (1.25 m)
    (0.3, math.radians(22.0), 0.11),     # b and s in their upper transitions; taut
    (-0.4, math.radians(40.0), 0.2),     # beyond both upper limits; taut
    (0.5, math.radians(-32.0), -0.06),   # in the lower transitions; taut, conditional point inactive
    (-0.2, math.radians(-60.0), -0.15),  # beyond both lower limits; slack (1.17 m), conditional point inactive
    (1.2, math.radians(10.0), 0.05),     # inside; taut (1.53 m)
    (-1.0, math.radians(-10.0), -0.03),  # inside; taut (1.39 m)
)
STATES = 6
#: The ligament ``tether``'s resting length (m): its path is 0.38–1.19 m long at the states of ``forces``, so
#: that it is slack at two of them (strains 0.76, 0.90) and taut at the others, on the curve's rising part
#: (1.05, 1.16, 1.41) and beyond its 1.6 L₀ (1.62, 2.38).
LIGAMENT_RESTING_LENGTH = 0.5


def write_force_model(path: Path) -> None:
    """The model ``forces`` written by OpenSim's API (see the module docstring)."""
    import opensim as osim

    model = osim.Model()
    model.setName("forces")
    ground = model.getGround()
    bodies = []
    for k, (mass, com) in enumerate(((2.0, (0.1, -0.3, 0.02)), (1.5, (0.05, -0.25, -0.01)), (0.8, (0.02, -0.1, 0.03)))):
        body = osim.Body(f"b{k + 1}", mass, osim.Vec3(*com), osim.Inertia(0.03, 0.02, 0.025, 0.001, -0.002, 0.003))
        model.addBody(body)
        bodies.append(body)
    joints = (osim.PinJoint("ja", ground, osim.Vec3(0, 1, 0), osim.Vec3(0.1, 0, 0.2), bodies[0], osim.Vec3(0), osim.Vec3(0)),
              osim.PinJoint("jb", bodies[0], osim.Vec3(0, -0.5, 0), osim.Vec3(0, 0, 0.3), bodies[1], osim.Vec3(0), osim.Vec3(0)),
              osim.SliderJoint("js", bodies[1], osim.Vec3(0, -0.4, 0), osim.Vec3(0, 0, -0.5), bodies[2], osim.Vec3(0),
                               osim.Vec3(0)))
    for joint, name, low, high in zip(joints, ("a", "b", "s"), (-2.0, -2.0, -0.5), (2.0, 2.0, 0.5)):
        coordinate = joint.upd_coordinates(0)
        coordinate.setName(name)
        coordinate.setRangeMin(low)
        coordinate.setRangeMax(high)
        model.addJoint(joint)
    # stiffness per degree (per metre for s), limits and transition in degrees (metres)
    model.addForce(osim.CoordinateLimitForce("b", 20.0, 3.0, -30.0, 1.5, 0.05, 5.0))
    model.addForce(osim.CoordinateLimitForce("s", 0.1, 400.0, -0.05, 300.0, 20.0, 0.02))
    spring = osim.PathSpring("band", 1.3, 800.0, 0.3)
    geometry = spring.updGeometryPath()
    geometry.appendNewPathPoint("p0", ground, osim.Vec3(0.2, 0.1, 0.1))
    geometry.appendNewPathPoint("p1", bodies[0], osim.Vec3(0.05, -0.3, 0.05))
    conditional = osim.ConditionalPathPoint()
    conditional.setName("p2")
    conditional.updSocket("parent_frame").setConnecteePath("/bodyset/b2")
    conditional.set_location(osim.Vec3(0.04, -0.1, 0.0))
    conditional.updSocket("coordinate").setConnecteePath("/jointset/jb/b")
    conditional.setRangeMin(-0.3)
    conditional.setRangeMax(1.0)
    geometry.updPathPointSet().cloneAndAppend(conditional)
    geometry.appendNewPathPoint("p3", bodies[2], osim.Vec3(-0.03, -0.05, 0.02))
    model.addForce(spring)
    model.addForce(osim.PointToPointSpring(bodies[0], osim.Vec3(0.1, -0.2, 0.0), bodies[2], osim.Vec3(0.0, 0.05, 0.0),
                                           250.0, 0.3))
    ligament = osim.Ligament()  # OpenSim's default force-length curve
    ligament.setName("tether")
    ligament.set_resting_length(LIGAMENT_RESTING_LENGTH)
    ligament.set_pcsa_force(900.0)
    geometry = ligament.updGeometryPath()
    geometry.appendNewPathPoint("l0", ground, osim.Vec3(0.1, 0.2, 0.0))
    geometry.appendNewPathPoint("l1", bodies[1], osim.Vec3(0.02, -0.2, 0.0))
    geometry.appendNewPathPoint("l2", bodies[2], osim.Vec3(0.0, 0.02, 0.01))
    model.addForce(ligament)
    # a bushing between offset frames of b1 and b3 (orientations body-fixed X-Y-Z, rad), every axis stiff and damped
    def transform(location, angles):
        axes = [value for k, angle in enumerate(angles) for value in (angle, osim.CoordinateAxis(k))]
        return osim.Transform(osim.Rotation(osim.BodyRotationSequence, *axes), osim.Vec3(*location))

    # (translational stiffness, rotational stiffness, translational damping, rotational damping)
    model.addForce(osim.BushingForce("mount", bodies[0], transform((0.05, -0.25, 0.02), (0.3, -0.2, 0.5)),
                                     bodies[2], transform((-0.02, 0.04, 0.01), (-0.1, 0.4, 0.2)),
                                     osim.Vec3(300.0, 500.0, 200.0), osim.Vec3(20.0, 35.0, 15.0),
                                     osim.Vec3(3.0, 4.0, 2.0), osim.Vec3(0.5, 0.8, 0.3)))
    model.finalizeConnections()
    model.printToXML(str(path))


def force_states(name: str, model, opensim_model: OpenSimModel) -> tuple[np.ndarray, np.ndarray]:
    """``q`` and ``q̇`` of the comparison: :data:`FORCE_MODEL_STATES` for ``forces``, else
    :func:`~validation.opensim.compare_osim.states`; normal random speeds (seeded)."""
    if name == FORCE_MODEL:
        q = np.array(FORCE_MODEL_STATES)
        return q, np.random.default_rng(7).normal(size=q.shape)
    q, qd, _ = states(model, opensim_model, STATES)
    qd[0] = np.random.default_rng(7).normal(size=q.shape[1])
    return q, qd


def reference(name: str, path: Path) -> dict:
    """The OpenSim side: every force element's reduced generalized force at :func:`force_states`."""
    model = load_mbkron(path)
    opensim_model = OpenSimModel(path, list(model.coordinates), False)
    forces = opensim_model.model.getForceSet()
    elements = [forces.get(k) for k in range(forces.getSize()) if forces.get(k).getConcreteClassName() in FORCE_TYPES]
    q, qd = (np.reshape(rounded(a), a.shape) for a in force_states(name, model, opensim_model))
    generalized = []
    for row, rate in zip(q, qd):
        values, u, C, _, _ = opensim_model.reduction(row, rate, np.zeros_like(row))
        zero = np.zeros(len(u))
        off = opensim_model.residual(values, u, zero)
        per_element = []
        for element in elements:
            element.setAppliesForce(opensim_model.state, True)
            per_element.append(C.T @ (off - opensim_model.residual(values, u, zero)))
            element.setAppliesForce(opensim_model.state, False)
        generalized.append(per_element)
    return {"model": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "opensim": opensim_model.osim.__version__, "coordinates": list(model.coordinates),
            "elements": [f"{e.getConcreteClassName()} {e.getName()}" for e in elements],
            "q": rounded(q), "qd": rounded(qd), "generalized_forces": rounded(generalized)}


def deviations(data: dict, path: Path) -> dict[str, float]:
    """mbkron's largest deviation from :func:`reference` per element, relative to OpenSim's largest entry."""
    model = load_mbkron(path)
    nq, count = len(data["coordinates"]), len(data["elements"])
    q = np.reshape(data["q"], (-1, nq))
    qd = np.reshape(data["qd"], q.shape)
    theirs = np.reshape(data["generalized_forces"], (len(q), count, nq))
    if len(model.loads) != count:
        raise AssertionError(f"{data['model']}: mbkron has {len(model.loads)} loads, OpenSim {count} elements")
    out = {}
    for k, (label, load) in enumerate(zip(data["elements"], model.loads)):
        ours = model.applied_forces(q, qd, loads=(load,))
        out[label] = float(np.abs(ours - theirs[:, k]).max() / max(np.abs(theirs[:, k]).max(), 1e-300))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--no-write", action="store_true", help="compare only; do not rewrite tests/data/osim")
    args = parser.parse_args(argv)
    for name in args.models:
        with tempfile.TemporaryDirectory() as directory:
            if name == FORCE_MODEL:
                path = Path(directory) / f"{name}.osim"
                write_force_model(path)
                if not args.no_write:
                    (DATA / f"{name}.osim.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            else:
                path = stored_osim(name, Path(directory))
            data = reference(name, path)
            found = deviations(data, path)
        if not args.no_write:
            (DATA / f"forces_{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"{name}: " + ", ".join(f"{k} {v:.1e}" for k, v in found.items()))


if __name__ == "__main__":
    main()
