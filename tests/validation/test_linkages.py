"""Four-bar and five-bar point kinematics against the independent DAE reference (Section 4-3).

A short version of ``python -m validation.linkages``: the exact solvers must agree with
``validation.dae`` (absolute coordinates, no mbkron code) to at least 10 significant figures
(the seed reports 7 and 6); pre-modelling and finite differences to their documented accuracy.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbkron.examples import linkages
from validation.linkages import dae_point, five_bar_dae, four_bar_dae, mbkron_point, significant_figures

TIMES = np.linspace(0.0, 4.0, 9)[:-1] + 0.137  # a handful of times, off the Hermite knots


@pytest.fixture(scope="module")
def four_bar_reference():
    trajectory = linkages.four_bar_trajectory()
    body, point = linkages.FOUR_BAR_POINT
    return dae_point(linkages.four_bar("lu"), four_bar_dae(trajectory), trajectory, TIMES, body, point)


@pytest.fixture(scope="module")
def five_bar_reference():
    trajectory = linkages.five_bar_trajectory()
    body, point = linkages.FIVE_BAR_POINT
    return dae_point(linkages.five_bar("lu"), five_bar_dae(trajectory), trajectory, TIMES, body, point)


@pytest.mark.parametrize("solver, digits", [("lu", 10), ("projection", 10), ("premodel", 8)])
def test_four_bar_point_p(four_bar_reference, solver, digits):
    v, a = mbkron_point(linkages.four_bar(solver), linkages.four_bar_trajectory(), TIMES, *linkages.FOUR_BAR_POINT)
    assert significant_figures(v, four_bar_reference[0]) >= digits
    assert significant_figures(a, four_bar_reference[1]) >= digits


@pytest.mark.parametrize("solver, digits", [("projection", 10), ("lu", 10), ("finite_difference", 7)])
def test_five_bar_point_p(five_bar_reference, solver, digits):
    v, a = mbkron_point(linkages.five_bar(solver), linkages.five_bar_trajectory(), TIMES, *linkages.FIVE_BAR_POINT)
    assert significant_figures(v, five_bar_reference[0]) >= digits
    assert significant_figures(a, five_bar_reference[1]) >= digits


def test_significant_figures_definition():
    b = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert significant_figures(b + [[0.0, 5e-8], [0.0, 0.0]], b) == pytest.approx(8.0)
