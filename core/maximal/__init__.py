"""Maximal-coordinate solvers: Hakenberg skeletons (seed 001), ArtiSynth-style joint couplings
(seed 002) and Faure's fast assembly with Stoermer stepping (seed 004), all on the one
mass-weighted projection solver of :mod:`core.maximal.solver`."""
