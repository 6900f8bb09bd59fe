"""Analysis of measured motion: inverse dynamics with external loads, muscle analysis, static
optimisation, joint reactions and computed-torque tracking over whole trials (issue #17)."""
