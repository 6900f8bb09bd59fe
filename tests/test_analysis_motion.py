"""A trial's kinematics from a motion file: OpenSim's padding, IIR low-pass, resampling and splines."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mbkron
from mbkron.analysis import motion
from mbkron.analysis.motion import find_index, lowpass_iir, pad, splines, trial_kinematics
from mbkron.io.storage import Storage, StorageError, write_storage
from tests import test_analysis_id as shared

model, trial = shared.model, shared.trial  # the stored trial's fixtures


def test_pad_reflects_and_negates_about_the_end_rows():
    values = np.array([[1.0], [2.0], [4.0], [7.0]])
    # before: 2·1 − (4, 2) ; after: 2·7 − (4, 2)
    np.testing.assert_array_equal(pad(values, 2)[:, 0], [-2.0, 0.0, 1.0, 2.0, 4.0, 7.0, 10.0, 12.0])
    np.testing.assert_array_equal(pad(values, 0), values)
    with pytest.raises(ValueError, match="`size` must be between 0 and 3"):
        pad(values, 4)


def _butterworth_gain(f, fc, dt):
    """The amplitude gain of a 3rd-order Butterworth low-pass (bilinear, pre-warped) run forward and
    backward: |H|² = 1 / (1 + (tan(π f dt) / tan(π fc dt))⁶)."""
    return 1.0 / (1.0 + (np.tan(np.pi * f * dt) / np.tan(np.pi * fc * dt)) ** 6)


@pytest.mark.parametrize("f", [2.0, 6.0, 12.0])
def test_the_filter_has_the_gain_of_a_zero_phase_third_order_butterworth(f):
    dt, fc = 0.01, 6.0
    t = np.arange(4000) * dt
    x = np.column_stack([np.sin(2 * np.pi * f * t), np.cos(2 * np.pi * f * t)])
    y = lowpass_iir(x, dt, fc)
    middle = slice(1500, 2500)  # far from the ends' transients
    expected = _butterworth_gain(f, fc, dt) * x[middle]  # zero phase: scaled, not shifted
    np.testing.assert_allclose(y[middle], expected, rtol=0, atol=1e-6)


def test_the_filter_starts_from_the_first_three_samples_and_keeps_a_constant():
    x = np.full((50, 1), 3.5)
    np.testing.assert_allclose(lowpass_iir(x, 0.01, 6.0), x, rtol=1e-13)
    x = np.random.default_rng(1).normal(size=(30, 2))
    y = lowpass_iir(x, 0.01, 6.0)
    assert y.shape == x.shape and np.all(np.isfinite(y))


def test_a_cutoff_above_half_the_sampling_frequency_is_lowered_with_a_warning():
    x = np.random.default_rng(2).normal(size=(40, 1))
    with pytest.warns(UserWarning, match="not below half the sampling frequency"):
        y = lowpass_iir(x, 0.01, 60.0)
    np.testing.assert_array_equal(y, lowpass_iir(x, 0.01, 49.0))
    with pytest.raises(ValueError, match="`values` must have at least 4 rows"):
        lowpass_iir(x[:3], 0.01, 6.0)


def test_the_natural_interpolant_is_gcvspls_fit_of_error_variance_zero():
    x = np.sort(np.random.default_rng(3).uniform(0, 1, 25))
    y = np.column_stack([np.sin(5 * x), np.exp(x)])
    t = np.linspace(x[0], x[-1], 101)
    for half_order in (2, 3):
        natural, gcv = splines(x, y, half_order, "natural"), splines(x, y, half_order, "gcvspl")
        np.testing.assert_allclose(natural(x), y, rtol=0, atol=1e-13)  # interpolates
        for k in range(3):
            np.testing.assert_allclose(natural(t, derivative=k), gcv(t, derivative=k), rtol=0,
                                       atol=1e-7 * 10 ** (2 * k))
    with pytest.raises(ValueError, match="`method` must be one of natural, gcvspl"):
        splines(x, y, 3, "cubic")


def test_find_index_is_the_last_row_at_or_before():
    time = np.array([0.0, 0.1, 0.2])
    assert [find_index(time, t) for t in (-1.0, 0.0, 0.15, 0.2, 5.0)] == [0, 0, 1, 2, 2]


def _motion(model, time, q, in_degrees=True, extra=()):
    scale = np.array([180 / np.pi if in_degrees and c.unit == "rad" else 1.0 for c in model.coordinate_records])
    labels = model.coordinates + tuple(name for name, _ in extra)
    values = np.column_stack([q * scale] + [column for _, column in extra]) if extra else q * scale
    return Storage("Coordinates", labels, time, values, in_degrees)


def test_rates_and_accelerations_of_a_smooth_motion(model):
    """Away from the ends (where the natural end conditions bend the spline), the quintic interpolant of
    samples of q(t) = a sin(ω t) + b differentiates to the exact q̇, q̈ within its interpolation error."""
    time = np.arange(0.0, 2.0, 0.01)
    phase = np.linspace(0, 1, model.nq)
    q = 0.3 * np.sin(2 * np.pi * time[:, None] + phase) + model.default_q
    kinematics = trial_kinematics(model, _motion(model, time, q, extra=[("marker_x", time)]))
    assert kinematics.ignored == ("marker_x",) and kinematics.lowpass is None
    np.testing.assert_array_equal(kinematics.time, time)
    inner = slice(40, -40)
    w = 2 * np.pi
    np.testing.assert_allclose(kinematics.q[inner], q[inner], rtol=0, atol=1e-12)
    np.testing.assert_allclose(kinematics.qd[inner], (0.3 * w * np.cos(w * time[:, None] + phase))[inner], atol=1e-8)
    np.testing.assert_allclose(kinematics.qdd[inner], (-0.3 * w**2 * np.sin(w * time[:, None] + phase))[inner],
                               atol=1e-6)


def test_unevenly_printed_times_are_resampled_at_the_smallest_step(model, tmp_path):
    time = np.round(np.arange(0.4, 1.0, 1 / 60), 8)  # OpenSim's 8 decimals: steps differ by 1e-8
    q = np.zeros((time.size, model.nq)) + model.default_q
    write_storage(tmp_path / "m.mot", "Coordinates", model.coordinates, time, _motion(model, time, q).values,
                  in_degrees=True)
    kinematics = trial_kinematics(model, tmp_path / "m.mot", lowpass=6.0)
    steps = np.diff(kinematics.time)
    np.testing.assert_allclose(steps, np.min(np.diff(time)), rtol=0, atol=1e-14)
    assert kinematics.time[0] <= time[0] and time[-1] - steps[0] <= kinematics.time[-1] <= time[-1]
    np.testing.assert_allclose(kinematics.q, np.broadcast_to(model.default_q, kinematics.q.shape), atol=1e-12)
    np.testing.assert_allclose(kinematics.qdd, 0.0, atol=1e-9)


def test_missing_columns_too_few_rows_and_bad_ranges_are_named(model):
    time = np.arange(10) * 0.01
    q = np.zeros((10, model.nq))
    table = _motion(model, time, q)
    partial = Storage("Coordinates", table.labels[2:], time, table.values[:, 2:], True)
    with pytest.raises(StorageError, match="no column for the coordinate\\(s\\) pelvis_tilt, pelvis_list"):
        trial_kinematics(model, partial)
    short = Storage("Coordinates", table.labels, time[:5], table.values[:5], True)
    with pytest.raises(StorageError, match=re.escape(f"5 rows; the splines of the coordinates need at least "
                                                     f"{motion.MIN_FRAMES}")):
        trial_kinematics(model, short)
    with pytest.raises(ValueError, match="`time_range` must have start ≤ end"):
        trial_kinematics(model, table, time_range=(0.05, 0.01))
    with pytest.raises(ValueError, match="`time_range` \\(5.0, 6.0\\) holds no frame"):
        trial_kinematics(model, table, time_range=(5.0, 6.0))
    with pytest.raises(ValueError, match="`lowpass` must be a finite cut-off frequency"):
        trial_kinematics(model, table, lowpass=float("nan"))
    with pytest.raises(ValueError, match="`spline` must be one of natural, gcvspl"):
        trial_kinematics(model, table, spline="akima")
    assert trial_kinematics(model, table, lowpass=-1.0).lowpass is None  # OpenSim's "no filter"
    # OpenSim's default time range, unbounded: with the filter, the padded rows (5 before, 5 after) too
    padded = trial_kinematics(model, table, lowpass=6.0, time_range=(-np.inf, np.inf))
    assert padded.time.size == 20 and padded.time[0] == pytest.approx(-0.05)


def test_a_file_with_time_going_back_is_refused(model, tmp_path):
    path = tmp_path / "back.mot"
    rows = "\n".join(f"{t}\t" + "\t".join(["0"] * model.nq) for t in (0.0, 0.01, 0.005, 0.02, 0.03, 0.04))
    path.write_text("Coordinates\nversion=1\ninDegrees=yes\nendheader\n" + "\t".join(("time",) + model.coordinates)
                    + "\n" + rows + "\n")
    with pytest.raises(StorageError, match="time must increase"):
        trial_kinematics(model, path)


def test_the_trial_with_its_frames_in_the_model_order(trial, model):
    kinematics = trial_kinematics(model, trial / "subject01_walk1_ik.mot", 6.0, (0.4, 1.6))
    assert kinematics.coordinates == model.coordinates and kinematics.q.shape == (73, model.nq)
    assert kinematics.ignored == () and kinematics.source.endswith("subject01_walk1_ik.mot")
    assert isinstance(mbkron.analysis.TrialKinematics, type)
