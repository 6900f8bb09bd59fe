"""Definition 1 and Theorems 1-4 (Eq. 1-37) against direct symbolic differentiation."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from mbkron.reference import kron

TOL = 1e-12


def random_matrix_function(rng, shape, q):
    """A random smooth sympy matrix function of q."""
    atoms = [sympy.sin, sympy.cos, sympy.exp, lambda x: x**2, lambda x: x**3 / 3, lambda x: 1 / (2 + x**2)]

    def entry():
        a, b = (sympy.Float(round(v, 3)) for v in rng.uniform(-1, 1, size=2))
        f = atoms[rng.integers(len(atoms))]
        g = atoms[rng.integers(len(atoms))]
        k, m = rng.integers(len(q), size=2)
        return a * f(q[k]) + b * g(q[m]) * q[k] + sympy.Float(round(rng.uniform(-1, 1), 3))

    return sympy.Matrix(shape[0], shape[1], lambda i, j: entry())


def definition_1(A: sympy.Matrix, q) -> sympy.Matrix:
    """Eq. 3 literally: Σ_i Σ_k E_ik ⊗ ∂A_ik/∂q, built with sympy's Kronecker product."""
    m, n = A.shape
    out = sympy.zeros(m * len(q), n)
    for i in range(m):
        for k in range(n):
            E = sympy.zeros(m, n)
            E[i, k] = 1
            grad = sympy.Matrix([A[i, k].diff(s) for s in q])
            out += sympy.kronecker_product(E, grad)
    return out


def evaluate(matrix: sympy.Matrix, q, value) -> np.ndarray:
    return np.array(sympy.lambdify([q], matrix)(value), dtype=float)


SHAPES = [((2, 3), (3, 2)), ((1, 4), (4, 1)), ((3, 3), (3, 2)), ((4, 2), (2, 4))]


@pytest.fixture(params=[2, 3])
def q(request):
    return list(sympy.symbols(f"q1:{request.param + 1}"))


def test_commutation_matrix_is_eq_2_literally():
    for m, n in [(1, 1), (2, 3), (3, 2), (4, 4)]:
        literal = sum(np.kron(kron.elementary(i, k, m, n), kron.elementary(k, i, n, m))
                      for i in range(m) for k in range(n))
        np.testing.assert_array_equal(kron.commutation_matrix(m, n), literal)


def test_commutation_matrix_properties():
    rng = np.random.default_rng(0)
    for m, n in [(2, 3), (3, 2), (4, 4), (1, 5)]:
        U = kron.commutation_matrix(m, n)
        A = rng.normal(size=(m, n))
        np.testing.assert_allclose(U @ kron.vec(A), kron.vec(A.T))
        a, b = rng.normal(size=n), rng.normal(size=m)
        np.testing.assert_allclose(U @ np.kron(a, b), np.kron(b, a))
        np.testing.assert_array_equal(U.T @ U, np.eye(m * n))
    with pytest.raises(ValueError, match="positive"):
        kron.commutation_matrix(0, 2)


def test_eq_87_commutation_of_gradient():
    """Eq. 87: U_{nq,nq} (∇f ⊗ I_nq) = I_nq ⊗ ∇f."""
    g = np.array([[0.3], [-1.2], [2.0]])
    np.testing.assert_array_equal(kron.commutation_matrix(3, 3) @ np.kron(g, np.eye(3)), np.kron(np.eye(3), g))


def test_vec_and_layout_converters_round_trip():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 2, 3, 4))
    np.testing.assert_array_equal(kron.unvec(kron.vec(A), 3, 4), A)
    assert kron.vec(np.arange(6).reshape(2, 3)).tolist() == [0, 3, 1, 4, 2, 5]
    dA = rng.normal(size=(7, 3, 2, 5))  # batch 7, r = 3, A is 2×5
    np.testing.assert_array_equal(kron.from_kron(kron.to_kron(dA), 3), dA)
    d2A = rng.normal(size=(3, 3, 2, 5))
    np.testing.assert_array_equal(kron.from_kron(kron.to_kron(d2A, 2), 3, 2), d2A)
    with pytest.raises(ValueError):
        kron.unvec(np.zeros(5), 2, 3)


def test_definition_1_layout(q):
    rng = np.random.default_rng(2)
    A = random_matrix_function(rng, (3, 2), q)
    value = rng.uniform(-1, 1, size=len(q))
    literal = evaluate(definition_1(A, q), q, value)
    assert literal.shape == (3 * len(q), 2)  # R^{(m r)×n}: Eq. 3's "R^{m×n}" is a typo
    natural_value = np.stack([evaluate(A.diff(s), q, value) for s in q])  # [j, i, k]
    np.testing.assert_allclose(kron.to_kron(natural_value), literal, atol=TOL)
    # second derivatives: ∂(∂A/∂q)/∂q by Definition 1 applied twice
    literal2 = evaluate(definition_1(definition_1(A, q), q), q, value)
    natural2 = np.array([[evaluate(A.diff(s).diff(t), q, value) for t in q] for s in q])
    np.testing.assert_allclose(kron.to_kron(natural2, order=2), literal2, atol=TOL)


@pytest.mark.parametrize("shapes", SHAPES)
def test_theorem_1_product(q, shapes):
    rng = np.random.default_rng(3)
    A = random_matrix_function(rng, shapes[0], q)
    B = random_matrix_function(rng, shapes[1], q)
    for value in rng.uniform(-1, 1, size=(3, len(q))):
        direct = evaluate(definition_1(A * B, q), q, value)
        theorem = kron.product_derivative(evaluate(A, q, value), evaluate(definition_1(A, q), q, value),
                                          evaluate(B, q, value), evaluate(definition_1(B, q), q, value))
        np.testing.assert_allclose(theorem, direct, atol=TOL * max(1, np.abs(direct).max()))


@pytest.mark.parametrize("shape", [(2, 3), (4, 4), (1, 1)])
def test_theorem_2_scalar_product(q, shape):
    rng = np.random.default_rng(4)
    a = random_matrix_function(rng, (1, 1), q)[0, 0]
    A = random_matrix_function(rng, shape, q)
    for value in rng.uniform(-1, 1, size=(3, len(q))):
        direct = evaluate(definition_1(a * A, q), q, value)
        grad_a = np.array([float(a.diff(s).subs(dict(zip(q, value)))) for s in q])
        theorem = kron.scalar_product_derivative(float(a.subs(dict(zip(q, value)))), grad_a,
                                                 evaluate(A, q, value), evaluate(definition_1(A, q), q, value))
        np.testing.assert_allclose(theorem, direct, atol=TOL * max(1, np.abs(direct).max()))


@pytest.mark.parametrize("shapes", [((2, 3), (3, 2)), ((4, 1), (3, 1)), ((2, 2), (1, 3))])
def test_theorem_3_kronecker_product(q, shapes):
    rng = np.random.default_rng(5)
    A = random_matrix_function(rng, shapes[0], q)
    C = random_matrix_function(rng, shapes[1], q)
    for value in rng.uniform(-1, 1, size=(3, len(q))):
        direct = evaluate(definition_1(sympy.kronecker_product(A, C), q), q, value)
        theorem = kron.kronecker_product_derivative(evaluate(A, q, value), evaluate(definition_1(A, q), q, value),
                                                    evaluate(C, q, value), evaluate(definition_1(C, q), q, value))
        np.testing.assert_allclose(theorem, direct, atol=TOL * max(1, np.abs(direct).max()))


@pytest.mark.parametrize("shape", [(2, 3), (4, 4), (3, 1)])
def test_theorem_4_differential(q, shape):
    rng = np.random.default_rng(6)
    A = random_matrix_function(rng, shape, q)
    for value in rng.uniform(-1, 1, size=(3, len(q))):
        dq = rng.normal(size=len(q))
        direct = sum(evaluate(A.diff(s), q, value) * dq[j] for j, s in enumerate(q))  # Σ_j ∂A/∂q_j dq_j
        part_a = kron.differential(evaluate(definition_1(A, q), q, value), dq)
        part_b = kron.differential_from_transpose(evaluate(definition_1(A.T, q), q, value), dq)
        np.testing.assert_allclose(part_a, direct, atol=TOL)
        np.testing.assert_allclose(part_b, direct, atol=TOL)


def test_eq_80_gradient_derivative_is_vec_hessian(q):
    rng = np.random.default_rng(7)
    f = random_matrix_function(rng, (1, 1), q)[0, 0]
    grad = sympy.Matrix([f.diff(s) for s in q])
    value = rng.uniform(-1, 1, size=len(q))
    hessian = evaluate(sympy.hessian(f, q), q, value)
    np.testing.assert_allclose(evaluate(definition_1(grad, q), q, value)[:, 0], kron.vec(hessian), atol=TOL)


def test_elementary_matrix():
    E = kron.elementary(1, 2, 2, 3)
    assert E.shape == (2, 3) and E[1, 2] == 1 and E.sum() == 1
    with pytest.raises(ValueError, match="outside"):
        kron.elementary(2, 0, 2, 3)
