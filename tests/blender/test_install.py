"""The built zip validates, installs into the sandbox, enables, and unpacks its scipy wheel."""

import zipfile


def test_zip_contents(extension_zip):
    names = zipfile.ZipFile(extension_zip).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "addon/bridge.py" in names and "core/__init__.py" in names
    assert [n for n in names if n.startswith("wheels/")] == [
        "wheels/scipy-1.15.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
    banned = ("tests/", "scripts/", "demo_blends/", ".venv/", ".git/", "build/")
    assert not [n for n in names if n.startswith(banned) or "__pycache__" in n]


def test_installed_and_enabled(sandbox):
    info = sandbox["install"]
    assert info["result"] == ["FINISHED"]
    assert info["enabled"] and info["loaded"]
    assert info["scipy_unpacked"], "the scipy wheel was not unpacked into the extensions site-packages"
    assert info["user_path"] == str(sandbox["user"]), "BLENDER_USER_RESOURCES was not honoured"


def scenario_registered(tmp):
    import bpy

    from scenes import addon_module

    ops = sorted(n for n in dir(bpy.ops.spline_joints))
    bridge = addon_module("addon.bridge")
    settings = bpy.types.PoseBone.bl_rna.properties["spline_joints"].fixed_type
    mechanism = bpy.types.Scene.bl_rna.properties["spline_joints_mechanisms"].fixed_type
    return {"ops": ops, "has_settings": hasattr(bpy.types.PoseBone, "spline_joints"),
            "bridge_file": bridge.__file__,
            "property_groups": sorted({settings.identifier, mechanism.identifier,
                                       settings.properties["samples"].fixed_type.identifier,
                                       mechanism.properties["bodies"].fixed_type.identifier}),
            "panels": sorted(n for n in dir(bpy.types) if n.startswith("VIEW3D_PT_spline_joints"))}


def test_operators_registered_from_sandbox(blender, sandbox):
    info = blender(scenario_registered)
    assert {"capture_pose", "capture_range", "delete_sample", "clear_samples"} <= set(info["ops"])
    assert info["has_settings"]
    assert info["bridge_file"].startswith(str(sandbox["user"])), "the add-on was imported from outside the sandbox"
    assert "VIEW3D_PT_spline_joints_capture" in info["panels"]
    # one prefix for every registered class: SPLINE_JOINTS_PG_* for the property groups
    assert info["property_groups"] == ["SPLINE_JOINTS_PG_body_ref", "SPLINE_JOINTS_PG_bone_settings",
                                       "SPLINE_JOINTS_PG_mechanism", "SPLINE_JOINTS_PG_sample"]
