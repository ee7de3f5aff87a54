"""The drag tool: grab a simulated body in the viewport and drag it while the simulation
runs, record the take (or a Simulate Preview) to keys (:mod:`..drag`)."""

from __future__ import annotations

import bpy

from ..drag import DragSession, record_previews
from ._common import reporting

HINT = ("Drag Simulation: move to pull, Ctrl holds exactly, release or right-click lets go, "
        "Enter records to keys, Esc puts everything back")


class SPLINE_JOINTS_OT_drag(bpy.types.Operator):
    """Grab the simulated bone or object, or the linkage body, under the mouse and drag it
    while the simulation runs (Ctrl holds it exactly; releasing or right-click lets go;
    Enter records the take to keys; Esc puts everything back)"""

    bl_idname = "spline_joints.drag"
    bl_label = "Drag Simulation"
    bl_options = {"REGISTER", "UNDO", "BLOCKING"}

    @classmethod
    def poll(cls, context):
        return context.area is not None and context.area.type == "VIEW_3D" \
            and context.region_data is not None

    def invoke(self, context, event):
        return self._start(context, event)

    @reporting
    def _start(self, context, event):
        scene = context.scene
        self._session = DragSession(scene, context.evaluated_depsgraph_get(), context.region,
                                    context.region_data,
                                    (event.mouse_region_x, event.mouse_region_y), event.ctrl)
        wm = context.window_manager
        fps = scene.render.fps / scene.render.fps_base
        self._timer = wm.event_timer_add(1.0 / fps, window=context.window)
        wm.modal_handler_add(self)
        context.workspace.status_text_set(HINT)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        try:
            state, message = self._session.event(
                event.type, event.value, (event.mouse_region_x, event.mouse_region_y),
                event.ctrl)
        except ValueError as exc:
            self._end(context)
            self.report({"ERROR"}, f"Drag stopped, the scene put back: {exc}")
            return {"CANCELLED"}
        if state in ("FINISHED", "CANCELLED"):
            self._end(context)
            self.report({"INFO"}, message)
        elif message:
            context.workspace.status_text_set(message)
        context.area.tag_redraw()
        return {state}

    def _end(self, context):
        context.window_manager.event_timer_remove(self._timer)
        context.workspace.status_text_set(None)


class SPLINE_JOINTS_OT_record_preview(bpy.types.Operator):
    """Key what the scene's Simulate Previews show (all frames of a completed one, the
    frames a live one has simulated) into new actions, the old ones kept on NLA tracks"""

    bl_idname = "spline_joints.record_preview"
    bl_label = "Record Preview"
    bl_options = {"REGISTER", "UNDO"}

    @reporting
    def execute(self, context):
        self.report({"INFO"}, " | ".join(record_previews(context.scene)))
        return {"FINISHED"}


class VIEW3D_T_spline_joints_drag(bpy.types.WorkSpaceTool):
    bl_space_type = "VIEW_3D"
    bl_idname = "spline_joints.drag_tool"
    bl_label = "Drag Simulation"
    bl_description = ("Click a simulated bone or object, or a linkage's body, and drag it "
                      "while the simulation runs")
    bl_icon = "ops.transform.translate"
    bl_keymap = (("spline_joints.drag", {"type": "LEFTMOUSE", "value": "PRESS"}, None),
                 ("spline_joints.drag", {"type": "LEFTMOUSE", "value": "PRESS", "ctrl": True},
                  None))


#: the modes the tool is offered in: the object rig and linkages in Object Mode, bones in Pose
TOOL_MODES = ("OBJECT", "POSE")
_tools = []


def register_tools():
    for mode in TOOL_MODES:
        tool = type(f"VIEW3D_T_spline_joints_drag_{mode.lower()}",
                    (VIEW3D_T_spline_joints_drag,), {"bl_context_mode": mode})
        bpy.utils.register_tool(tool, separator=True)
        _tools.append(tool)


def unregister_tools():
    while _tools:
        bpy.utils.unregister_tool(_tools.pop())


classes = (SPLINE_JOINTS_OT_drag, SPLINE_JOINTS_OT_record_preview)
