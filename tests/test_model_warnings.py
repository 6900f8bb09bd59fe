"""`mbkron.ModelWarning`: an inertia whose principal moments violate I₁ + I₂ ≥ I₃ is accepted with a
warning naming the file or model, the body, the moments and the violation; physical ones are silent."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import mbkron
from mbkron.model.checks import triangle_violation

ROOT = Path(__file__).resolve().parents[1]

FILE = """
[model]
name = "box"
[coordinates.q]
range = [-1, 1]
[bodies.lid]
parent = "ground"
joint = "revolute"
axis = [0, 0, 1]
variable = "q"
mass = 1.0
inertia = {inertia}
[bodies.base]
parent = "lid"
joint = "revolute"
axis = [0, 0, 1]
variable = "q"
mass = 2.0
inertia = [0.02, 0.03, 0.04]
"""


def _build(inertia) -> mbkron.Model:
    builder = mbkron.ModelBuilder(name="arm")
    builder.add_coordinate("q")
    builder.add_body("upper", parent="ground", joint="revolute", axis=(0, 0, 1), variable="q", mass=1.0,
                     inertia=inertia)
    return builder.build()


def test_the_warning_is_public_and_a_user_warning():
    assert issubclass(mbkron.ModelWarning, UserWarning) and "ModelWarning" in mbkron.__all__


def test_a_violating_body_warns_with_its_name_moments_and_violation():
    with pytest.warns(mbkron.ModelWarning) as caught:
        model = _build([0.001, 0.001, 0.01])
    (record,) = caught
    message = str(record.message)
    assert message.startswith("model `arm`: body `upper`: ")
    assert "(0.001, 0.001, 0.01) kg·m²" in message and "by 0.008 kg·m²" in message  # 0.01 − 0.001 − 0.001
    assert "not physical" in message
    # still a usable model: M is positive semi-definite (here definite: one body about z, I_zz = 0.01)
    assert model.mass_matrix(np.array([0.3]))[0, 0] == pytest.approx(0.01)


def test_a_rotated_tensor_is_judged_by_its_principal_moments():
    R = Rotation.from_rotvec([0.3, -0.5, 0.9]).as_matrix()
    with pytest.warns(mbkron.ModelWarning, match=r"by 0\.5 kg·m²"):
        _build(R @ np.diag([1.0, 2.0, 3.5]) @ R.T)


@pytest.mark.parametrize("inertia", [
    [0.02, 0.03, 0.04],  # a box-like body
    [0.0, 0.0208, 0.0208],  # a thin rod: on the boundary, I₁ + I₂ = I₃
    [0.01, 0.01, 0.02],  # a flat plate: on the boundary
    [0.0, 0.0, 0.0],  # a point mass
    np.diag([1.0, 2.0, 3.0]) + 1e-3 * np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]),
], ids=["box", "rod", "plate", "point", "matrix"])
def test_a_physical_body_is_silent(inertia):
    with warnings.catch_warnings():
        warnings.simplefilter("error", mbkron.ModelWarning)
        _build(inertia)


def test_round_off_on_the_boundary_is_not_a_violation():
    R = Rotation.from_rotvec([1.0, 2.0, 3.0]).as_matrix()
    plate = R @ np.diag([0.1, 0.2, 0.3]) @ R.T  # 0.1 + 0.2 = 0.3 up to round-off
    moments, excess = triangle_violation(plate)
    assert moments == pytest.approx([0.1, 0.2, 0.3]) and excess == 0.0
    assert triangle_violation(np.diag([0.1, 0.2, 0.3 + 1e-6]))[1] == pytest.approx(1e-6)


def test_a_model_file_names_the_file_and_warns_once_per_body(tmp_path):
    path = tmp_path / "box.toml"
    path.write_text(FILE.format(inertia="[0.001, 0.002, 0.01]"))
    with pytest.warns(mbkron.ModelWarning) as caught:
        mbkron.load_model(path)
    assert [str(r.message).split(": the principal")[0] for r in caught] == [f"{path}: body `lid`"]
    path.write_text(FILE.format(inertia="[0.001, 0.002, 0.0025]"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", mbkron.ModelWarning)
        mbkron.load_model(path)


def test_the_command_line_prints_it_as_one_line(tmp_path):
    path = tmp_path / "box.toml"
    path.write_text(FILE.format(inertia="[0.001, 0.002, 0.01]"))
    done = subprocess.run([sys.executable, "-m", "mbkron", "info", str(path)], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"mbkron: warning: {path}: body `lid`: the principal moments of `inertia` (0.001, 0.002, 0.01) kg·m² violate "
        "the triangle inequality I₁ + I₂ ≥ I₃ by 0.007 kg·m² (I₃ − I₁ − I₂): no rigid body has them; the dynamics "
        "stays well defined (M positive semi-definite), but the body is not physical"]


@pytest.mark.parametrize("name, bodies", [("leg6dof9musc", ["toes_r"]), ("shoulder_rhythm", ["clavicle", "scapula"])])
def test_the_shipped_models_that_carry_their_sources_unphysical_bodies_say_so(name, bodies):
    with pytest.warns(mbkron.ModelWarning) as caught:
        mbkron.load_model(ROOT / "models" / f"{name}.toml")
    assert [str(r.message).split("body `")[1].split("`")[0] for r in caught] == bodies
