"""Blender side of Spline Joints: the classes tuple and register/unregister.

Imported only from the extension's register(), so ``bpy`` is available here. register()
first points the compiled kernels' cache at the extension's user folder (:mod:`.jit`), before
any core module can load them, and hands the live handler (:mod:`.handlers`) the previews'
playback as frame callbacks.

This is the only module that imports :mod:`.operators`: the operators are the leaf of the
add-on, wrappers around the engine modules beside this one (tests/core/test_addon_layers.py).
"""

import bpy

from . import handlers, jit, panels, preferences, previews, properties, rig_panel, rig_properties
from . import shape_overlay
from . import linkage_panel, linkage_properties, mocap_panel, mocap_properties
from .operators import classes as operator_classes
from .operators import drag, mocap, opensim, ragdoll

classes = (*preferences.classes, *properties.classes, *rig_properties.classes, *operator_classes,
           *panels.classes, *rig_panel.classes, *linkage_properties.classes,
           *linkage_panel.classes, *mocap_properties.classes, *mocap_panel.classes)


def register():
    jit.register()
    for cls in classes:
        bpy.utils.register_class(cls)
    properties.register_properties()
    rig_properties.register_properties()
    linkage_properties.register_properties()
    mocap_properties.register_properties()
    handlers.register()
    handlers.register_frame_callback(previews.play_previews)
    handlers.register_frame_callback(previews.play_live_mechanisms)
    shape_overlay.register()
    opensim.register_menus()
    mocap.register_menus()
    ragdoll.register_menus()
    drag.register_tools()


def unregister():
    drag.unregister_tools()
    ragdoll.unregister_menus()
    mocap.unregister_menus()
    opensim.unregister_menus()
    shape_overlay.unregister()
    handlers.unregister_frame_callback(previews.play_live_mechanisms)
    handlers.unregister_frame_callback(previews.play_previews)
    handlers.unregister()
    mocap_properties.unregister_properties()
    linkage_properties.unregister_properties()
    rig_properties.unregister_properties()
    properties.unregister_properties()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
    jit.unregister()
