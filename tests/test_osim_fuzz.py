"""A bounded run of the OpenSim-importer fuzzer (``tests/fuzz_osim.py``; run more variants with
``python -m tests.fuzz_osim --count 5000``): every mutated ``.osim`` file (wrap objects ignored) loads or
raises ModelError, without other exceptions, hangs or warnings other than the notice naming the paths
imported without their wrap objects."""

from __future__ import annotations

import pytest

from tests import fuzz_osim

FUZZ_MUTATIONS = 140  # in all, half per seed; each seed's run takes the files of fuzz_osim.FILES in turn


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_osim_files_load_or_raise_model_error_without_warnings_or_hangs(seed):
    counts, bugs, _ = fuzz_osim.run(FUZZ_MUTATIONS // 2, seed)
    assert [(name, description, result.outcome, result.detail) for name, description, result in bugs] == []
    assert counts["loaded"] > 0 and counts["model_error"] > 0, counts
