"""The built zip of this Blender's Python line validates, installs into the sandbox, enables,
and unpacks its c3d, scipy, numba and llvmlite wheels; the installed core compiles its kernels with
the bundled numba into the extension's user folder; the kernels the zip ships load without
compiling and bake the same frames as kernels compiled in the session; the other line's zip is
refused with a message naming the Blender versions it is for."""

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
from _blender_settings import BUILD_TIMEOUT, PYTHON, ROOT

#: the linux-x64 wheels and Blender range of each Python line's zip
LINES = {
    "3.11": {"wheels": [
        "wheels/c3d-0.6.0-py3-none-any.whl",
        "wheels/llvmlite-0.50.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "wheels/numba-0.68.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "wheels/scipy-1.15.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    ], "min": "4.2.0", "max": "5.1.0", "name": "blender_4.2_to_5.0"},
    "3.13": {"wheels": [
        "wheels/c3d-0.6.0-py3-none-any.whl",
        "wheels/llvmlite-0.50.0-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "wheels/numba-0.68.1-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "wheels/scipy-1.18.1-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    ], "min": "5.1.0", "max": None, "name": "blender_5.1_and_later"},
}


@pytest.mark.smoke
def test_zip_contents(extension_zip):
    line = LINES[PYTHON]
    archive = zipfile.ZipFile(extension_zip)
    names = archive.namelist()
    assert line["name"] in extension_zip.name
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "addon/bridge.py" in names and "core/__init__.py" in names
    assert sorted(n for n in names if n.startswith("wheels/")) == line["wheels"]
    banned = ("tests/", "scripts/", "demo_blends/", ".venv/", ".git/", "build/")
    assert not [n for n in names if n.startswith(banned) or "__pycache__" in n]
    # the compiled kernels, under the installed core's source digest
    assert any(n.startswith("kernel_cache/") and n.endswith(".nbi") for n in names)
    manifest = tomllib.loads(archive.read("blender_manifest.toml").decode())
    assert manifest["blender_version_min"] == line["min"]
    assert manifest.get("blender_version_max") == line["max"]
    assert sorted("./" + w for w in line["wheels"]) == sorted(
        w for w in manifest["wheels"] if "manylinux" in w or w.endswith("-none-any.whl"))


@pytest.mark.smoke
def test_installed_and_enabled(sandbox):
    info = sandbox["install"]
    assert info["result"] == ["FINISHED"]
    assert info["enabled"] and info["loaded"]
    assert info["unpacked"] == ["c3d", "llvmlite", "numba", "scipy"], \
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


@pytest.mark.smoke
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


@pytest.mark.smoke
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


def scenario_first_use(tmp, compile_here):
    """The kernels compiled in this process: by the meta-rig ragdoll demo's bake (contacts,
    limits, 29 bones) unless ``compile_here``, then by the hinge-chain mechanism's, whose
    frames' coordinates (hex floats) are returned too. ``compile_here``: empty the kernel
    cache first (after the add-on seeded it, before any kernel loads), so every kernel the
    hinge chain needs compiles in this process."""
    import bpy
    import numpy as np
    from numba.core import config

    from scenes import addon_module, bake_rig

    backend, jit = addon_module("core.backend"), addon_module("addon.jit")
    if compile_here:
        shutil.rmtree(os.path.join(jit.cache_dir(), backend.source_digest()))
    compiles = []
    backend.watch_compiles(lambda kernel, seconds: seconds is None or compiles.append(kernel))
    if not compile_here:
        bpy.ops.wm.open_mainfile(filepath=os.path.join(ROOT, "demo_blends", "metarig_ragdoll.blend"))
        bake_rig(bpy.context.scene, bpy.context.scene.objects["metarig"])
    mech = addon_module("core.mechanisms")
    result = mech.simulate_mechanism(mech.DEMOS["hinge_chain"](duration=0.5))
    return {"compiled": compiles, "cpu": config.CPU_NAME, "portable": backend.portable_cpu(),
            "q": [x.hex() for x in np.asarray(result.q, dtype=float).ravel()]}


@pytest.mark.slow
def test_shipped_kernels_load_and_bake_the_same_frames(blender, sandbox):
    """After installing, the first session copies the zip's kernels into the user folder and
    the ragdoll demo's bake and a mechanism's compile nothing; kernels compiled in the
    session (for the same CPU, core.backend.portable_cpu()) simulate the same frames, bit
    for bit."""
    cache = sandbox["user"] / "extensions" / ".user" / "user_default" / "spline_joints" / "numba_cache"
    shutil.rmtree(cache, ignore_errors=True)             # as a fresh install leaves it
    shipped = blender(scenario_first_use, compile_here=False)
    assert shipped["compiled"] == []
    compiled = blender(scenario_first_use, compile_here=True)
    assert compiled["compiled"], "the kernels were not compiled in the session"
    assert shipped["cpu"] == compiled["cpu"] == shipped["portable"]
    assert len(shipped["q"]) > 100 and compiled["q"] == shipped["q"]


def scenario_install_refused(tmp, zip_path):
    import bpy

    from scenes import printed_reports

    result, printed = printed_reports(lambda: bpy.ops.extensions.package_install_files(
        filepath=zip_path, repo="user_default", enable_on_install=True))
    folder = os.path.join(os.environ["BLENDER_USER_RESOURCES"], "extensions", "user_default",
                          "spline_joints_other")
    return {"result": sorted(result), "printed": printed, "installed": os.path.isdir(folder)}


@pytest.mark.smoke
def test_other_lines_zip_is_refused(blender, tmp_path):
    """This Blender refuses the zip built for the other Python line and says which Blender
    versions that zip is for (installed under another id, so the sandbox's own install is not
    replaced if the refusal fails)."""
    other = next(v for v in LINES if v != PYTHON)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"),
                           "--platform", "linux-x64", "--python", other],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    built = zipfile.ZipFile(proc.stdout.strip().splitlines()[-1])
    renamed = tmp_path / "other.zip"
    with zipfile.ZipFile(renamed, "w") as out:
        for item in built.infolist():
            data = built.read(item)
            if item.filename == "blender_manifest.toml":
                data = data.replace(b'id = "spline_joints"', b'id = "spline_joints_other"')
            out.writestr(item, data)
    info = blender(scenario_install_refused, zip_path=str(renamed))
    assert not info["installed"], info
    # the extension manager prints the refusal with the version bound the zip sets
    bound = LINES[other]["max"] or LINES[other]["min"]
    refusal = next(line for line in info["printed"].splitlines()
                   if line.startswith("ERROR spline_joints_other"))
    assert f"version ({bound})" in refusal, refusal
