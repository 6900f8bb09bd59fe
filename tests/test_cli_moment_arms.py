"""`mbkron moment-arms`: the CSV equals Model.moment_arms and −∂L/∂q; bad arguments exit with status 1."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from mbkron.cli import main
from mbkron.io import read_model_file

SHOULDER = Path(__file__).resolve().parents[1] / "models" / "shoulder_rhythm.toml"
TWO_LINK = SHOULDER.with_name("two_link_arm.toml")


@pytest.fixture(scope="module")
def shoulder():
    return read_model_file(SHOULDER).model


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    with path.open() as handle:
        rows = list(csv.reader(handle))
    return rows[0], np.array(rows[1:], dtype=float)


def sweep_q(elevations_deg: np.ndarray) -> np.ndarray:
    """Plane of elevation 90°, axial rotation −30°, elevation swept (radians)."""
    q = np.empty((elevations_deg.size, 3))
    q[:] = np.radians([90.0, 0.0, -30.0])
    q[:, 1] = np.radians(elevations_deg)
    return q


def test_sweep_writes_moment_arms_lengths_and_metadata(tmp_path, capsys, shoulder):
    output = tmp_path / "arms.csv"
    status = main(["moment-arms", str(SHOULDER), "--sweep", "shoulder_elv", "--from", "40", "--to", "44",
                   "--step", "2", "--q", "elv_angle=90,shoulder_rot=-30", "-o", str(output), "--no-progress"])
    assert status == 0
    assert "wrote" in capsys.readouterr().out
    header, table = read_csv(output)
    muscles = shoulder.muscles
    assert header == (list(shoulder.coordinates) + [f"{c}.{m}" for c in shoulder.coordinates for m in muscles]
                      + [f"L.{m}" for m in muscles])
    np.testing.assert_array_equal(table[:, 1], [40, 42, 44])
    np.testing.assert_allclose(table[:, [0, 2]], [[90, -30]] * 3, rtol=1e-15)
    q = sweep_q(np.array([40.0, 42.0, 44.0]))
    arms = table[:, 3:3 + 3 * len(muscles)].reshape(3, 3, len(muscles))
    lengths = table[:, 3 + 3 * len(muscles):]
    np.testing.assert_allclose(arms, shoulder.moment_arms(q), rtol=0, atol=1e-15)
    np.testing.assert_allclose(lengths, shoulder.muscle_lengths(q), rtol=0, atol=1e-15)
    # independently: R = −∂L/∂q by central differences of the lengths
    h = 1e-5
    for k in range(3):
        step = np.zeros(3)
        step[k] = h
        derivative = (shoulder.muscle_lengths(q + step) - shoulder.muscle_lengths(q - step)) / (2 * h)
        np.testing.assert_allclose(arms[:, k, :], -derivative, rtol=0, atol=1e-7)
    assert np.abs(arms[:, 1, :]).max() > 0.01  # the elevation moment arms are centimetres, not zeros
    metadata = json.loads(output.with_suffix(".json").read_text())
    assert metadata["command"] == "moment-arms" and metadata["model"]["sha256"]
    assert metadata["settings"]["sweep"] == {"coordinate": "shoulder_elv", "from": 40.0, "to": 44.0, "count": 3,
                                             "unit": "deg"}
    units = {column["name"]: column["unit"] for column in metadata["columns"]}
    assert units["shoulder_elv"] == "deg" and units["shoulder_elv.DELT1"] == "m" and units["L.LAT3"] == "m"


def test_single_configuration_prints_the_table(tmp_path, capsys, shoulder):
    output = tmp_path / "one.csv"
    assert main(["moment-arms", str(SHOULDER), "--q", "elv_angle=90,shoulder_elv=60,shoulder_rot=-30",
                 "-o", str(output)]) == 0
    out = capsys.readouterr().out
    table = read_csv(output)[1]
    assert table.shape == (1, 3 + 4 * 14)
    R = shoulder.moment_arms(sweep_q(np.array([60.0]))[0])
    delt1 = next(line for line in out.splitlines() if line.startswith("DELT1")).split()
    np.testing.assert_allclose([float(v) for v in delt1[1:4]], R[:, 0], rtol=0, atol=5e-7)


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "arms.csv"
    assert main(["moment-arms", str(SHOULDER), "--sweep", "shoulder_elv", "--from", "0", "--to", "10",
                 "-o", str(output), "--plot", "--no-progress"]) == 0
    assert output.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_csv(output)[1].shape[0] == 11  # default step: 1 degree, both ends included


@pytest.mark.parametrize("arguments, message", [
    (["--sweep", "nope"], "--sweep: unknown coordinate `nope`"),
    (["--sweep", "shoulder_elv", "--from", "10", "--to", "0"], "need --from ≤ --to and --step > 0"),
    (["--sweep", "shoulder_elv", "--step", "0"], "need --from ≤ --to and --step > 0"),
    (["--sweep", "shoulder_elv", "--step", "1e-9"], "at most"),
    (["--from", "0"], "--from need --sweep"),
    (["--sweep", "shoulder_elv", "--q", "shoulder_elv=3"], "`shoulder_elv` is swept"),
    (["--q", "wrist=3"], "--q: unknown coordinate `wrist`"),
    (["--q", "shoulder_elv=abc"], "--q shoulder_elv"),
    (["--plot"], "--plot needs --sweep"),
])
def test_bad_arguments_exit_1_with_a_message(tmp_path, capsys, arguments, message):
    if "--plot" in arguments:  # without matplotlib, its absence is the error reported first
        pytest.importorskip("matplotlib")
    output = tmp_path / "x.csv"
    assert main(["moment-arms", str(SHOULDER), *arguments, "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mbkron: error: ") and message in err and "Traceback" not in err
    assert not output.exists()


def test_a_model_without_muscles_is_an_error(tmp_path, capsys):
    assert main(["moment-arms", str(TWO_LINK), "-o", str(tmp_path / "x.csv")]) == 1
    assert "has no muscles" in capsys.readouterr().err


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["moment-arms", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and "mbkron moment-arms models/shoulder_rhythm.toml --sweep" in out


# ---------------------------------------------------------------------- issue 27, item 17
def write_model(tmp_path: Path, model, name: str) -> Path:
    from mbkron.io import dump_model

    path = tmp_path / f"{name}.toml"
    path.write_text(dump_model(model))  # SI units: angles in radians, as in every .osim model
    return path


def chain_with_muscles(links: int, prismatic: bool = False):
    """A planar chain of ``links`` revolute links (or one prismatic slider) with two muscles across it."""
    from mbkron.model.builder import ModelBuilder

    builder = ModelBuilder()
    parent = "ground"
    if prismatic:
        builder.add_coordinate("slide", range=(0.0, 0.05), unit="m")
        builder.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="slide", mass=1.0)
        parent = "slider"
    for k in range(links):
        builder.add_coordinate(f"q{k}", range=(-0.5, 0.5))
        builder.add_body(f"link{k}", parent=parent, axis=(0, 0, 1), variable=f"q{k}", mass=1.0,
                         offset=(0.0, -0.3, 0.0) if k else None)
        parent = f"link{k}"
    builder.add_muscle("flexor", [("ground", (0.05, 0.1, 0.0)), (parent, (0.05, -0.1, 0.0))])
    builder.add_muscle("extensor-1", [("ground", (-0.05, 0.1, 0.0)), (parent, (-0.05, -0.1, 0.0))])
    return builder.build()


@pytest.mark.filterwarnings("ignore::mbkron.core.errors.ModelWarning")  # the shoulder's clavicle, written out
def test_default_step_is_one_degree_in_a_file_in_radians(tmp_path, shoulder):
    path = write_model(tmp_path, shoulder, "shoulder_in_radians")
    assert 'angle = "rad"' in path.read_text()
    output = tmp_path / "arms.csv"
    assert main(["moment-arms", str(path), "--sweep", "shoulder_elv", "--from", "0", "--to", "0.5", "-o", str(output),
                 "--no-progress"]) == 0
    swept = read_csv(output)[1][:, 1]
    assert swept.size == int(np.degrees(0.5)) + 1  # 0°, 1°, …, 28°: 29 rows, not 1 (a step of 1 rad)
    np.testing.assert_allclose(np.diff(swept), np.radians(1.0), rtol=1e-12)


def test_default_step_is_one_millimetre_for_a_length(tmp_path):
    path = write_model(tmp_path, chain_with_muscles(1, prismatic=True), "slider")
    output = tmp_path / "arms.csv"
    assert main(["moment-arms", str(path), "--sweep", "slide", "-o", str(output), "--no-progress"]) == 0
    swept = read_csv(output)[1][:, 0]
    assert swept.size == 51 and swept[0] == 0.0  # 0 to 0.05 m in steps of 1 mm
    np.testing.assert_allclose(np.diff(swept), 1e-3, rtol=1e-9)


def test_the_plot_is_a_bounded_grid_with_a_legend(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import mbkron.cli.moment_arms as command

    model = chain_with_muscles(12)
    path = write_model(tmp_path, model, "chain")
    figures = []
    original = command.png_bytes

    def keep(plt, figure):
        figures.append([(ax.get_visible(), ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start)
                        for ax in figure.axes] + [[t.get_text() for t in legend.get_texts()] for legend in figure.legends])
        return original(plt, figure)

    monkeypatch.setattr(command, "png_bytes", keep)
    output = tmp_path / "arms.csv"
    assert main(["moment-arms", str(path), "--sweep", "q0", "-o", str(output), "--plot", "--no-progress"]) == 0
    *panels, legend = figures[0]
    visible = [(row, column) for shown, row, column in panels if shown]
    assert len(visible) == 12 and len({row for row, _ in visible}) >= 3 and len({c for _, c in visible}) <= 5
    assert legend == ["flexor", "extensor-1"]
    png = output.with_suffix(".png").read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width <= 1800 and height <= 1600 and width / height < 2  # not a 10,500 × 450 strip


@pytest.mark.filterwarnings("ignore::mbkron.core.errors.ModelWarning")  # the shoulder's clavicle
def test_the_single_configuration_table_separates_long_names(tmp_path, capsys):
    import re

    long_name = "shoulder_elevation_angle_of_the_thorax"
    text = re.sub(r"\bshoulder_elv\b", long_name, SHOULDER.read_text())
    path = tmp_path / "long.toml"
    path.write_text(text)
    assert main(["moment-arms", str(path), "-o", str(tmp_path / "one.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    model = read_model_file(path).model
    assert lines[0].split() == ["muscle", *model.coordinates, "length"]
    rows = [line.split() for line in lines[1:1 + len(model.muscles)]]
    assert [row[0] for row in rows] == list(model.muscles) and {len(row) for row in rows} == {model.nq + 2}
