"""The compiled backend of the tree algorithms (numba): see :mod:`core.backend` for the
switch, :mod:`core.compiled.layout` for the packed arrays, :mod:`core.compiled.pack` for
packing a model, :mod:`core.compiled.kernels` for the kernels (the only module importing
numba) and :mod:`core.compiled.dispatch` for the calls the algorithms hand over to;
:mod:`core.compiled.skeleton` holds the maximal-coordinate skeleton step (its kernels
compiled with the same settings)."""
