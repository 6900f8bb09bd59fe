"""mbkron's ODE against the independent Shabana-style DAE reference, for every regression case
(short runs; the long ones are `python -m validation.ode_vs_dae`)."""

import dataclasses

import pytest

from validation.ode_vs_dae import cases, compare


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name.split(" (")[0])
def test_ode_agrees_with_dae_reference(case):
    case = dataclasses.replace(case, t_end=0.005 if "Andrews" in case.name else 0.3)
    result = compare(case, t_end=0.3, samples=60, rtol=1e-11, atol=1e-12)
    assert result.rms_angle < 1e-9 and result.max_angle < 1e-8
    assert result.rms_rate < 1e-7
    assert result.dae_position_drift < 1e-10  # projection keeps the DAE on its constraints
