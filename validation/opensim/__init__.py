"""Comparisons with OpenSim 4.6 (optional dependency: ``pip install opensim``)."""
