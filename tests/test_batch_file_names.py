"""A batch item's files travel as text and are written to temporary files for the readers that take a path
(an ``.osim`` model, the ExternalLoads XML, the reserves): errors, warnings and the model file's ``source``
name the files as the batch file gives them, never the temporary copies."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

from mbkron.batch.item import Item
from mbkron.batch.jobs import execute, model_file

ARM26 = gzip.decompress((Path(__file__).parent / "data" / "osim" / "arm26.osim.gz").read_bytes()).decode()
MOTION = ("arm\nversion=1\nnRows=12\nnColumns=3\ninDegrees=yes\nendheader\ntime\tr_shoulder_elev\tr_elbow_flex\n"
          + "".join(f"{0.01 * i:.2f}\t{10 + i}\t{20 + 2 * i}\n" for i in range(12)))
GRF = MOTION.replace("arm\n", "grf\n", 1).replace("r_shoulder_elev\tr_elbow_flex", "f_vx\tf_vy")
TEMPORARY = str(Path(tempfile.gettempdir()) / "mbkron-")


def analyze(fields: dict, files: dict) -> dict:
    """The summary of an ``analyze`` item of arm26 (without its wrap objects) and a 12-frame motion."""
    item = Item("arm", "analyze", {"model": "models/arm26.osim", "motion": "trials/arm.mot", "backend": "compiled",
                                   "ignore_wrapping": True, "analyses": ["id"], **fields},
                {"model": ARM26, "motion": MOTION, **files})
    return execute(item)["summary"]


def test_the_model_warnings_and_source_name_the_model_as_given():
    summary = analyze({}, {})
    assert summary["outcome"] == "completed"
    assert summary["warnings"] == ["models/arm26.osim: 5 path(s) imported without their wrap objects: "
                                   "TRIlong, TRIlat, TRImed, BIClong, BRA"]
    loaded, notes = model_file(ARM26, "elsewhere/arm26.osim", "compiled", wrapping="ignore")
    assert loaded.source == "elsewhere/arm26.osim" and notes[0].startswith("elsewhere/arm26.osim: 5 path(s)")


@pytest.mark.parametrize("fields, files, expected", [
    ({}, {"model": ARM26[:4000]}, "invalid model in models/arm26.osim: not well-formed XML"),
    ({"external_loads": "trials/grf.xml", "external_loads_data": "trials/grf.mot"},
     {"external_loads": "<ExternalLoads><broken", "external_loads_data": GRF},
     "invalid external loads in trials/grf.xml: not well-formed XML"),
    ({"reserves": "setup/reserves.xml", "analyses": ["so"]}, {"reserves": "<ForceSet"},
     "cannot read the force-set file: invalid model in setup/reserves.xml: not well-formed XML"),
])
def test_errors_name_the_files_as_the_batch_file_gives_them(fields, files, expected):
    summary = analyze(fields, files)
    assert summary["outcome"] == "failed"
    assert summary["message"].startswith(expected) and TEMPORARY not in summary["message"]
