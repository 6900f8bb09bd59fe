"""opensim-models' ``Pipelines/Gait10dof18musc`` walking trial run as published (issue 27 items 12, 14):
inverse dynamics from its first frame (t = 0, which OpenSim's resampling puts at −5e-7 s) and static
optimisation with the pipeline's own reserve file (pelvis residuals as point and torque actuators),
against OpenSim 4.6.

The inputs and OpenSim's results are stored in tests/data/analysis_gait10dof/ by
``python -m validation.opensim.compare_so_gait10dof`` (see its docstring; the model's Millard muscles
rewritten as Thelen muscles, which mbkron models, for the static optimisation).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import analysis
from mbkron.io.storage import read_storage, write_storage

DATA = Path(__file__).parent / "data" / "analysis_gait10dof"
ID_ACCEPTANCE = 1e-6  # N·m or N, as for gait2354 (tests/test_analysis_id.py)
SO_ACCEPTANCE = 1e-3  # activations (issue 27's acceptance line)


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("gait10dof")
    for packed in DATA.glob("*.gz"):
        (directory / packed.name[:-3]).write_bytes(gzip.decompress(packed.read_bytes()))
    return directory


@pytest.fixture(scope="module")
def model(trial):
    return mbkron.load_model(trial / "subject01_thelen.osim")


@pytest.mark.parametrize("time_range", [(0.0, 2.5), None])
def test_inverse_dynamics_from_the_first_frame_equals_opensims(trial, model, time_range):
    """The pipeline's ID setup (0–2.5 s, 6 Hz): the first frame is at −5e-7 s, before the force data's
    first row at 0 s; OpenSim continues the loads' splines there, and so does mbkron."""
    result = analysis.analyze_trial(model, trial / "subject01_walk_IK.mot", external_loads=trial / "subject01_walk_grf.xml",
                                    lowpass=6.0, time_range=time_range, analyses=("id",))["inverse_dynamics"]
    opensim = read_storage(trial / "opensim_inverse_dynamics.sto")
    np.testing.assert_allclose(result.time, opensim.time, rtol=0, atol=1e-12)
    assert result.time[0] == pytest.approx(-5e-7, abs=1e-9)
    for k, label in enumerate(result.labels):
        np.testing.assert_allclose(result.tau[:, k], opensim.column(label), rtol=0, atol=ID_ACCEPTANCE, err_msg=label)


def test_frames_outside_the_force_data_are_refused_naming_the_file(trial, model, tmp_path):
    """Force data that start 0.1 s after the motion: refused, the data named by its file (not the header's
    internal name ``subject01_walk1_grf.mot``)."""
    data = read_storage(trial / "subject01_walk_grf.mot")
    keep = data.time >= 0.1
    cut = tmp_path / "late_grf.mot"
    write_storage(cut, data.name, data.labels, data.time[keep], data.values[keep])
    loads = analysis.external_loads(trial / "subject01_walk_grf.xml", cut)
    with pytest.raises(ValueError, match="frames \\(-5.00000013e-07 to 2.4999985 s\\) are not all within the external loads' "
                       f"data `{cut}` \\(0.1 to 2.5 s\\)"):
        analysis.analyze_trial(model, trial / "subject01_walk_IK.mot", external_loads=loads, lowpass=6.0,
                               analyses=("id",))
