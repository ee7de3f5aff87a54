"""The compiled backend of the core's hot paths (numba): see :mod:`core.backend` for the
switch, :mod:`core.compiled.layout` for the packed arrays, :mod:`core.compiled.pack` for
packing a model, :mod:`core.compiled.kernels` for the index of the entry kernels the
algorithms call (each defined in the file that mirrors its reference module:
:mod:`~core.compiled.dynamics`, :mod:`~core.compiled.integrators`,
:mod:`~core.compiled.limits`, :mod:`~core.compiled.cg`, with :mod:`~core.compiled.joints`,
:mod:`~core.compiled.kinematics`, :mod:`~core.compiled.spatial` and
:mod:`~core.compiled.expcoords` beneath them; :mod:`core.compiled.options` holds the numba
options of all) and :mod:`core.compiled.dispatch` for the calls the algorithms hand over to;
:mod:`core.compiled.skeleton` holds the maximal-coordinate skeleton step."""
