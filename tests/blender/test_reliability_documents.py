"""Joint documents in Blender: Export/Import Joint JSON report missing folders, folders, binary,
malformed and oversized files and never leave a partial file; the live drive reports a bad
stored document once and skips the bone; Drive from Joint handles joints of any coordinate
count and changes nothing when it refuses."""

import os

import numpy as np


def _cancelled(op, **kwargs):
    """The error message of an operator call that must be cancelled."""
    try:
        op(**kwargs)
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError(f"{op} did not fail")


def _stored_joint(tmp, obj, doc):
    """Import ``doc`` (a core JointDocument) onto the active bone through a saved file."""
    import bpy

    from scenes import addon_module

    path = f"{tmp}/stored.json"
    addon_module("core.io").save(path, doc)
    assert bpy.ops.spline_joints.import_joint(filepath=path) == {"FINISHED"}
    os.remove(path)
    return obj.pose.bones["shin"].spline_joints.joint_json


def scenario_export_import_faults(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    joints = addon_module("core.joints")
    obj = leg_armature()
    s = obj.pose.bones["shin"].spline_joints
    text = _stored_joint(tmp, obj, io.JointDocument(joints.Revolute((1, 0, 0), -1.0, 2.0),
                                                    ("flexion",)))
    messages = {}
    export, imp = bpy.ops.spline_joints.export_joint, bpy.ops.spline_joints.import_joint
    messages["export missing folder"] = _cancelled(export, filepath=f"{tmp}/missing/j.json")
    os.mkdir(f"{tmp}/folder")
    messages["export onto folder"] = _cancelled(export, filepath=f"{tmp}/folder")
    good = f"{tmp}/good.json"
    assert export(filepath=good) == {"FINISHED"}
    before = open(good, "rb").read()
    # a .blend edited by hand: the stored report holds a NaN; exporting over the file keeps it
    s.joint_json = text.replace('"fit_report": null', '"fit_report": {"rms_position_mm": NaN}')
    messages["export bad stored"] = _cancelled(export, filepath=good)
    s.joint_json = text

    with open(f"{tmp}/image.json", "wb") as fh:
        fh.write(bytes(range(256)) * 8)
    with open(f"{tmp}/broken.json", "w") as fh:
        fh.write('{"schema": "spline_joints.joint", "version": 1, "joint": {')
    with open(f"{tmp}/deep.json", "w") as fh:
        fh.write('{"schema": "spline_joints.joint", "version": 1, "joint": '
                 + "[" * 100000 + "]" * 100000 + "}")
    with open(f"{tmp}/big.json", "w") as fh:
        fh.write('{"name": "' + "x" * (io.MAX_DOCUMENT_SIZE + 10) + '"}')
    for name in ("image", "broken", "deep", "big", "missing", "folder"):
        path = f"{tmp}/{name}" if name == "folder" else f"{tmp}/{name}.json"
        messages[f"import {name}"] = _cancelled(imp, filepath=path)
        assert s.joint_json == text, name
    leftovers = sorted(set(os.listdir(tmp)) - {"good.json", "folder", "image.json", "broken.json",
                                               "deep.json", "big.json"})
    return {"messages": messages, "kept": open(good, "rb").read() == before,
            "leftovers": leftovers, "folder": os.listdir(f"{tmp}/folder"),
            "missing": os.path.exists(f"{tmp}/missing")}


def test_export_and_import_report_bad_paths_and_files(blender):
    out = blender(scenario_export_import_faults)
    m = out["messages"]
    assert "missing does not exist: create it or choose another" in m["export missing folder"]
    assert "is a folder, not a file" in m["export onto folder"]
    assert "rms_position_mm is nan" in m["export bad stored"]
    assert "image.json is not a joint JSON document: it is not UTF-8 text" in m["import image"]
    assert "not valid JSON" in m["import broken"]
    assert "nested 100001 levels deep" in m["import deep"]
    assert "bytes, more than the" in m["import big"]
    assert "cannot read" in m["import missing"] and "No such file" in m["import missing"]
    assert "is a folder, not a file; choose a file inside it" in m["import folder"]
    assert out["kept"] and not out["missing"] and out["folder"] == []
    assert out["leftovers"] == []


def scenario_bad_stored_document_in_live_drive(tmp):
    import contextlib
    import io as pyio

    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    joints = addon_module("core.joints")
    bones = addon_module("core.bones")
    bridge = addon_module("addon.bridge")
    good = leg_armature("Good")
    joint = joints.Revolute((1, 0, 0), -1.0, 2.0)
    _stored_joint(tmp, good, io.JointDocument(joint, ("flexion",)))
    assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
    shin = good.pose.bones["shin"]
    scene = bpy.context.scene
    bad = bpy.data.objects.new("Bad", good.data.copy())
    scene.collection.objects.link(bad)
    bpy.context.view_layer.update()
    bad_shin = bad.pose.bones["shin"]
    bad_shin.spline_joints.joint_json = ('{"schema": "spline_joints.joint", "version": 1, "joint": '
                                         + "[" * 50000 + "]" * 50000 + "}")
    bad_shin.spline_joints.drive = True
    shin["sj_q0"] = 0.0
    shin.keyframe_insert('["sj_q0"]', frame=1)
    shin["sj_q0"] = 1.5
    shin.keyframe_insert('["sj_q0"]', frame=10)
    rest = bridge.read_rest_T_parent_child(shin)
    out, err = pyio.StringIO(), pyio.StringIO()
    errors = []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for f in range(1, 11):
            scene.frame_set(f)
            bpy.context.view_layer.update()
            expected = bones.joint_basis(joint, rest, [float(shin["sj_q0"])])
            errors.append(float(np.abs(np.array(shin.matrix_basis) - expected).max()))
    text = out.getvalue() + err.getvalue()
    status = bad_shin.spline_joints.fit_status
    bad_basis, last = [list(r) for r in bad_shin.matrix_basis], float(shin["sj_q0"])
    bad_shin.spline_joints.joint_json = shin.spline_joints.joint_json  # repaired: driven again
    scene.frame_set(5)
    bpy.context.view_layer.update()
    repaired = bones.joint_basis(joint, rest, bridge.read_coordinate_values(bad_shin, 1))
    return {"reports": text.count("cannot drive Bad/shin"), "tracebacks": text.count("Traceback"),
            "status": status, "errors": errors, "repaired_status": bad_shin.spline_joints.fit_status,
            "repaired_error": float(np.abs(np.array(bad_shin.matrix_basis) - repaired).max()),
            "last": last, "bad_basis": bad_basis}


def test_a_bad_stored_document_is_reported_once_and_skipped(blender):
    out = blender(scenario_bad_stored_document_in_live_drive)
    assert out["reports"] == 1 and out["tracebacks"] == 0, out
    assert out["status"].startswith("cannot drive: the joint stored on this bone cannot be read")
    assert "nested 50001 levels deep" in out["status"]
    np.testing.assert_allclose(out["bad_basis"], np.eye(4), atol=1e-7)  # left as it was
    assert max(out["errors"]) < 1e-5 and out["last"] == 1.5  # the other bone is driven
    assert out["repaired_status"] == "imported" and out["repaired_error"] < 1e-5


def _drive_panel_sliders():
    """The custom properties the Drive panel draws for the active bone, in order."""
    import bpy

    drawn = []

    class Layout:
        def __getattr__(self, attr):
            return lambda *a, **k: self

        def prop(self, data, name, **kw):
            drawn.append(name)
            return self

    panel = bpy.types.VIEW3D_PT_spline_joints_drive
    panel.draw(type("P", (), {"layout": Layout()})(), bpy.context)
    return [n for n in drawn if n.startswith('["sj_q')]


def scenario_drive_joints_of_any_coordinate_count(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    joints = addon_module("core.joints")
    bones = addon_module("core.bones")
    bridge = addon_module("addon.bridge")
    errors = []
    cases = {"Spherical": joints.Spherical(), "Planar": joints.Planar(), "Free": joints.Free()}
    for name, joint in cases.items():
        obj = leg_armature(name)
        shin = obj.pose.bones["shin"]
        ranges = [[-0.5, 0.9]] * joint.nq
        _stored_joint(tmp, obj, io.JointDocument(joint, tuple(f"c{i}" for i in range(joint.nq)),
                                                 ranges))
        assert bpy.ops.spline_joints.drive_joint() == {"FINISHED"}
        assert sorted(shin.keys()) == [f"sj_q{i}" for i in range(joint.nq)]
        sliders = _drive_panel_sliders()
        if sliders != [f'["sj_q{i}"]' for i in range(joint.nq)]:
            errors.append((name, "Drive panel sliders", sliders))
        ui = shin.id_properties_ui(f"sj_q{joint.nq - 1}").as_dict()
        assert abs(ui["min"] + 0.5) < 1e-6 and abs(ui["max"] - 0.9) < 1e-6
        shin[f"sj_q{joint.nq - 1}"] = 0.7
        obj.update_tag()
        bpy.context.view_layer.update()
        q = bridge.read_coordinate_values(shin, joint.nq)
        expected = bones.joint_basis(joint, bridge.read_rest_T_parent_child(shin), q)
        err = np.abs(np.array(shin.matrix_basis) - expected).max()
        if not err < 1e-5:
            errors.append((name, float(err)))
    return {"errors": errors}


def test_drive_joints_of_three_and_six_coordinates(blender):
    """Any coordinate count drives the bone and gets one Drive panel slider per coordinate."""
    assert blender(scenario_drive_joints_of_any_coordinate_count)["errors"] == []


def scenario_refused_drive_changes_nothing(tmp):
    import bpy

    from scenes import addon_module, leg_armature

    io = addon_module("core.io")
    joints = addon_module("core.joints")
    obj = leg_armature()
    shin = obj.pose.bones["shin"]
    _stored_joint(tmp, obj, io.JointDocument(joints.Spherical(), ("x", "y", "z"), [[-1.0, 1.0]] * 3))
    basis = [list(r) for r in shin.matrix_basis]
    messages = []
    for value in ("bent", float("nan")):
        shin["sj_q1"] = value
        messages.append(_cancelled(bpy.ops.spline_joints.drive_joint))
        assert sorted(shin.keys()) == ["sj_q1"] and not shin.spline_joints.drive
        assert [list(r) for r in shin.matrix_basis] == basis
    return {"messages": messages}


def test_a_refused_drive_leaves_no_properties_behind(blender):
    messages = blender(scenario_refused_drive_changes_nothing)["messages"]
    assert "custom property 'sj_q1' on 'shin' is not a number" in messages[0]
    assert "NaN or inf" in messages[1]
