"""Spline Joints numeric core: numpy + scipy only, never Blender.

Sub-packages: ``lie`` (SO(3)/SE(3)), ``expcoords`` (seed 003), ``bspline``,
``joints`` (seed 000), and the solvers built on them. Conventions are stated once
in :mod:`core.conventions`.
"""
