"""The project's conventions, stated once.

* Twists are ``[w; v]`` (angular first), wrenches ``[moment; force]``, as in seed 000
  (Lee & Terzopoulos 2008, eq. 1) and Featherstone.
* Transforms are 4x4 float64 arrays named ``T_a_b``: the pose of frame b in frame a.
* Joint Jacobians are body-frame (right) Jacobians, ``S = [(G^-1 dG/dq_i)^vee]``
  (seed 000 eq. 12); joint Hessians are ``H[j] = dS/dq_j`` with shape ``(nv, 6, nv)``.
* Lie-group Jacobians: the *right* Jacobian ``Jr(x)`` satisfies
  ``exp(x + dx) = exp(x) exp(Jr(x) dx) + O(dx^2)``, the *left* one
  ``exp(x + dx) = exp(Jl(x) dx) exp(x) + O(dx^2)``; ``Jl(x) = Jr(-x)``.
* Quaternions, where needed, are ``w, x, y, z`` (Blender's order; scipy's is x, y, z, w).
* SI units: metre, kilogram, second, radian. Blender scenes are in metres.
"""
