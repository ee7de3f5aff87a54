"""The built zip validates, installs into the sandbox, enables, and unpacks its scipy, numba
and llvmlite wheels; the installed core compiles its kernels with the bundled numba into the
extension's user folder."""

import os
import zipfile

LINUX_WHEELS = [
    "wheels/llvmlite-0.50.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "wheels/numba-0.68.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "wheels/scipy-1.15.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
]


def test_zip_contents(extension_zip):
    names = zipfile.ZipFile(extension_zip).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "addon/bridge.py" in names and "core/__init__.py" in names
    assert sorted(n for n in names if n.startswith("wheels/")) == LINUX_WHEELS
    banned = ("tests/", "scripts/", "demo_blends/", ".venv/", ".git/", "build/")
    assert not [n for n in names if n.startswith(banned) or "__pycache__" in n]


def test_installed_and_enabled(sandbox):
    info = sandbox["install"]
    assert info["result"] == ["FINISHED"]
    assert info["enabled"] and info["loaded"]
    assert info["unpacked"] == ["llvmlite", "numba", "scipy"], \
        "a wheel was not unpacked into the extensions site-packages"
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


def scenario_compiled_kernels(tmp):
    import bpy
    import llvmlite
    import numba
    from numba.core import config

    from scenes import addon_module

    backend, jit = addon_module("core.backend"), addon_module("addon.jit")
    warm_up = addon_module("core.warm_up")
    compiles = []
    stop = backend.watch_compiles(lambda kernel, seconds: compiles.append(kernel))
    active = backend.active()
    warm_up.warm_up()
    stop()
    cache = jit.cache_dir()
    files = sorted(os.path.relpath(os.path.join(d, f), cache)
                   for d, _, fs in os.walk(cache) for f in fs)
    return {"active": active, "numba": numba.__file__, "llvmlite": llvmlite.__file__,
            "cache": cache, "numba_cache_dir": config.CACHE_DIR, "files": files,
            "digest": backend.source_digest(),
            "user_extension_folder": bpy.utils.extension_path_user(jit.EXTENSION),
            "compiled": compiles}


def test_kernels_compile_with_the_bundled_numba(blender, sandbox):
    """The core imports numba and llvmlite from the extension's unpacked wheels (the test
    venv's own numba comes later on sys.path) and numba writes the compiled kernels into
    the extension's user folder."""
    info = blender(scenario_compiled_kernels)
    site = sandbox["install"]["site_packages"]
    assert info["active"] == "numba"
    assert info["numba"].startswith(site + os.sep), info["numba"]
    assert info["llvmlite"].startswith(site + os.sep), info["llvmlite"]
    # the kernels' folder is named by the installed core's sources (a stale one is never read)
    assert info["numba_cache_dir"] == os.path.join(info["cache"], info["digest"])
    assert info["cache"].startswith(os.path.join(info["user_extension_folder"], "numba_cache"))
    assert info["cache"].startswith(str(sandbox["user"]))
    for kernel in ("aba_free", "rnea", "crba", "advance"):
        assert any(f.endswith(".nbi") and f".{kernel}-" in f for f in info["files"]), info["files"]
        assert any(f.endswith(".nbc") and f".{kernel}-" in f for f in info["files"]), info["files"]
