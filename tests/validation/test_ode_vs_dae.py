"""mbkron's ODE against the independent Shabana-style DAE reference (short runs; the long ones
are `python -m validation.ode_vs_dae`)."""

import pytest

from validation.ode_vs_dae import arm_cases, compare_chain


@pytest.mark.parametrize("case", arm_cases(), ids=lambda c: c.name.split(" (")[0])
def test_arms_agree_with_dae_reference(case):
    result = compare_chain(case, t_end=0.5, samples=100, rtol=1e-11, atol=1e-12)
    assert result.rms_angle < 1e-9 and result.max_angle < 1e-8
    assert result.rms_rate < 1e-8
    assert result.dae_position_drift < 1e-10  # projection keeps the DAE on its constraints
