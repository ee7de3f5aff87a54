"""The panels' help button: opens the panel's guide (:mod:`..guides` says which copy)."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from ..guides import guide_url
from ..preferences import docs_url
from ._common import reporting


class SPLINE_JOINTS_OT_open_guide(bpy.types.Operator):
    """Open this panel's guide in the web browser"""

    bl_idname = "spline_joints.open_guide"
    bl_label = "Open Guide"

    page: StringProperty(name="Page", description="The guide's page under docs/, e.g. guides/knee.md",
                         default="getting-started.md")

    @reporting
    def execute(self, context):
        url = guide_url(self.page, docs_url(context))
        if not bpy.app.background:            # a background run has no browser to open
            bpy.ops.wm.url_open(url=url)
        self.report({"INFO"}, f"Guide: {url}")
        return {"FINISHED"}


classes = (SPLINE_JOINTS_OT_open_guide,)
