"""Write ``opensim_reference.json``: OpenSim 4.6's reading of the ``.trc`` files here (needs the ``opensim``
package; run ``python tests/data/markers/opensim_reference.py`` from the repository's root).

For each file: OpenSim's ``TimeSeriesTableVec3(path)`` — marker names, times, units, DataRate — and its
positions (in the file's units, as OpenSim keeps them) at the first three, the middle and the last frame and summed over
all frames per marker and axis (NaN where OpenSim gives NaN), so that the comparison stays small.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FILES = ("subject01_walk1.trc.gz", "arm26_elbow_flex.trc.gz", "arm26_gaps.trc")


def gaps_text() -> str:
    """arm26_elbow_flex.trc with missing markers: marker 2 of frame 1, marker 3 (the last, trailing tab kept)
    of frame 2 and marker 1 of frame 3 as empty fields."""
    lines = gzip.decompress((HERE / "arm26_elbow_flex.trc.gz").read_bytes()).decode("utf-8").split("\n")
    for line, first in ((6, 5), (7, 8), (8, 2)):
        fields = lines[line].split("\t")
        fields[first:first + 3] = ["", "", ""]
        lines[line] = "\t".join(fields)
    return "\n".join(lines)


def main() -> None:
    import opensim

    (HERE / "arm26_gaps.trc").write_text(gaps_text())
    reference = {"opensim_version": opensim.__version__, "files": {}}
    with tempfile.TemporaryDirectory() as directory:
        for name in FILES:
            path = Path(directory) / name.removesuffix(".gz")
            with (gzip.open if name.endswith(".gz") else open)(HERE / name, "rb") as source, open(path, "wb") as target:
                shutil.copyfileobj(source, target)
            table = opensim.TimeSeriesTableVec3(str(path))
            rows, columns = table.getNumRows(), table.getNumColumns()
            values = np.empty((rows, columns, 3))
            for i in range(rows):
                row = table.getRowAtIndex(i)
                for j in range(columns):
                    values[i, j] = [row[j].get(k) for k in range(3)]
            frames = [0, 1, 2, rows // 2, rows - 1]
            reference["files"][name] = {
                "names": list(table.getColumnLabels()), "time": list(table.getIndependentColumn()),
                "units": table.getTableMetaDataAsString("Units"),
                "data_rate": float(table.getTableMetaDataAsString("DataRate")),
                "frames": frames, "positions": [[[None if np.isnan(v) else float(v) for v in p] for p in values[f]]
                                                for f in frames],
                "sums": [[None if np.isnan(v) else float(v) for v in s] for s in values.sum(axis=0)]}
    (HERE / "arm26_gaps.trc").unlink()
    (HERE / "opensim_reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
