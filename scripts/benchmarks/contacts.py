"""Contact benchmark: wall milliseconds per step of a capsule chain dropped on the ground
(10, 30 and 100 links: a free first link and ball joints, capsules, a plane with friction,
self-collision on) against the number of bodies and contacts, on both backends of
:mod:`core.backend`, and the same scene in MuJoCo (capsules, plane, same friction, same
step) in the same run, with the difference of the settled links' heights.

    python scripts/bench.py --only contacts [--quick]

Each core figure is the median of ``repeat`` runs (3 for 10 links, else 1; quick 1) of
``duration`` simulated seconds (1 s; quick 0.25 s) at 240 steps per second with 2 substeps (symplectic Euler, the
contact solver in each substep); MuJoCo takes the 2 substeps as 2 ``mj_step`` calls of the
substep. The scene builders are shared with tests/core/test_contacts.py.
"""

import time

import numpy as np

from core import backend
from core.contacts import Capsule, ContactSolver, Plane
from core.integrators import Integrator
from core.joints.spherical import Free, Spherical
from core.lie import se3, so3
from core.mechanisms.shapes import rod_inertia
from core.model import Model

FPS, SUBSTEPS = 240.0, 2


def chain(n, radius=0.03, length=0.3, mass=0.5, gravity=(0.0, 0.0, -9.81)):
    """A chain of n capsule links along their body x axes (a Free first link, ball joints at
    the links' ends): ``(model, shapes)`` with one :class:`Capsule` per link."""
    m = Model(gravity=gravity, name="capsule_chain")
    for i in range(n):
        m.add_body(f"l{i}", i - 1, Free() if i == 0 else Spherical(),
                   None if i == 0 else se3.from_rp(np.eye(3), [length, 0.0, 0.0]),
                   mass, [0.5 * length, 0.0, 0.0], rod_inertia(mass, length, radius))
    shapes = [(i, Capsule(radius, (0.0, 0.0, 0.0), (length, 0.0, 0.0))) for i in range(n)]
    return m, shapes


def capsule_chain(n, radius=0.03, length=0.3, mass=0.5, mu=0.8, drop=0.3):
    """The dropped chain: ``(model, shapes, q0, plane)``, its axis tilted about y so that its
    far end is 0.1 m lower than its first joint and ``drop`` (m) above the ground (it lands
    end first), the joints turned 0.3 rad about z one way and the other in turn (a
    zig-zag), the ground a :class:`Plane` at z = 0 with friction ``mu``."""
    m, shapes = chain(n, radius, length, mass)
    q0 = m.neutral()
    q0[:3] = [0.0, np.arcsin(0.1 / (n * length)), 0.0]
    q0[5] = drop + radius + 0.1
    q0[5 + 3 * np.arange(1, n)] = 0.3 * (-1.0) ** np.arange(1, n)
    return m, shapes, q0, Plane(0.0, friction=mu)


def mujoco_capsule_chain(n, q0, dt, radius=0.03, length=0.3, mass=0.5, mu=0.8, g=9.81):
    """The same chain in MuJoCo: ``(MjModel, MjData)`` with the state at ``q0`` (a freejoint
    and ball joints, the same inertias, capsules, a plane, sliding friction ``mu``), or None
    if MuJoCo is not installed."""
    try:
        import mujoco
    except ImportError:
        return None
    from scipy.spatial.transform import Rotation
    I = rod_inertia(mass, length, radius)
    body = ""
    for i in reversed(range(n)):
        joint = "<freejoint/>" if i == 0 else '<joint type="ball"/>'
        pos = "0 0 0" if i == 0 else f"{length} 0 0"
        body = (f'<body pos="{pos}">{joint}<inertial pos="{length / 2} 0 0" mass="{mass}" '
                f'diaginertia="{I[0, 0]} {I[1, 1]} {I[2, 2]}"/><geom type="capsule" '
                f'fromto="0 0 0 {length} 0 0" size="{radius}" friction="{mu} 0.005 0.0001"/>'
                f'{body}</body>')
    xml = (f'<mujoco><option timestep="{dt}" gravity="0 0 {-g}"/><worldbody>'
           f'<geom type="plane" size="50 50 0.1" friction="{mu} 0.005 0.0001"/>{body}'
           f'</worldbody></mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)

    def quat(r):
        x, y, z, w = Rotation.from_matrix(so3.exp(r)).as_quat()
        return [w, x, y, z]
    data.qpos[:3] = q0[3:6]
    data.qpos[3:7] = quat(q0[:3])
    for i in range(1, n):
        data.qpos[7 + 4 * (i - 1):11 + 4 * (i - 1)] = quat(q0[3 * i + 3:3 * i + 6])
    return model, data


def link_heights(model, data_core, q, length):
    """Heights ``(n,)`` of the links' centres of mass at ``q``."""
    from core.kinematics import update_kinematics
    T = update_kinematics(model, data_core, q)
    return np.einsum("nab,b->na", T[:, :3, :3], [0.5 * length, 0.0, 0.0])[:, 2] + T[:, 2, 3]


def _core_run(n, duration, repeat, backend_name):
    if backend_name == "numba" and not backend.available():
        return None
    previous = backend.use(backend_name)
    try:
        if backend_name == "numba":                      # compile or load the kernels
            m, shapes, q0, plane = capsule_chain(2)
            Integrator(m, 1.0 / FPS, SUBSTEPS, "semi_implicit",
                       contacts=ContactSolver(m, shapes, [plane], self_collision=True)).run(
                q0, np.zeros(m.nv), 2)
        walls, solver, tr = [], None, None
        for _ in range(repeat):
            m, shapes, q0, plane = capsule_chain(n)
            solver = ContactSolver(m, shapes, [plane], self_collision=True)
            # the dense dynamics: the recursive aba (numpy above 256 DOF, numba's kernels)
            # loses accuracy on the long zig-zag chain with a tilted free root
            integ = Integrator(m, 1.0 / FPS, SUBSTEPS, "semi_implicit", contacts=solver,
                               aba_method="dense")
            tr = integ.run(q0, np.zeros(m.nv), int(round(duration * FPS)), check_energy=False)
            walls.append(tr.wall_time)
    finally:
        backend.use(previous)
    return m, solver.report(), tr, float(np.median(walls))


def bench_contacts(quick=False):
    """The contact table for scripts/bench.py."""
    from .common import table
    duration = 0.25 if quick else 1.0
    repeat = 1 if quick else 3
    steps = int(round(duration * FPS))
    rows = []
    for n in (10, 30, 100):
        runs = {b: _core_run(n, duration, repeat if n == 10 else 1, b)
                for b in ("numpy", "numba")}
        m, rep, tr, wall = runs["numpy"]
        fast = runs["numba"]
        mj = mujoco_capsule_chain(n, capsule_chain(n)[2], 1.0 / FPS / SUBSTEPS)
        mj_ms, diff = "", ""
        if mj is not None:
            import mujoco
            walls = []
            for _ in range(repeat):
                model, data = mujoco_capsule_chain(n, capsule_chain(n)[2],
                                                   1.0 / FPS / SUBSTEPS)
                t0 = time.perf_counter()
                for _ in range(steps * SUBSTEPS):
                    mujoco.mj_step(model, data)
                walls.append(time.perf_counter() - t0)
            mj_ms = float(np.median(walls)) / steps * 1e3
            h = link_heights(m, m.create_data(), tr.q[-1], 0.3)
            diff = float(np.abs(np.sort(h) - np.sort(data.xipos[1:, 2])).max()) * 1e3
        rows.append([n, m.nv, float(rep.contacts.mean()), int(rep.contacts.max()),
                     wall / steps * 1e3, "" if fast is None else fast[3] / steps * 1e3,
                     mj_ms, "" if mj_ms == "" else wall / steps * 1e3 / mj_ms,
                     "" if mj_ms == "" or fast is None else fast[3] / steps * 1e3 / mj_ms,
                     rep.worst_penetration * 1e3, diff])
    return [table(
        f"Contacts: capsule chain dropped on the ground, {duration:g} s at {FPS:g} Hz x "
        f"{SUBSTEPS} substeps (10 links: median of {repeat} runs; 30, 100: 1 run), MuJoCo in "
        "the same run",
        ["links", "DOF", "contacts per substep (mean)", "contacts (max)",
         "numpy ms / step", "numba ms / step", "MuJoCo ms / step", "numpy / MuJoCo",
         "numba / MuJoCo",
         "worst penetration (mm)", "max |height - MuJoCo's| at the end (mm)"], rows,
        note="a step is 2 substeps, each one contact solve (narrow and broad phase, one "
             "projected Gauss-Seidel of contacts and limits on the dense W = J M^-1 J^T); "
             "both backends run the dense dynamics (CRBA + Cholesky); on numba a step is "
             "one kernel call (core/compiled/contact_step.py: contact_substeps) while its "
             "contact problems take at most COMPILED_SOLVE_WORK multiply-adds, else each "
             "substep is a few kernel calls and numpy's BLAS products. MuJoCo: 2 mj_step calls of the "
             "substep per step, its soft contacts (default solref/solimp) and its default "
             "pyramidal friction cone; heights: the links' centres of mass at the end of "
             "the run.")]
