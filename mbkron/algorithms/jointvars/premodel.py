"""Pre-modelling: joint variables fitted as smooth functions of the coordinates (Section 3-3).

"The generalized coordinates are swept within their acceptable range using a fixed step size.
For each value ... the algebraic constraints are solved numerically ... The resulting discrete
data points are then mathematically modeled using interpolation functions, such as natural
cubic splines ... By differentiating these explicit smooth functions, the corresponding gradient
vectors and Hessian matrices can be obtained." The dissertation uses cubic splines for the
four-bar linkage and Fourier series for Andrews' squeezer (whose coordinate is a crank angle).

Fits (chosen from the coordinates):

- one coordinate, not periodic: quintic Hermite interpolation of the sweep's values *and* their
  exact first and second derivatives (Eq. 101-102 and 120 at every sweep point, the implicit
  derivatives the solver computes anyway): piecewise quintic, C², errors ``O(h⁶)``, ``O(h⁵)``,
  ``O(h⁴)`` in ``f``, ``∇f``, ``H`` with no end effect. A natural cubic spline through the values
  alone, the dissertation's choice, has ``H`` errors ``O(h²)`` inside and ``O(1)`` at the ends
  (``f'' = 0`` forced there): at the seed's step 0.01 the four-bar's point accelerations reached 5.6
  significant figures where the seed reports 7; the quintic fit gives 9.2 (velocities 11.6, were 8.0).
- one periodic coordinate (``periodic=True``): trigonometric interpolation over one period,
  ``f(q) = w (q − q₀) + a₀ + Σ_k a_k cos kθ + b_k sin kθ`` with ``θ = q − q₀`` and the integer
  winding ``w`` (a joint angle that gains ``2π w`` per turn of the coordinate, like the coupler
  angle relative to the crank); harmonics below ``fourier_cutoff`` times the largest are dropped;
- two coordinates: tensor-product bicubic interpolating spline on the sweep grid (``scipy``
  ``RectBivariateSpline``, ``s = 0``).

The fit error is estimated after fitting by solving afresh at check points of every sweep interval —
the midpoints (cell centres for two coordinates) and, for the quintic fit, also a fraction
``(1 − 1/√5)/2`` into each interval, where its gradient error peaks (the derivative of
``(x − a)³ (x − b)³`` is largest there and zero at the midpoint) — and comparing values, gradients
and Hessians with the exact ones (:meth:`mbkron.algorithms.jointvars.solvers.PositionSolver.evaluate`); see :attr:`PremodelJointVariables.fit_error`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.algorithms.jointvars.solvers import PositionSolver, Solution
from mbkron.core.errors import ConfigurationError
from mbkron.algorithms.jointvars.explicit import JointVariableProvider
from mbkron.multibody.records import Coordinate

__all__ = ["FitError", "PremodelJointVariables"]

# scipy.interpolate (~0.3 s of CPU) and the derivative kernels (numba): imported when a pre-modelled group is
# fitted, not with this module, which every model build imports (mbkron.core.lazy)
_interpolate = LazyModule("scipy.interpolate")


@dataclass(frozen=True)
class FitError:
    """Largest absolute errors of a pre-model at check points of the sweep intervals (see the module
    docstring), against fresh exact solves.

    Attributes
    ----------
    value, gradient, hessian : float
        ``max |f_fit − f|``, ``max |∇f_fit − ∇f|``, ``max |H_fit − H|`` over all joint variables
        and check points.
    points : int
        Number of points checked.
    """

    value: float
    gradient: float
    hessian: float
    points: int


def _sweep(solver: PositionSolver, grid: NDArray, order: int = 0) -> list[tuple[Solution, NDArray | None, NDArray | None]]:
    """Solve along consecutive points ``grid`` (shape (n, nq)), continuing from the reference: each point's
    ``(solution, ∇f, H)`` (the exact derivatives up to ``order``, Eq. 101-102, 120; None above)."""
    results, start = [], solver.reference
    for q in grid:
        if order == 0:
            start, grad, hess = solver.solve(q, start=start), None, None
        else:
            start, grad, hess = solver.evaluate(q, start, None, order)
        results.append((start, grad, hess))
    return results


class _QuinticHermite:
    """Piecewise quintic Hermite interpolant in one coordinate of values, first and second derivatives
    (each of shape (n, m) at the n knots ``x``)."""

    def __init__(self, x: NDArray, values: NDArray, first: NDArray, second: NDArray):
        self.range = ((x[0], x[-1]),)
        bpoly = _interpolate.BPoly
        coefficients = np.stack([bpoly.from_derivatives(x, np.stack([values[:, j], first[:, j], second[:, j]], axis=1)).c
                                 for j in range(values.shape[1])], axis=-1)  # Bernstein form, (6, n − 1, m)
        self.spline = _interpolate.PPoly.from_bernstein_basis(_interpolate.BPoly(coefficients, x))
        self.first, self.second = self.spline.derivative(1), self.spline.derivative(2)

    def __call__(self, q: NDArray, order: int):
        x = q[..., 0]
        f = self.spline(x)
        grad = self.first(x)[..., None] if order >= 1 else None
        hess = self.second(x)[..., None, None] if order >= 2 else None
        return f, grad, hess


class _Fourier:
    """Trigonometric interpolant over one period plus a linear winding term."""

    def __init__(self, q0: float, samples: NDArray, winding: NDArray, cutoff: float):
        n = samples.shape[0]  # odd: harmonics 0..(n-1)/2, no Nyquist term
        theta = 2.0 * np.pi * np.arange(n) / n
        coefficients = np.fft.rfft(samples - np.outer(theta, winding), axis=0) / n
        amplitude = np.abs(coefficients).max(axis=1)
        kept = np.flatnonzero(amplitude > cutoff * amplitude.max())
        last = kept.max() if kept.size else 0
        self.q0, self.winding = q0, winding
        self.range = ((-math.inf, math.inf),)
        self.mean = coefficients[0].real
        self.k = np.arange(1, last + 1, dtype=float)
        self.a = 2.0 * coefficients[1 : last + 1].real
        self.b = -2.0 * coefficients[1 : last + 1].imag
        self.harmonics = last
        # f, ∂f/∂θ, ∂²f/∂θ² = Re(Σ_k e^{ikθ} w_k) with w_k = (a − ib, ik(a − ib), −k²(a − ib)) per joint variable:
        # one complex product for all three orders
        ab = self.a - 1j * self.b
        k = self.k[:, None]
        self.weights = np.concatenate([ab, 1j * k * ab, -(k**2) * ab], axis=1)
        self.constant = np.concatenate([self.mean, winding, np.zeros_like(winding)])

    def __call__(self, q: NDArray, order: int):
        theta = q[..., 0] - self.q0
        nj = self.winding.size
        values = (np.exp(1j * np.multiply.outer(theta, self.k)) @ self.weights).real + self.constant
        f = values[..., :nj] + np.multiply.outer(theta, self.winding)
        grad = values[..., nj:2 * nj, None] if order >= 1 else None
        hess = values[..., 2 * nj:, None, None] if order >= 2 else None
        return f, grad, hess


class _TensorSpline:
    """Bicubic interpolating tensor-product spline in two coordinates, one per joint variable."""

    def __init__(self, x: NDArray, y: NDArray, values: NDArray):
        self.range = ((x[0], x[-1]), (y[0], y[-1]))
        spline = _interpolate.RectBivariateSpline
        self.splines = [spline(x, y, values[..., j], kx=3, ky=3, s=0) for j in range(values.shape[-1])]

    def __call__(self, q: NDArray, order: int):
        x, y = q[..., 0], q[..., 1]

        def ev(dx: int, dy: int) -> NDArray:
            return np.stack([s.ev(x, y, dx=dx, dy=dy) for s in self.splines], axis=-1)

        f = ev(0, 0)
        grad = hess = None
        if order >= 1:
            grad = np.stack([ev(1, 0), ev(0, 1)], axis=-1)
        if order >= 2:
            mixed = ev(1, 1)
            hess = np.stack([np.stack([ev(2, 0), mixed], -1), np.stack([mixed, ev(0, 2)], -1)], -2)
        return f, grad, hess


class PremodelJointVariables(JointVariableProvider):
    """Joint variables pre-modelled from a sweep of the coordinates (Section 3-3).

    Parameters
    ----------
    solver : PositionSolver
        Solves the constraints (on the assembly branch) at the sweep points.
    coordinates : sequence of Coordinate
        The model's coordinates (one or two); their ranges bound the sweep unless ``range`` is
        given, and ``periodic`` selects the Fourier fit for a single coordinate.
    step : float or sequence of float
        Sweep step per coordinate (default 0.01, the seed's).
    range : sequence of (float, float), optional
        Sweep interval per coordinate (default: the coordinates' ranges, which must be finite
        unless the coordinate is periodic).
    fourier_cutoff : float
        Relative amplitude below which trailing Fourier harmonics are dropped (default 1e-15).
    estimate_error : bool
        Compute :attr:`fit_error` (default True).

    Attributes
    ----------
    fit_error : FitError or None
    range : tuple of (float, float)
        The covered interval of each coordinate (infinite for a Fourier fit).
    """

    def __init__(
        self,
        solver: PositionSolver,
        coordinates: Sequence[Coordinate],
        *,
        step: float | Sequence[float] = 0.01,
        range: Sequence[tuple[float, float]] | None = None,
        fourier_cutoff: float = 1e-15,
        estimate_error: bool = True,
    ):
        nq = len(coordinates)
        if nq not in (1, 2):
            raise ValueError(f"pre-modelling supports one or two coordinates, the model has {nq}")
        steps = np.broadcast_to(np.asarray(step, dtype=float), (nq,))
        if not np.all(steps > 0):
            raise ValueError(f"`step` must be positive, got {step!r}")
        self.solver = solver
        self.names = tuple(c.name for c in coordinates)
        intervals = [tuple(map(float, r)) for r in range] if range is not None else [c.range for c in coordinates]
        if len(intervals) != nq:
            raise ValueError(f"`range` needs one (low, high) pair per coordinate ({nq}), got {range!r}")
        if nq == 1 and coordinates[0].periodic and range is None:
            self._fit = self._fourier(coordinates[0], steps[0], fourier_cutoff)
        else:
            for c, (lo, hi) in zip(coordinates, intervals):
                if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                    raise ValueError(
                        f"pre-modelling needs a finite range for coordinate `{c.name}`, got ({lo}, {hi}); "
                        f"give the coordinate a range or the `range` setting"
                    )
            grids = [np.linspace(lo, hi, max(2, round((hi - lo) / h)) + 1) for (lo, hi), h in zip(intervals, steps)]
            self._fit = self._spline(grids)
        self.range = self._fit.range
        self.fit_error = self._estimate_error() if estimate_error else None

    # ------------------------------------------------------------------ fitting
    def _spline(self, grids: list[NDArray]):
        if len(grids) == 1:
            x = grids[0]
            swept = _sweep(self.solver, x[:, None], 2)
            solutions, derivatives = [s for s, _, _ in swept], [(g, h) for _, g, h in swept]
            width = np.diff(x)
            self._check_points = np.sort(np.concatenate([x[:-1] + 0.5 * width,
                                                         x[:-1] + 0.5 * (1.0 - 5.0**-0.5) * width]))[:, None]
            return _QuinticHermite(x, np.array([s.f for s in solutions]), np.array([g[:, 0] for g, _ in derivatives]),
                                   np.array([h[:, 0, 0] for _, h in derivatives]))
        x, y = grids
        # Boustrophedon order keeps consecutive sweep points adjacent.
        snake = [(i, j) for i in range(x.size) for j in (range(y.size) if i % 2 == 0 else reversed(range(y.size)))]
        solutions = [s for s, _, _ in _sweep(self.solver, np.array([(x[i], y[j]) for i, j in snake]))]
        values = np.empty((x.size, y.size, self.size))
        for (i, j), s in zip(snake, solutions):
            values[i, j] = s.f
        xm, ym = 0.5 * (x[1:] + x[:-1]), 0.5 * (y[1:] + y[:-1])
        self._check_points = np.array([(a, b) for k, a in enumerate(xm) for b in (ym if k % 2 == 0 else ym[::-1])])
        return _TensorSpline(x, y, values)

    def _fourier(self, coordinate: Coordinate, step: float, cutoff: float):
        lo = coordinate.range[0]
        q0 = lo if math.isfinite(lo) else float(self.solver.reference.q[0])
        n = math.ceil(2.0 * np.pi / step)
        n += 1 - n % 2  # odd
        theta = 2.0 * np.pi * np.arange(n + 1) / n
        solutions = [s for s, _, _ in _sweep(self.solver, (q0 + theta)[:, None])]
        values = np.array([s.f for s in solutions])
        turns = (values[-1] - values[0]) / (2.0 * np.pi)
        winding = np.round(turns)
        if np.max(np.abs(turns - winding)) > 1e-8:
            raise ConfigurationError(
                f"the joint variables are not periodic in coordinate `{coordinate.name}`: after one turn "
                f"from q = {q0} they change by {(values[-1] - values[0]).tolist()}, not multiples of 2π"
            )
        self._check_points = (q0 + theta[:-1] + np.pi / n)[:, None]
        return _Fourier(q0, values[:-1], winding, cutoff)

    def _estimate_error(self) -> FitError:
        points = self._check_points
        exact = _sweep(self.solver, points, 2)
        f, grad, hess = self._fit(points, 2)
        errors = [0.0, 0.0, 0.0]
        for k, (s, g, h) in enumerate(exact):
            errors[0] = max(errors[0], np.max(np.abs(f[k] - s.f)))
            errors[1] = max(errors[1], np.max(np.abs(grad[k] - g)))
            errors[2] = max(errors[2], np.max(np.abs(hess[k] - h)))
        return FitError(*errors, points=len(exact))

    # ------------------------------------------------------------------ evaluation
    @property
    def size(self) -> int:
        return self.solver.system.size

    def evaluate(self, q, order):
        for k, (lo, hi) in enumerate(self.range):
            if math.isinf(lo) and math.isinf(hi):
                continue
            values = q[..., k]
            slack = 1e-12 * max(1.0, abs(lo), abs(hi))
            outside = (values < lo - slack) | (values > hi + slack)
            if np.any(outside):
                where = np.argwhere(outside)[0]
                raise ConfigurationError(
                    f"q = {q[tuple(where)].tolist()} lies outside the pre-modelled range [{lo}, {hi}] of "
                    f"coordinate `{self.names[k]}` (joint variables "
                    f"{', '.join(self.solver.names)}); widen the `range` setting or the coordinate's range"
                )
        return self._fit(q, order)
