"""The compiled backend (numba): the twins of the reference modules' hot paths, reached only
through :mod:`core.backend`, which imports :mod:`core.compiled.twins` (the table of twins)
on the numba backend. :mod:`core.compiled.layout` holds the packed arrays' layout (plain
integers), :mod:`core.compiled.pack` packs a model, :mod:`core.compiled.kernels` holds the
kernels; each glue module mirrors one reference module: :mod:`core.compiled.dynamics`
(:mod:`core.dynamics`), :mod:`core.compiled.integrators` (:mod:`core.integrators`),
:mod:`core.compiled.limits` (:mod:`core.limits`), :mod:`core.compiled.contact_solver`
(:mod:`core.contacts.solver`, with the kernels of :mod:`core.compiled.contacts`,
:mod:`core.compiled.contact_step` and :mod:`core.compiled.narrow`),
:mod:`core.compiled.skeleton` (:mod:`core.maximal.skeleton`) and
:mod:`core.compiled.projection` (:mod:`core.maximal.solver`)."""
