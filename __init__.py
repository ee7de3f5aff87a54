"""Spline Joints: Blender extension entry point.

Blender imports this package as ``bl_ext.<repo>.spline_joints``. Registration is handed
over to :mod:`.addon`, imported only when Blender calls :func:`register`, so that importing
the package (for example by the build tools or by the core's tests) never needs ``bpy``.
"""


def register():
    from . import addon

    addon.register()


def unregister():
    from . import addon

    addon.unregister()
