"""Compile, or load from the cache, the numba backend's kernels of every algorithm at a
moment of the caller's choosing (:func:`warm_up`; the add-on runs it in a background
thread when it is enabled): a driver of the public operations on small models, above the
reference modules and :mod:`core.backend`, which it calls as any user does."""

import time

import numpy as np
import scipy.sparse

from . import backend, dynamics
from .contacts import Box, ContactSolver, Plane, Sphere, StaticCollider
from .integrators import Drive, Integrator
from .joints.lower_pairs import Revolute
from .joints.spherical import Free, Spherical
from .joints.spline_curve import SplineCurveJoint
from .joints.spline_surface import SplineJoint
from .lie import se3, so3
from .limits import LimitSolver, ReachCone
from .maximal.skeleton import chain
from .maximal.solver import project
from .model import Model
from .muscles.actuation import MuscleForces, PointPaths, activation_table
from .muscles.hill import HillParameters, MuscleArrays

__all__ = ["warm_up"]


def warm_up():
    """Run every compiled algorithm once, in the order a user is likely to need them, so that
    the kernels compile, or load from the cache, now rather than at the first call that
    needs them:

    1. on a three-body model (a revolute, a cubic spline curve and a spherical joint):
       aba without and with an armature (the implicit method's solve where its steps are
       not one kernel call), the energies and RK4 steps without limits, then with the
       spherical joint in a reach cone, starting outside it (a mechanism's simulation: one
       kernel call per step, compiled with the limit solver only for models with limits;
       every method's steps are the same kernels, the method a run-time code);
    2. the same with the revolute joint driven, with and without the cone (a rig's
       kinematic body: the driven substep, the limits' Gauss-Seidel);
    3. rnea, crba, the nonlinear effects and the joint Jacobians; a muscle across the
       three bodies (its activation dynamics, its path's generalized forces);
    4. a free sphere on a ground plane beside a static box (the contact solver: the
       substep kernels, its Gauss-Seidel, the contact-free check's kinematics and the
       compiled narrow phase, :mod:`core.compiled.narrow`);
    5. the maximal-coordinate skeleton's step and accelerations on a three-body chain, and
       the projection's conjugate gradients;
    6. steps 1 and 3 on a model with an n-DOF spline joint (the large joint kinds,
       the families with ``kernel_large``, compile for such models only).

    Returns the seconds taken; 0.0 on the numpy backend."""
    if backend.active() != "numba":
        return 0.0
    t0 = time.perf_counter()
    th = np.linspace(-1.0, 1.0, 6)
    spline = SplineCurveJoint(se3.from_rp(so3.exp(np.outer(th, [0.0, 0.0, 1.0])),
                                          0.02 * np.stack([th, th * th, 0 * th], axis=1)))
    knots, ramp = np.arange(-3.0, 5.0), 0.3 * np.arange(4.0)
    coefficients = np.zeros((6, 4, 4))
    coefficients[0], coefficients[1] = ramp[:, None], ramp[None, :]      # phi_1 ~ q1, phi_2 ~ q2
    surface = SplineJoint([knots, knots], coefficients)
    offset = se3.from_rp(np.eye(3), np.array([0.0, 0.0, -0.3]))

    def model_of(joints):
        model = Model()
        for i, joint in enumerate(joints):
            model.add_body(f"b{i}", i - 1, joint, offset, 1.0, np.zeros(3), 0.01 * np.eye(3))
        return model

    def dynamics_of(model, q, limits, drive):
        data = model.create_data()
        v = np.full(model.nv, 0.1)
        a = dynamics.aba(model, data, q, v, np.zeros(model.nv))
        dynamics.aba(model, data, q, v, np.zeros(model.nv), armature=np.full(model.nv, 1e-3))
        dynamics.mechanical_energy(model, data, q, v)
        solver = None if limits is None else LimitSolver(model, limits)
        Integrator(model, 1e-3, method="rk4", limits=solver, drive=drive).run(
            q, v, 2, check_energy=False)
        return data, v, a

    chain3 = model_of((Revolute((0.0, 1.0, 0.0)), spline, Spherical()))
    q = chain3.neutral()
    q[-3] = 1.0                                   # outside the cone: the limits engage
    cone = [ReachCone("b2", (0.0, 0.0, 1.0), 0.5)]
    data, v, a = dynamics_of(chain3, q, None, None)
    dynamics_of(chain3, q, cone, None)
    drive = Drive((0,), lambda t: ([0.1 * t], [0.1], [0.0]))
    dynamics_of(chain3, q, None, drive)
    dynamics_of(chain3, q, cone, drive)
    dynamics.rnea(chain3, data, q, v, a)
    dynamics.crba(chain3, data, q)
    dynamics.nonlinear_effects(chain3, data, q, v)
    dynamics.compute_joint_jacobians(chain3, data, q)
    muscle = MuscleArrays([HillParameters("m", 100.0, 0.1, 0.05)])
    MuscleForces(muscle, PointPaths(chain3, [[(0, (0.0, 0.1, 0.0)), (2, (0.1, 0.0, 0.0))]]),
                 activation_table(muscle, {"m": 0.5}, "excitation", 0.01, 1e-3))(0.0, q, v)
    ball = model_of((Free(),))
    q = ball.neutral()
    q[5] = 0.2                                    # resting on the plane at z = -0.2
    contacts = ContactSolver(ball, [("b0", Sphere(0.1))],
                             [Plane(-0.2), StaticCollider(Box((0.1, 0.1, 0.1)), offset)])
    Integrator(ball, 1e-3, 2, "semi_implicit", contacts=contacts).run(
        q, np.zeros(ball.nv), 2, check_energy=False)
    skel, state = chain(3, spherical=(0,))
    skel.step(skel.step(state, 1e-3, update="paper")[0], 1e-3, stabilize=True)
    skel.accelerations(state)
    project(scipy.sparse.identity(2, format="csr"), np.ones(2), np.ones(2))
    large = model_of((Revolute((0.0, 1.0, 0.0)), surface))
    q = large.neutral()
    data, v, a = dynamics_of(large, q, None, None)
    dynamics.rnea(large, data, q, v, a)
    dynamics.crba(large, data, q)
    dynamics.compute_joint_jacobians(large, data, q)
    return time.perf_counter() - t0
