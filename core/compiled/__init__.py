"""The compiled backend (numba): the twins of the reference modules' hot paths, reached only
through :mod:`core.backend`, which imports :mod:`core.compiled.twins` (the table of twins) on
the numba backend.

* Plain data: :mod:`core.compiled.layout` (the packed arrays' layout, integers) and
  :mod:`core.compiled.pack` (a model packed into them).
* Glue, one module per reference module, each calling its kernels: :mod:`core.compiled.dynamics`
  (:mod:`core.dynamics`), :mod:`core.compiled.integrators` (:mod:`core.integrators`),
  :mod:`core.compiled.limits` (:mod:`core.limits`), :mod:`core.compiled.contact_solver`
  (:mod:`core.contacts.solver`), :mod:`core.compiled.skeleton` (:mod:`core.maximal.skeleton`,
  with its kernels), :mod:`core.compiled.projection` (:mod:`core.maximal.solver`) and
  :mod:`core.compiled.actuation` (:mod:`core.muscles.actuation`).
* Kernels: :mod:`core.compiled.kernels` (the tree algorithms, stepping, limits, conjugate
  gradients and muscle forces, one file per reference module, and the numba options of all),
  :mod:`core.compiled.contacts`, :mod:`core.compiled.contact_step` and
  :mod:`core.compiled.narrow` (the contact solver's).

Each file opens with the reference functions it mirrors and the test that compares them
(docs/architecture.md has the whole table)."""
