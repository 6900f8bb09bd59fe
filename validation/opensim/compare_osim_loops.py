"""mbkron's import of OpenSim loop-closing constraints against OpenSim 4.6, on four closed chains.

The models of :data:`MODELS`, written by OpenSim 4.6's API (``--write-models``):

- ``four_bar`` (:func:`write_four_bar`): a planar four-bar of three ``PinJoint`` bodies (crank and
  rocker on ground, the coupler on the crank; joint frames turned about ``z``; masses, off-axis mass
  centres and full inertia matrices arbitrary) closed by a ``PointConstraint`` between the coupler's
  tip and the rocker's tip. mbkron's coordinate is the crank angle; the coupler and rocker angles are
  solved (a planar closure, two equations).
- ``weld_chain`` (:func:`write_weld_chain`): a ``PinJoint`` (the swing), ``UniversalJoint``,
  ``PlanarJoint`` and ``SliderJoint`` in series, the last body held by a ``WeldConstraint`` to ground
  where it is at the default pose. mbkron's coordinate is the swing; the six other joint variables
  are solved (six equations).
- ``point_chain`` (:func:`write_point_chain`): the same chain without the planar joint, a point of
  the last body held by a ``PointConstraint`` to ground where it is at the default pose (a spatial
  closure, three equations: the slider and the universal joint's two angles are solved).
- ``line_chain`` (:func:`write_line_chain`): the point chain with the universal joint's first angle
  locked, the tool's point held by a ``PointOnLineConstraint`` on the ground line along ``x`` through its
  place at the default pose (two equations, the components across the line: the slider and the
  universal joint's second angle are solved).

(docs/opensim.md, "Loop-closing constraints".)

At :data:`STATES` states -- the default pose, then seeded values of the independent coordinate
uniform within the model's spread of its default (the assembly branch of the default pose), normal
random speeds and accelerations -- OpenSim computes:

- ``dependent``: the dependent coordinates at which OpenSim's position-constraint errors
  (``State.getQErr`` after ``realizePosition``) vanish to :data:`ACCURACY`, the independent one at
  its value: Newton's method from the default pose with OpenSim's constraint Jacobian ``G``
  (``calcG``; these joints have ``u = q̇``, so ``G`` is ``∂qerr/∂q`` -- for the weld's orientation
  errors at the solution, which keeps the convergence quadratic). (``Model.assemble`` with the
  independent coordinate locked, or ``Coordinate.setValue(..., enforceConstraints=True)``, returned
  it to its initial value in OpenSim 4.6, so OpenSim's assembler is not used.)
- ``C``: the velocity map ``u = C q̇`` from OpenSim's constraint Jacobian ``G``
  (``SimbodyMatterSubsystem.calcG``, ``G u = 0``): the independent coordinate's row is 1, the
  dependent rows ``−G_d⁺ G_i`` (least squares; ``G`` has three rows of rank two in a planar loop);
- ``mass_matrix``: ``Cᵀ M C`` (``calcM``);
- ``forward_dynamics``: the independent coordinate's ``u̇`` from OpenSim's constrained forward
  dynamics (``realizeAcceleration`` with ``u = C q̇``, gravity the only force), and from the same
  ``u̇`` ``Ċ q̇ = u̇ − C q̈``;
- ``gravity``: ``−Cᵀ τ(q, 0, 0)``, ``bias``: ``Cᵀ (τ(q, u, Ċ q̇) − τ(q, 0, 0))`` and
  ``inverse_dynamics``: ``Cᵀ τ(q, C q̇, C q̈ + Ċ q̇)``, with ``τ`` from ``InverseDynamicsSolver``
  (which ignores constraints: ``τ = M u̇ + c(q, u) − g(q)``).

mbkron's counterparts are ``joint_variables`` (the solved joint variables), ``mass_matrix``,
``forward_dynamics``, ``gravity_forces``, ``velocity_forces`` and ``inverse_dynamics`` (no loads).
Run ``python -m validation.opensim.compare_osim_loops`` from the repository root: it writes
``tests/data/osim/<model>.osim.gz`` (with ``--write-models``) and ``<model>.json``, read by
``tests/test_osim_constraints.py``, and prints mbkron's largest deviations.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim.compare_osim import DATA, opensim, rounded, stored_osim

#: States: the default pose and random ones.
STATES = 5
#: Largest OpenSim position-constraint error accepted as assembled, and Newton iterations allowed.
ACCURACY = 1e-14
ITERATIONS = 20
KEYS = ("dependent", "mass_matrix", "forward_dynamics", "gravity", "bias", "inverse_dynamics")


def write_four_bar(path: Path) -> None:
    """Write the four-bar with OpenSim 4.6's API, its default pose assembled by OpenSim."""
    osim = opensim()
    model = osim.Model()
    model.setName("four_bar")
    model.setGravity(osim.Vec3(0, -9.80665, 0))
    bodies = {name: osim.Body(name, mass, osim.Vec3(*com), osim.Inertia(*inertia)) for name, mass, com, inertia in (
        ("crank", 1.3, (0.1, 0.01, 0.02), (0.004, 0.006, 0.007, 0.0003, -0.0002, 0.0001)),
        ("coupler", 2.1, (0.22, -0.015, 0.01), (0.005, 0.03, 0.032, 0.001, 0.0004, -0.0003)),
        ("rocker", 1.7, (0.2, 0.02, -0.01), (0.004, 0.02, 0.022, -0.0006, 0.0002, 0.0005)))}
    for body in bodies.values():
        model.addBody(body)
    ground, zero = model.getGround(), osim.Vec3(0, 0, 0)
    joints = [  # name, parent, location and orientation in the parent, child, coordinate, default guess, range
        ("j_crank", ground, (0, 0, 0), (0, 0, 0.3), "crank", "crank_angle", 0.6, 3.14159),
        ("j_coupler", bodies["crank"], (0.2, 0, 0), (0, 0, -0.2), "coupler", "coupler_angle", 0.0, 6.3),
        ("j_rocker", ground, (0.5, 0, 0), (0, 0, 0.5), "rocker", "rocker_angle", 1.5, 6.3)]
    for name, parent, location, orientation, child, coordinate, default, bound in joints:
        joint = osim.PinJoint(name, parent, osim.Vec3(*location), osim.Vec3(*orientation), bodies[child], zero, zero)
        model.addJoint(joint)
        c = joint.upd_coordinates(0)
        c.setName(coordinate)
        c.setDefaultValue(default)
        c.setRangeMin(-bound)
        c.setRangeMax(bound)
    closure = osim.PointConstraint(bodies["coupler"], osim.Vec3(0.45, 0, 0), bodies["rocker"], osim.Vec3(0.4, 0, 0))
    closure.setName("closure")
    model.addConstraint(closure)
    model.finalizeConnections()
    state = model.initSystem()
    coordinates = model.getCoordinateSet()
    coordinates.get("crank_angle").setLocked(state, True)
    model.assemble(state)
    coordinates.get("crank_angle").setLocked(state, False)
    for k in range(coordinates.getSize()):
        coordinates.get(k).setDefaultValue(coordinates.get(k).getValue(state))
    model.printToXML(str(path))


def _serial_chain(name: str, slide: bool):
    """A chain on ground: ``PinJoint`` (the swing), ``UniversalJoint``, with ``slide`` a ``PlanarJoint``
    (to a carriage), and a ``SliderJoint`` to the tool; OpenSim's model (finalized) and its bodies."""
    osim = opensim()
    model = osim.Model()
    model.setName(name)
    model.setGravity(osim.Vec3(0.3, -9.80665, 0.2))
    bodies = {name: osim.Body(name, mass, osim.Vec3(*com), osim.Inertia(*inertia)) for name, mass, com, inertia in (
        ("arm", 1.1, (0.05, 0.2, -0.03), (0.03, 0.004, 0.028, 0.001, -0.0005, 0.0008)),
        ("hand", 0.7, (0.02, 0.06, 0.01), (0.002, 0.0015, 0.0022, 0.0001, 0.0002, -0.0001)),
        ("carriage", 0.4, (0.0, 0.01, -0.02), (0.001, 0.0012, 0.0009, 0.0, 0.0001, 0.0)),
        ("tool", 0.9, (0.1, -0.02, 0.04), (0.003, 0.008, 0.009, -0.0004, 0.0003, 0.0006))) if slide or name != "carriage"}
    for body in bodies.values():
        model.addBody(body)
    ground, vec = model.getGround(), osim.Vec3
    joints = [
        osim.PinJoint("j_swing", ground, vec(0.1, 0.0, -0.05), vec(0.2, 0.1, -0.3), bodies["arm"],
                      vec(0, -0.05, 0), vec(0, 0, 0.1)),
        osim.UniversalJoint("j_wrist", bodies["arm"], vec(0.02, 0.4, 0.01), vec(-0.3, 0.2, 0.5), bodies["hand"],
                            vec(0.01, -0.03, 0), vec(0.1, 0, -0.2))]
    if slide:
        joints.append(osim.PlanarJoint("j_slide", bodies["hand"], vec(0.05, 0.12, -0.02), vec(0.4, -0.1, 0.3),
                                       bodies["carriage"], vec(-0.02, 0, 0.03), vec(0, 0.2, 0)))
    joints.append(osim.SliderJoint("j_lift", bodies["carriage" if slide else "hand"], vec(0.01, 0.02, 0.0),
                                   vec(0.1, -1.4, 0.2), bodies["tool"], vec(0, 0.03, 0), vec(0, 0, 0.15)))
    names = {"j_swing": ["swing"], "j_wrist": ["wrist_x", "wrist_y"], "j_slide": ["slide_rz", "slide_tx", "slide_ty"],
             "j_lift": ["lift"]}
    for joint in joints:
        model.addJoint(joint)
        for k, coordinate in enumerate(names[joint.getName()]):
            c = joint.upd_coordinates(k)
            c.setName(coordinate)
            c.setRangeMin(-0.4 if coordinate == "swing" else -3.0)  # the swing: where both chains assemble
            c.setRangeMax(0.6 if coordinate == "swing" else 3.0)
            c.setDefaultValue(0.1 * (k + 1))
    model.finalizeConnections()
    return model, bodies


def write_weld_chain(path: Path) -> None:
    """Write the weld chain with OpenSim 4.6's API: the tool welded to ground where it is at the default pose."""
    osim = opensim()
    model, bodies = _serial_chain("weld_chain", slide=True)
    state = model.initSystem()  # the default pose (no constraint yet)
    in_tool = osim.Transform(osim.Rotation(-0.2, osim.CoordinateAxis(0)), osim.Vec3(0.1, 0.05, -0.02))
    in_ground = bodies["tool"].getTransformInGround(state).compose(in_tool)
    model.addConstraint(osim.WeldConstraint("fix", model.getGround(), in_ground, bodies["tool"], in_tool))
    model.finalizeConnections()
    model.printToXML(str(path))


def write_point_chain(path: Path) -> None:
    """Write the point chain with OpenSim 4.6's API: a point of the tool held at its place at the default pose."""
    osim = opensim()
    model, bodies = _serial_chain("point_chain", slide=False)
    state = model.initSystem()
    in_tool = osim.Vec3(0.1, 0.05, -0.02)
    in_ground = bodies["tool"].findStationLocationInGround(state, in_tool)
    constraint = osim.PointConstraint(model.getGround(), in_ground, bodies["tool"], in_tool)
    constraint.setName("pin")
    model.addConstraint(constraint)
    model.finalizeConnections()
    model.printToXML(str(path))


def write_line_chain(path: Path) -> None:
    """Write the line chain with OpenSim 4.6's API: the point chain with ``wrist_x`` locked, a point of the tool
    held on the ground line along ``x`` through its place at the default pose (a ``PointOnLineConstraint``)."""
    osim = opensim()
    model, bodies = _serial_chain("line_chain", slide=False)
    model.getCoordinateSet().get("wrist_x").setDefaultLocked(True)
    model.getCoordinateSet().get("swing").setRangeMin(-0.15)  # below, the slider runs off to infinity along the line
    state = model.initSystem()
    in_tool = osim.Vec3(0.1, 0.05, -0.02)
    on_line = bodies["tool"].findStationLocationInGround(state, in_tool)
    constraint = osim.PointOnLineConstraint(model.getGround(), osim.Vec3(1, 0, 0), on_line, bodies["tool"], in_tool)
    constraint.setName("rail")
    model.addConstraint(constraint)
    model.finalizeConnections()
    model.printToXML(str(path))


#: The models: their independent coordinate, the dependent coordinates (OpenSim names) with the
#: mbkron bodies whose joint variables they are, the writer, and the spread (rad) of the random
#: values of the independent coordinate about its default (the assembly branch of the default pose).
MODELS = {
    "four_bar": ("crank_angle", {"coupler_angle": "j_coupler.rotationz", "rocker_angle": "j_rocker.rotationz"},
                 write_four_bar, 0.8),
    "weld_chain": ("swing", {"lift": "j_lift.translationx", "slide_rz": "j_slide.rotationz",
                             "slide_ty": "j_slide.translationy", "slide_tx": "j_slide.translationx",
                             "wrist_y": "j_wrist.rotationy", "wrist_x": "j_wrist.rotationx"}, write_weld_chain, 0.3),
    "point_chain": ("swing", {"lift": "j_lift.translationx", "wrist_y": "j_wrist.rotationy",
                              "wrist_x": "j_wrist.rotationx"}, write_point_chain, 0.3),
    "line_chain": ("swing", {"lift": "j_lift.translationx", "wrist_y": "j_wrist.rotationy"}, write_line_chain, 0.08),
}


class _OpenSimLoop:
    """A model of :data:`MODELS` in OpenSim, driven by its independent coordinate."""

    def __init__(self, name: str, path: Path):
        self.independent, self.dependent = MODELS[name][:2]
        osim = self.osim = opensim()
        self.model = osim.Model(str(path))
        self.state = self.model.initSystem()
        coordinates = self.model.getCoordinateSet()
        self.coordinates = {coordinates.get(k).getName(): coordinates.get(k) for k in range(coordinates.getSize())}
        self.names = [self.independent, *self.dependent]
        self.index = {}
        for name in self.names:  # each coordinate's index in OpenSim's u
            for other in self.names:
                self.coordinates[other].setSpeedValue(self.state, 1.0 if other == name else 0.0)
            u = self.state.getU()
            self.index[name] = next(k for k in range(u.size()) if u.get(k) == 1.0)

    def _matrix(self, matrix) -> np.ndarray:
        return np.array([[matrix.get(i, j) for j in range(matrix.ncol())] for i in range(matrix.nrow())])

    def evaluate(self, q: float, qd: float, qdd: float) -> dict:
        osim, state, model = self.osim, self.state, self.model
        for name, coordinate in self.coordinates.items():  # from the default pose, the independent one at q, at rest
            coordinate.setValue(state, coordinate.getDefaultValue() if name != self.independent else q, False)
            coordinate.setSpeedValue(state, 0.0)
        rows = [self.index[name] for name in self.names]
        matter = model.getMatterSubsystem()
        for _ in range(ITERATIONS):  # Newton on OpenSim's position errors with OpenSim's G (= ∂qerr/∂q here)
            model.realizePosition(state)
            error = np.array([state.getQErr().get(k) for k in range(state.getNQErr())])
            if np.abs(error).max() <= ACCURACY:
                break
            G = osim.Matrix()
            matter.calcG(state, G)
            step = np.linalg.lstsq(self._matrix(G)[:len(error), rows[1:]], error, rcond=None)[0]
            for name, delta in zip(self.dependent, step):
                self.coordinates[name].setValue(state, self.coordinates[name].getValue(state) - delta, False)
        else:
            raise RuntimeError(f"the model does not assemble at {self.independent} = {q}")
        values = {name: self.coordinates[name].getValue(state) for name in self.names}
        model.realizeVelocity(state)
        matter = model.getMatterSubsystem()
        G = osim.Matrix()
        matter.calcG(state, G)
        G = self._matrix(G)
        C = np.zeros((state.getNU(), 1))
        C[rows[0], 0] = 1.0
        C[rows[1:], 0] = -np.linalg.lstsq(G[:, rows[1:]], G[:, rows[0]], rcond=None)[0]
        M = osim.Matrix()
        matter.calcM(state, M)
        reduced_mass = C.T @ self._matrix(M) @ C
        u = C[:, 0] * qd
        for name, row in zip(self.names, rows):
            self.coordinates[name].setSpeedValue(state, float(u[row]))
        model.realizeAcceleration(state)
        udot = np.array([state.getUDot().get(k) for k in range(state.getNU())])
        cdot = udot - C[:, 0] * udot[rows[0]]

        def tau(speeds: np.ndarray, accelerations: np.ndarray) -> np.ndarray:
            for name, row in zip(self.names, rows):
                self.coordinates[name].setSpeedValue(state, float(speeds[row]))
            model.realizeDynamics(state)
            vector = osim.Vector(len(accelerations), 0.0)
            for k, v in enumerate(accelerations):
                vector.set(k, float(v))
            result = osim.InverseDynamicsSolver(model).solve(state, vector)
            return np.array([result.get(k) for k in range(result.size())])

        zero = np.zeros(state.getNU())
        rest = tau(zero, zero)
        return {"dependent": [values[name] for name in self.dependent], "mass_matrix": reduced_mass,
                "forward_dynamics": [udot[rows[0]]], "gravity": -C.T @ rest, "bias": C.T @ (tau(u, cdot) - rest),
                "inverse_dynamics": C.T @ tau(u, C[:, 0] * qdd + cdot)}


def states(default: float, spread: float, seed: int = 3) -> list[list[float]]:
    """The default pose at rest, then random ones (12 significant digits, as stored)."""
    rng = np.random.default_rng(seed)
    out = [[default, 0.0, 0.0]]
    for _ in range(STATES - 1):
        out.append(rounded([default + rng.uniform(-spread, spread), rng.normal(), rng.normal()]))
    return [[float(v) for v in s] for s in out]


def reference(name: str, path: Path) -> dict:
    """OpenSim's side at :func:`states`, as stored in ``<name>.json``."""
    opensim_model = _OpenSimLoop(name, path)
    default = opensim_model.coordinates[opensim_model.independent].getDefaultValue()
    data = {"model": name, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "dependent_bodies": list(opensim_model.dependent.values()),
            "states": states(default, MODELS[name][3]), **{key: [] for key in KEYS}}
    for q, qd, qdd in data["states"]:
        for key, value in opensim_model.evaluate(q, qd, qdd).items():
            data[key].append(rounded(value))
    return data


def mbkron_values(model, bodies: list[str], q: float, qd: float, qdd: float) -> dict:
    """mbkron's counterparts of :meth:`_OpenSimLoop.evaluate` (``bodies``: the solved joint variables)."""
    joints = list(model.joints)
    f = model.joint_variables([q], order=0)[0]
    return {"dependent": [f[joints.index(body)] for body in bodies],
            "mass_matrix": model.mass_matrix([q]), "forward_dynamics": model.forward_dynamics([q], [qd], loads=()),
            "gravity": model.gravity_forces([q]), "bias": model.velocity_forces([q], [qd]),
            "inverse_dynamics": model.inverse_dynamics([q], [qd], [qdd], loads=())}


def deviations(data: dict, path: Path) -> dict[str, float]:
    """mbkron's largest deviation from ``data`` per key: radians for ``dependent``, else relative to the
    largest stored entry of the key (at least 1)."""
    model = mbkron.load_model(path)
    out = {}
    for key in KEYS:
        ours = np.array([np.ravel(mbkron_values(model, data["dependent_bodies"], *s)[key]) for s in data["states"]])
        theirs = np.array(data[key])
        scale = 1.0 if key == "dependent" else max(float(np.abs(theirs).max()), 1.0)
        out[key] = float(np.abs(ours - theirs).max()) / scale
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-models", action="store_true", help="rewrite tests/data/osim/<model>.osim.gz first")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        for name, (_, _, write, _) in MODELS.items():
            if args.write_models:
                path = Path(directory) / f"{name}.osim"
                write(path)
                (DATA / f"{name}.osim.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            path = stored_osim(name, Path(directory))
            data = reference(name, path)
            (DATA / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
            for key, value in deviations(data, path).items():
                print(f"{name} {key:<18} {value:.2g}")


if __name__ == "__main__":
    main()
