"""mbkron's contact forces against OpenSim 4.6: SmoothSphereHalfSpaceForce and HuntCrossleyForce.

For each model of :data:`MODELS` and each of its contact forces, at the states of :func:`contact_states`,
OpenSim's side is

- of a SmoothSphereHalfSpaceForce, the spatial forces it applies to the sphere's body and to the half-space's
  body (``getRecordValues``: force and torque about the body's origin, in ground);
- its generalized force alone, ``Q = Cᵀ (τ(off) − τ(on))`` as in :mod:`validation.opensim.compare_forces`
  (``InverseDynamicsSolver.solve`` with ``u̇ = 0``, gravity off and every other force element of the
  model — ForceSet and model components alike — disabled, so that ``τ`` is the bias and the element's
  force only).

mbkron's are :func:`~mbkron.algorithms.dynamics.contact.contact_state` (the force ``F`` on the
half-space body at the contact point ``p``: the sphere's body gets ``−F`` and the torque
``(p − o)×(−F)`` about its origin ``o``) and ``model.applied_forces(q, q̇, loads=(load,))`` (the contact
loads are matched to OpenSim's contact forces by order).

States: seeded random poses inside the coordinates' ranges (±1 where infinite); in each, one contact
(in turn; of a Hunt–Crossley set a random pair of its surfaces) is brought to a drawn depth by Newton steps
on the coordinate its depth depends on most (a third of the states each: penetrating, 0.5–20 mm; touching,
|δ| ≤ 2 mm, inside the Hertz switch's width 1/b_d; separated, 2–15 mm apart; for a Hunt–Crossley pair
0.2–10 mm, 0–0.2 mm and 0–10 mm apart); normal random speeds scaled by ``10^U(−2, 0.5)`` so
that the slip speeds fall below, around and above the transition velocity and the normal speeds on both
sides of the Hunt–Crossley switch ``−2/(3c)``.

Models: Moco's 2-D walking model (``moco_2D_gait``, 4 spheres on the feet against the floor: 10
coordinates), Moco's 3-D running test model (``moco_3D_running``, 8 spheres, 20 coordinates), OpenSim's test
model ``BouncingBall_SmoothSphereHalfSpace`` (a ball on a FreeJoint; its
rotations' speeds are angular velocities, reduced by ``C`` as in ``compare_osim``) and ``contact``
(:func:`write_contact_model`: half-spaces on moving bodies, tilted and offset, a sphere on the ground, static
friction above dynamic), ``hunt_crossley`` (the same with one HuntCrossleyForce) and opensim-models'
``DynamicJumperModel``, ``SoccerKickingModel``, ``WalkerModel`` and ``ToyLandingModel`` (HuntCrossleyForces;
only generalized forces are compared for those).

Run ``python -m validation.opensim.compare_contact`` from the repository root: it writes
``tests/data/osim/contact_<model>.json.gz`` (read by ``tests/test_osim_contact.py``) and prints mbkron's
largest deviations (:func:`deviations`).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import tempfile
from unittest import mock
from pathlib import Path

import numpy as np

from mbkron.algorithms.dynamics.contact import contact_state
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.algorithms.dynamics.hunt_crossley import hunt_crossley_depths
from mbkron.multibody.hunt_crossley import HuntCrossley
from validation.opensim import compare_osim
from validation.opensim.compare_osim import DATA, OpenSimModel, load_mbkron, rounded, stored_osim

#: Stored models (``tests/data/osim/<name>.osim.gz``; ``contact`` is written by :func:`write_contact_model`).
MODELS = ("moco_2D_gait", "moco_3D_running", "BouncingBall_SmoothSphereHalfSpace", "contact", "hunt_crossley",
          "DynamicJumperModel", "SoccerKickingModel", "WalkerModel", "ToyLandingModel")
CONTACT_MODEL, HUNT_CROSSLEY_MODEL = "contact", "hunt_crossley"
#: ``hunt_crossley``'s force: (geometries, (stiffness, dissipation, static, dynamic, viscous friction)) per
#: ``ContactParameters``; its transition velocity is 0.05 m/s.
HUNT_CROSSLEY_PARAMETERS = ((("floor", "knob"), (2e6, 1.5, 0.9, 0.6, 0.1)), (("toe", "heel", "ball"), (5e5, 0.8, 0.7, 0.5, 0.2)),
                            (("lid",), (1e6, 0.3, 0.0, 0.4, 0.0)))
CONTACT_TYPES = ("SmoothSphereHalfSpaceForce", "HuntCrossleyForce")
#: States per model (a third in each regime).
STATES = 240
REGIMES = {"penetrating": (0.5e-3, 20e-3), "touching": (-2e-3, 2e-3), "separated": (-15e-3, -2e-3)}
#: The depths of a Hunt–Crossley pair drawn in each regime (its force starts at δ = 0).
HC_REGIMES = {"penetrating": (0.2e-3, 10e-3), "touching": (0.0, 0.2e-3), "separated": (-10e-3, 0.0)}


def write_contact_model(path: Path, hunt_crossley: bool = False) -> None:
    """The model ``contact`` written by OpenSim's API: a two-link leg (PinJoints ``hip``, ``knee``) with a toe
    and a heel sphere (the heel's orientation set: it must not matter) against a tilted half-space ``floor``
    with an offset on a plate that slides vertically (SliderJoint ``lift``), and a sphere fixed on the
    ground against a half-space ``lid`` on the thigh; static and dynamic friction differ. With ``hunt_crossley``:
    the model ``hunt_crossley``, the same geometry and a sphere ``ball`` on the thigh in one HuntCrossleyForce
    ``hc`` (:data:`HUNT_CROSSLEY_PARAMETERS`: three materials; its pairs include spheres on one body, on two
    bodies and half-spaces on moving bodies), added to the file OpenSim writes (the Python bindings do not
    expose its ``ContactParameters``).
    """
    import opensim as osim

    model = osim.Model()
    model.setName(CONTACT_MODEL)
    ground = model.getGround()
    inertia = osim.Inertia(0.05, 0.02, 0.04, 0.001, -0.002, 0.003)
    thigh, shank, plate = (osim.Body(name, mass, osim.Vec3(*com), inertia) for name, mass, com in
                           (("thigh", 5.0, (0.0, -0.25, 0.0)), ("shank", 3.0, (0.01, -0.2, 0.0)),
                            ("plate", 10.0, (0.0, 0.0, 0.0))))
    joints = (osim.PinJoint("hip", ground, osim.Vec3(0, 1.0, 0), osim.Vec3(0), thigh, osim.Vec3(0), osim.Vec3(0)),
              osim.PinJoint("knee", thigh, osim.Vec3(0, -0.5, 0), osim.Vec3(0), shank, osim.Vec3(0), osim.Vec3(0)),
              osim.SliderJoint("lift", ground, osim.Vec3(0), osim.Vec3(0, 0, 1.5707963267948966), plate, osim.Vec3(0),
                               osim.Vec3(0, 0, 1.5707963267948966)))
    for body, joint, name, low, high in zip((thigh, shank, plate), joints, ("hip_angle", "knee_angle", "lift_height"),
                                            (-2.0, -2.0, -0.5), (2.0, 2.0, 0.5)):
        model.addBody(body)
        coordinate = joint.upd_coordinates(0)
        coordinate.setName(name)
        coordinate.setRangeMin(low)
        coordinate.setRangeMax(high)
        model.addJoint(joint)
    toe = osim.ContactSphere(0.03, osim.Vec3(0.05, -0.45, 0.02), shank, "toe")
    heel = osim.ContactSphere(0.04, osim.Vec3(-0.03, -0.5, -0.01), shank, "heel")
    heel.set_orientation(osim.Vec3(0.1, 0.2, 0.3))
    knob = osim.ContactSphere(0.05, osim.Vec3(0.3, 0.6, 0.05), ground, "knob")
    floor = osim.ContactHalfSpace(osim.Vec3(0.01, 0.02, -0.03), osim.Vec3(0.2, -0.1, -1.5), plate, "floor")
    lid = osim.ContactHalfSpace(osim.Vec3(0.1, -0.3, 0.0), osim.Vec3(0.0, 0.1, 3.0), thigh, "lid")
    for geometry in (toe, heel, knob, floor, lid):
        model.addContactGeometry(geometry)
    if hunt_crossley:
        model.addContactGeometry(osim.ContactSphere(0.06, osim.Vec3(0.08, -0.2, 0.0), thigh, "ball"))
        model.finalizeConnections()
        model.printToXML(str(path))
        _add_hunt_crossley(path)
        return
    for name, sphere, half_space in (("toe_floor", toe, floor), ("heel_floor", heel, floor), ("knob_lid", knob, lid)):
        force = osim.SmoothSphereHalfSpaceForce(name, sphere, half_space)
        force.set_stiffness(1e6)
        force.set_dissipation(1.5)
        force.set_static_friction(0.9)
        force.set_dynamic_friction(0.6)
        force.set_viscous_friction(0.1)
        force.set_transition_velocity(0.15)
        force.set_constant_contact_force(2e-5)
        force.set_hertz_smoothing(250.0)
        force.set_hunt_crossley_smoothing(40.0)
        model.addForce(force)
    model.finalizeConnections()
    model.printToXML(str(path))


def _add_hunt_crossley(path: Path) -> None:
    """Add ``hunt_crossley``'s HuntCrossleyForce (text) to the ForceSet of the file at ``path``."""
    parameters = "".join(
        f"<HuntCrossleyForce::ContactParameters><geometry>{' '.join(names)}</geometry><stiffness>{k!r}</stiffness>"
        f"<dissipation>{c!r}</dissipation><static_friction>{us!r}</static_friction><dynamic_friction>{ud!r}"
        f"</dynamic_friction><viscous_friction>{uv!r}</viscous_friction></HuntCrossleyForce::ContactParameters>"
        for names, (k, c, us, ud, uv) in HUNT_CROSSLEY_PARAMETERS)
    force = (f'<HuntCrossleyForce name="hc"><HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>'
             f"{parameters}</objects></HuntCrossleyForce::ContactParametersSet><transition_velocity>0.05"
             "</transition_velocity></HuntCrossleyForce>")
    text = path.read_text()
    start = text.index("<ForceSet")
    end = text.index("</ForceSet>", start)
    body = text[start:end]
    body = body.replace("<objects />", f"<objects>{force}</objects>") if "<objects />" in body else \
        body.replace("<objects>", f"<objects>{force}", 1)
    path.write_text(text[:start] + body + text[end:])


class ContactModel(OpenSimModel):
    """An OpenSim model with gravity off and every force element disabled (:func:`reference`)."""

    def __init__(self, path: Path, names: list[str]):
        # the conditional points' ranges are not needed here, and ElementTree cannot read the `::` tags of a
        # HuntCrossleyForce (mbkron's reader can: mbkron.io.osim.xml)
        with mock.patch.object(compare_osim, "conditional_ranges", lambda path: {}), \
                mock.patch.object(compare_osim, "step_knots", lambda path: {}):
            super().__init__(path, names, False)
        osim = self.osim
        self.model.setGravity(osim.Vec3(0.0, 0.0, 0.0))
        self.forces = {}
        for component in self.model.getComponentsList():
            force = osim.Force.safeDownCast(component)
            if force is not None:
                force.set_appliesForce(False)
                if force.getConcreteClassName() in CONTACT_TYPES:
                    self.forces[force.getAbsolutePathString()] = force
        self.state = self.model.initSystem()
        self.q_order = compare_osim.value_indices(self)  # (the values and locks left as initSystem set them)
        # the contacts in file order (ForceSet first, then model components: the order mbkron's loads have)
        self.contacts = [f for f in self.forces.values()]

    def record(self, contact) -> np.ndarray:
        """``getRecordValues`` at the current state: sphere force, torque; half-space force, torque (12)."""
        self.model.realizeDynamics(self.state)
        values = contact.getRecordValues(self.state)
        return np.array([values.get(k) for k in range(values.getSize())])


def contact_loads(model) -> list:
    """The model's contact loads, in order (OpenSim's contact forces, in the same order)."""
    return [load for load in model.loads if isinstance(load, (SmoothSphereHalfSpace, HuntCrossley))]


def contact_states(model, seed: int = 2026) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``q``, ``q̇`` and the regime of each state (see the module docstring)."""
    rng = np.random.default_rng(seed)
    names = model.coordinates
    low = np.array([max(model.coordinate(n).range[0], -1.0) for n in names])
    high = np.array([min(model.coordinate(n).range[1], 1.0) for n in names])
    contacts = contact_loads(model)
    rows, regimes = [], []
    for k in range(STATES):
        regime = tuple(REGIMES)[k % len(REGIMES)]
        for attempt in range(60):  # a contact, pose and pair whose depth Newton steps bring to the target
            load = contacts[(k + attempt // 10) % len(contacts)]  # (another contact after 10 failures)
            bounds = REGIMES[regime] if isinstance(load, SmoothSphereHalfSpace) else HC_REGIMES[regime]
            target = rng.uniform(*bounds)
            q = rng.uniform(low, high)
            pair = int(rng.integers(len(load.pairs()))) if isinstance(load, HuntCrossley) else 0
            for _ in range(30):  # on the coordinate the depth depends on most, at most 1 (rad or m) a step
                delta, gradient = _depth(model, load, pair, q)
                j = int(np.argmax(np.abs(gradient)))
                if abs(delta - target) < 1e-12 or abs(gradient[j]) < 1e-3:
                    break
                q[j] -= np.clip((delta - target) / gradient[j], -1.0, 1.0)
            if abs(delta - target) < 1e-9:
                break
        else:
            raise RuntimeError(f"no pose found with a depth in {bounds} of any contact")
        rows.append(q)
        regimes.append(regime)
    q = np.array(rows)
    qd = rng.normal(size=q.shape) * 10 ** rng.uniform(-2, 0.5, size=(len(q), 1))
    return q, qd, regimes


def _depth(model, load, pair: int, q: np.ndarray, h: float = 1e-7) -> tuple[float, np.ndarray]:
    """The indentation of a smooth contact (or the depth of a Hunt–Crossley set's ``pair``) at ``q`` and its
    gradient (central differences)."""
    def at(x):
        kin = model.kinematics(x, order=1)
        if isinstance(load, HuntCrossley):
            return float(hunt_crossley_depths(model, load, kin)[pair])
        return float(contact_state(model, load, kin, np.zeros_like(x)).indentation)
    steps = np.eye(len(q)) * h
    return at(q), np.array([(at(q + s) - at(q - s)) / (2 * h) for s in steps])


def reference(name: str, path: Path) -> dict:
    """The OpenSim side: every contact's record values and reduced generalized force at :func:`contact_states`."""
    model = load_mbkron(path)
    opensim_model = ContactModel(path, list(model.coordinates))
    q, qd, regimes = contact_states(model)
    q, qd = (np.reshape(rounded(a), a.shape) for a in (q, qd))
    generalized, records = [], []
    for row, rate in zip(q, qd):
        values, u, C, _, _ = opensim_model.reduction(row, rate, np.zeros_like(row))
        zero = np.zeros(len(u))
        off = opensim_model.residual(values, u, zero)
        per_element, per_record = [], []
        for element in opensim_model.contacts:
            element.setAppliesForce(opensim_model.state, True)
            per_element.append(C.T @ (off - opensim_model.residual(values, u, zero)))
            if element.getConcreteClassName() == "SmoothSphereHalfSpaceForce":
                per_record.append(opensim_model.record(element))
            element.setAppliesForce(opensim_model.state, False)
        generalized.append(per_element)
        records.append(per_record)
    return {"model": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "opensim": opensim_model.osim.__version__, "coordinates": list(model.coordinates),
            "elements": [f"{e.getConcreteClassName()} {e.getName()}" for e in opensim_model.contacts],
            "regimes": regimes, "q": rounded(q), "qd": rounded(qd), "generalized_forces": rounded(generalized),
            "records": rounded(records)}


def mbkron_side(data: dict, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """mbkron's record values (states, smooth contacts, 12), generalized forces (states, contacts, nq), switch
    products ``w`` (states, contacts; :func:`switch_product`, 1 for a Hunt–Crossley set) and regimes
    (states, contacts; :func:`regime`) at ``data``'s states."""
    model = load_mbkron(path)
    loads = contact_loads(model)
    nq, count = len(data["coordinates"]), len(data["elements"])
    q = np.reshape(data["q"], (-1, nq))
    qd = np.reshape(data["qd"], q.shape)
    if len(loads) != count:
        raise AssertionError(f"{data['model']}: mbkron has {len(loads)} contact loads, OpenSim {count} contacts")
    kin = model.kinematics(q, order=1)
    records, generalized, switches, regimes = [], [], [], []
    for load in loads:
        generalized.append(model.applied_forces(q, qd, loads=(load,)))
        if isinstance(load, HuntCrossley):
            switches.append(np.ones(len(q)))
            moving = [k for k, (i, j) in enumerate(load.pairs()) if load.surfaces[i].body != load.surfaces[j].body]
            regimes.append(regime(hunt_crossley_depths(model, load, kin)[:, moving].max(axis=-1), 0.2e-3, 0.0))
            continue
        state = contact_state(model, load, kin, qd)
        record = []
        for body, sign in ((load.sphere_body, -1.0), (load.half_space_body, 1.0)):
            origin = np.zeros_like(state.point) if body == "ground" else kin.T[:, model.body_index(body), :3, 3]
            force = sign * state.force
            record += [force, np.cross(state.point - origin, force)]
        records.append(np.concatenate(record, axis=-1))  # sphere force, torque; half-space force, torque
        switches.append(switch_product(load, state))
        regimes.append(regime(state.indentation, 2e-3, -2e-3))
    records = np.stack(records, axis=1) if records else np.zeros((len(q), 0, 12))
    return records, np.stack(generalized, axis=1), np.stack(switches, axis=1), np.stack(regimes, axis=1)


def switch_product(load, state) -> np.ndarray:
    """``w = (½ + ½ tanh(b_d δ)) (½ + ½ tanh(b_v (v_n + 2/(3c))))``, the factor the two switches scale the
    force by. OpenSim rounds each switch to about 1.1e-16 absolute, so where ``w`` is small its own result
    carries a relative rounding error of about 1.1e-16/w (a separated sphere, a fast separation)."""
    vn = np.einsum("...x,...x->...", state.velocity, state.normal)
    hertz = 0.5 + 0.5 * np.tanh(load.hertz_smoothing * state.indentation)
    hunt_crossley = 0.5 + 0.5 * np.tanh(load.hunt_crossley_smoothing * (vn + 2.0 / (3.0 * load.dissipation))) \
        if load.dissipation > 0 else 1.0
    return hertz * hunt_crossley


#: Relative tolerance of the comparison; where the switch product ``w`` is below :data:`SWITCHED`, the
#: tolerance is ``RTOL · SWITCHED / w`` relative (about 9 times OpenSim's own rounding of the switches).
RTOL, SWITCHED = 1e-10, 1e-5


def deviations(data: dict, path: Path) -> dict[str, dict[str, np.ndarray]]:
    """mbkron's deviations from :func:`reference`, for ``"records"`` and ``"Q"``: per state and element,
    ``error`` (largest absolute deviation), ``scale`` (OpenSim's largest entry), ``tolerance``
    (``RTOL · scale · max(1, SWITCHED / w)``, and ``RTOL`` times mbkron's largest entry where OpenSim's is 0)
    ``w``, the :func:`regime` and ``ratio = error / tolerance`` (0 where both are 0); records only of the
    smooth contacts."""
    ours_records, ours_q, w, kinds = mbkron_side(data, path)
    count, nq = len(data["elements"]), len(data["coordinates"])
    smooth = [k for k, label in enumerate(data["elements"]) if label.startswith("SmoothSphereHalfSpaceForce")]
    theirs = {"records": np.reshape(data["records"], (len(ours_q), len(smooth), 12)),
              "Q": np.reshape(data["generalized_forces"], (-1, count, nq))}
    out = {}
    for label, ours in (("records", ours_records), ("Q", ours_q)):
        if not ours.shape[1]:
            continue
        switch, kind = (w[:, smooth], kinds[:, smooth]) if label == "records" else (w, kinds)
        scale = np.abs(theirs[label]).max(axis=-1)
        factor = np.maximum(1.0, SWITCHED / np.maximum(switch, 1e-300))
        tolerance = RTOL * np.maximum(scale, np.abs(ours).max(axis=-1) * (scale == 0)) * factor
        error = np.abs(ours - theirs[label]).max(axis=-1)
        out[label] = {"error": error, "scale": scale, "tolerance": tolerance, "w": switch, "regime": kind,
                      "ratio": np.where(error == 0, 0.0, error / np.where(tolerance > 0, tolerance, 1e-300))}
    return out


def regime(depth: np.ndarray, deep: float, apart: float) -> np.ndarray:
    """``"penetrating"`` (``δ > deep``), ``"touching"`` or ``"separated"`` (``δ < apart``) per depth (a smooth
    contact's indentation, with 2 mm and −2 mm; a Hunt–Crossley set's deepest pair of surfaces on two bodies, with
    0.2 mm and 0)."""
    return np.where(depth > deep, "penetrating", np.where(depth >= apart, "touching", "separated"))


def summary(found: dict[str, dict[str, np.ndarray]]) -> str:
    """The largest relative deviation where ``w ≥ SWITCHED`` and the force is not zero, the counts of such
    (state, contact) pairs and of all per :func:`regime`, and the largest ``error / tolerance`` over all."""
    lines = []
    for label, values in found.items():
        switched = (values["w"] >= SWITCHED) & (values["scale"] > 0)
        relative = np.where(switched, values["error"] / np.where(switched, values["scale"], 1.0), 0.0)
        counts = {r: f"{int(switched[values['regime'] == r].sum())}/{int((values['regime'] == r).sum())}" for r in REGIMES}
        lines.append(f"{label}: {relative.max():.1e} relative at {int(switched.sum())} (state, contact) pairs with "
                     f"w ≥ {SWITCHED:g} and a force (of all: {', '.join(f'{r} {n}' for r, n in counts.items())}); "
                     f"largest error/tolerance over all {values['error'].size}: {values['ratio'].max():.2f}")
    return "; ".join(lines)


def stored(name: str) -> dict:
    """The stored reference of model ``name`` (``tests/data/osim/contact_<name>.json.gz``)."""
    return json.loads(gzip.decompress((DATA / f"contact_{name}.json.gz").read_bytes()))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--no-write", action="store_true", help="compare only; do not rewrite tests/data/osim")
    args = parser.parse_args(argv)
    for name in args.models:
        with tempfile.TemporaryDirectory() as directory:
            if name in (CONTACT_MODEL, HUNT_CROSSLEY_MODEL):
                path = Path(directory) / f"{name}.osim"
                write_contact_model(path, name == HUNT_CROSSLEY_MODEL)
                if not args.no_write:
                    (DATA / f"{name}.osim.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            else:
                path = stored_osim(name, Path(directory))
            data = reference(name, path)
            found = summary(deviations(data, path))
        if not args.no_write:
            text = json.dumps(data, separators=(",", ":")) + "\n"
            (DATA / f"contact_{name}.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        print(f"{name}: {found}")


if __name__ == "__main__":
    main()
