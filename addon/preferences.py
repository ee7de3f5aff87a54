"""The add-on's preferences (Edit > Preferences > Add-ons > Spline Joints)."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

#: the extension's module name (``bl_ext.<repository>.spline_joints``), the preferences' key
ADDON_MODULE = __name__.rpartition(".addon.")[0]


class SPLINE_JOINTS_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_MODULE

    docs_url: StringProperty(
        name="Docs URL",
        description="Address of the documentation site the panels' help buttons open (its "
                    "pages are <address>/<page>.html); empty: the site built beside the "
                    "extension, its docs folder, or the manifest's website",
        default="")

    def draw(self, context):
        self.layout.prop(self, "docs_url")


def docs_url(context):
    """The Docs URL preference ("" when unset or the preferences are not registered)."""
    addon = context.preferences.addons.get(ADDON_MODULE)
    return addon.preferences.docs_url if addon and addon.preferences else ""


classes = (SPLINE_JOINTS_AP_preferences,)
