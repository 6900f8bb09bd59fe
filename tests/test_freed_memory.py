"""Results do not depend on what freed memory held (issue 26: "results bit-identical across repeats, first call
included"). The articulated-body kernel once read its scratch's ``u`` and ``U`` at a fixed joint before writing them
(multiplied by zero: harmless unless the scratch held a NaN); when a fresh allocation happened to hold one, the batch
declined the state and the general route gave ``q̈`` 3e-14 off (arm26, in one process of several). Filling the C heap's
free memory with NaN bytes before each evaluation makes such a read show every time; filling it with zero bytes makes
the same evaluations' reference."""

from __future__ import annotations

import pytest

from validation.purity import evaluations, fill_freed_memory, load, model_files

pytestmark = pytest.mark.skipif(not fill_freed_memory(0), reason="no C malloc/free to fill freed memory through")

STATES = 3


@pytest.mark.parametrize("path", model_files(), ids=lambda path: path.name)
def test_results_do_not_depend_on_what_freed_memory_held(path, tmp_path):
    model = load(path, str(tmp_path))
    zeros = evaluations(model, STATES, lambda: fill_freed_memory(0x00))
    nans = evaluations(model, STATES, lambda: fill_freed_memory(0xFF))
    assert sorted(nans) == sorted(zeros)
    assert [name for name in zeros if nans[name] != zeros[name]] == []
