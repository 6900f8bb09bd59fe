"""Shortest paths over wrap surfaces (sphere, cylinder, ellipsoid, torus): compiled solvers."""
