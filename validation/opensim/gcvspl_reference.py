"""OpenSim 4.6's ``GCVSpline`` on random data: the reference for ``mbkron.numerics.gcvspl``.

For each degree 1, 3, 5, 7 (half order 1–4) and error variance 0 (interpolation), 1e-4, 1e-2, 1
(smoothing for a known variance) and −1 (smoothing by generalized cross-validation), seeded random
knots and data are handed to OpenSim as a ``GCVSpline`` element (the form an ``.osim`` file has, read
by ``OpenSimObject.makeObjectFromFile``), and OpenSim's ``calcValue`` and ``calcDerivative`` of
orders 1–3 are recorded at the knots, between them and beyond both ends, with OpenSim's fitted
``coefficients``. Every number is stored with 17 significant digits, so the knots and data are
exactly OpenSim's and the values are OpenSim's results to the bit.

    python -m validation.opensim.gcvspl_reference            # writes tests/data/gcvspl_opensim.json

``tests/test_gcvspl.py`` compares mbkron with the stored data (no OpenSim needed) and, with OpenSim
installed, recomputes it with :func:`reference` and requires it to equal the stored data.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

OUTPUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "gcvspl_opensim.json"
DEGREES = (1, 3, 5, 7)
VARIANCES = (0.0, 1e-4, 1e-2, 1.0, -1.0)
KNOTS = 10
DERIVATIVES = 3


def opensim_gcvspline(half_order: int, x, y, error_variance: float):
    """OpenSim's ``GCVSpline`` read from the XML element an ``.osim`` file would hold."""
    import opensim

    def numbers(values) -> str:
        return " ".join(repr(float(v)) for v in values)

    text = ('<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="40600">'
            f'<GCVSpline name="f"><half_order>{half_order}</half_order>'
            f'<error_variance>{float(error_variance)!r}</error_variance>'
            f'<x>{numbers(x)}</x><y>{numbers(y)}</y></GCVSpline></OpenSimDocument>')
    descriptor, path = tempfile.mkstemp(suffix=".xml")
    try:
        os.write(descriptor, text.encode())
        os.close(descriptor)
        return opensim.GCVSpline.safeDownCast(opensim.OpenSimObject.makeObjectFromFile(path))
    finally:
        os.remove(path)


def evaluate(function, t, derivative: int) -> list[float]:
    """OpenSim's value (``derivative = 0``) or derivative of a function of one argument at ``t``."""
    import opensim

    if derivative == 0:
        return [function.calcValue(opensim.Vector(1, float(v))) for v in t]
    components = opensim.StdVectorInt([0] * derivative)
    return [function.calcDerivative(components, opensim.Vector(1, float(v))) for v in t]


def cases(seed: int = 15) -> list[dict]:
    """The knots, data, evaluation points, half order and error variance of every case."""
    rng = np.random.default_rng(seed)
    result = []
    for degree in DEGREES:
        for variance in VARIANCES:
            x = np.sort(rng.uniform(-1.0, 2.0, KNOTS))
            y = np.sin(3.0 * x) + 0.1 * rng.standard_normal(KNOTS)
            between = x[:-1] + rng.uniform(0.1, 0.9, KNOTS - 1) * np.diff(x)
            t = np.concatenate([[x[0] - 0.7], x[::3], between, [x[-1] + 0.4]])
            result.append({"half_order": (degree + 1) // 2, "error_variance": variance,
                           "x": x.tolist(), "y": y.tolist(), "t": t.tolist()})
    return result


def reference(case: dict) -> dict:
    """OpenSim's values, derivatives 1–3 and coefficients for one case."""
    function = opensim_gcvspline(case["half_order"], case["x"], case["y"], case["error_variance"])
    values = [evaluate(function, case["t"], d) for d in range(DERIVATIVES + 1)]
    coefficients = function.getCoefficients()
    return {**case, "values": values,
            "coefficients": [coefficients.get(i) for i in range(coefficients.getSize())]}


def main() -> None:
    data = {"source": "OpenSim 4.6 GCVSpline (python -m validation.opensim.gcvspl_reference)",
            "cases": [reference(case) for case in cases()]}
    OUTPUT.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes, {len(data['cases'])} cases)")


if __name__ == "__main__":
    main()
