"""Every panel has a help button that opens its guide: the page exists in docs/, and the
operator opens the site at the Docs URL preference, else the site built beside the extension,
else the docs/ folder's Markdown, else the manifest's website, and says what to set when there
is none (the installed extension has no docs folder)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def scenario_help_buttons(tmp):
    from pathlib import Path

    import bpy

    from scenes import addon_module
    from scripts.blender_kit import MODULE

    headers = {}

    class Layout:
        def operator(self, idname, **kw):
            button = type("Button", (), {})()
            headers[current] = (idname, kw.get("icon"), button)
            return button

    for name in (n for n in dir(bpy.types) if n.startswith("VIEW3D_PT_spline_joints")):
        current = name
        panel = getattr(bpy.types, name)
        panel.draw_header_preset(type("P", (), {"layout": Layout(), "guide": panel.guide})(),
                                 bpy.context)
    buttons = {n: [idname, icon, getattr(b, "page", None)] for n, (idname, icon, b) in headers.items()}

    guides = addon_module("addon.guides")
    root = Path(tmp)
    (root / "docs" / "guides").mkdir(parents=True)
    (root / "docs" / "guides" / "knee.md").write_text("# knee")
    urls = {"docs": guides.guide_url("guides/knee.md", root=root)}
    (root / "build" / "site" / "guides").mkdir(parents=True)
    (root / "build" / "site" / "guides" / "knee.html").write_text("<h1>knee</h1>")
    urls["site"] = guides.guide_url("guides/knee.md", root=root)
    urls["preference"] = guides.guide_url("guides/knee.md", "https://docs.example/sj/", root=root)
    bare = root / "installed"
    bare.mkdir()
    (bare / "blender_manifest.toml").write_text('id = "spline_joints"\nwebsite = "https://docs.example/site"\n')
    urls["website"] = guides.guide_url("guides/rig.md", root=bare)
    (bare / "blender_manifest.toml").write_text('id = "spline_joints"\n')
    try:
        guides.guide_url("guides/rig.md", root=bare)
        urls["nothing"] = None
    except ValueError as exc:
        urls["nothing"] = str(exc)

    # the operator in the installed extension (no docs beside it): the preference decides
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.docs_url = ""
    try:
        bpy.ops.spline_joints.open_guide(page="guides/rig.md")
        refused = None
    except RuntimeError as exc:
        refused = str(exc)
    prefs.docs_url = "https://docs.example/sj"
    opened = sorted(bpy.ops.spline_joints.open_guide(page="guides/rig.md"))
    return {"buttons": buttons, "urls": urls, "refused": refused, "opened": opened,
            "root": str(root)}


def test_every_panel_opens_its_guide(blender):
    out = blender(scenario_help_buttons)
    assert len(out["buttons"]) == 10
    for panel, (idname, icon, page) in out["buttons"].items():
        assert idname == "spline_joints.open_guide" and icon == "HELP", panel
        assert (ROOT / "docs" / page).is_file(), (panel, page)
    assert out["buttons"]["VIEW3D_PT_spline_joints_fit"][2] == "guides/knee.md"
    assert out["buttons"]["VIEW3D_PT_spline_joints_collider"][2] == "guides/rig.md"
    assert out["buttons"]["VIEW3D_PT_spline_joints_rig_muscles"][2] == "guides/rig.md"
    assert out["buttons"]["VIEW3D_PT_spline_joints_mocap"][2] == "guides/motion-capture.md"
    root = out["root"]
    assert out["urls"]["docs"] == Path(root, "docs", "guides", "knee.md").as_uri()
    assert out["urls"]["site"] == Path(root, "build", "site", "guides", "knee.html").as_uri()
    assert out["urls"]["preference"] == "https://docs.example/sj/guides/knee.html"
    assert out["urls"]["website"] == "https://docs.example/site/guides/rig.html"
    assert "set Docs URL in Edit > Preferences" in out["urls"]["nothing"]
    assert out["refused"] and "set Docs URL" in out["refused"]
    assert out["opened"] == ["FINISHED"]
