"""Hostile and careless inputs on the surfaces users feed from outside: .osim, .vtp,
.mot/.sto and joint JSON files, linkage runs, sweeps and bake's input check.

Each class of problem has its own section: small inputs that take all memory or time, special
files that hang a reader, raw exceptions, silently wrong results, data loss and races, weak
messages. The hostile files are generated here. A case that could hang or exhaust the
machine runs in a forked child under a memory limit and a time limit (:func:`isolated`), so a
regression fails the test instead of taking the machine down.
"""

import base64
import errno
import fcntl
import importlib.util
import math
import multiprocessing
import os
import re
import resource
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from core.errors import InvalidInputError
from core.io import load, read_motion, read_osim, read_vtp
from core.io.c3d import read_c3d
from core.io.osim import parse_osim

ROOT = Path(__file__).resolve().parents[2]
HYPOTHESIS = settings(max_examples=25, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


def _script(name):
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _child(conn, fn, args, memory):
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        conn.send(("returned", fn(*args)))
    except InvalidInputError as exc:
        conn.send(("refused", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - the kind is the result
        conn.send((type(exc).__name__, str(exc)[:300]))


def isolated(fn, *args, timeout=30.0, memory=3 * 2 ** 30):
    """``(outcome, message)`` of ``fn(*args)`` in a forked child limited to ``memory`` bytes
    and ``timeout`` seconds: outcome "refused" (InvalidInputError, with its message),
    "returned" (with what ``fn`` returned), the name of another exception, or "timeout"."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, memory))
    proc.start()
    child.close()
    if parent.poll(timeout):
        result = parent.recv()
    else:
        result = ("timeout", f"no answer within {timeout} s")
    proc.kill()
    proc.join()
    return result


# -- generators of hostile files ----------------------------------------------------------------

def osim_text(bodies="", joints="", constraints="", version="40000", declaration=""):
    return (f'{declaration}<OpenSimDocument Version="{version}"><Model name="m">'
            "<gravity>0 -9.80665 0</gravity><Ground name=\"ground\"/>"
            f"<BodySet><objects>{bodies}</objects></BodySet>"
            f"<JointSet><objects>{joints}</objects></JointSet>"
            f"<ConstraintSet><objects>{constraints}</objects></ConstraintSet>"
            "</Model></OpenSimDocument>")


def body(name, mass="1", geometry="", components=""):
    return (f'<Body name="{name}"><mass>{mass}</mass><mass_center>0 0 0</mass_center>'
            f"<inertia>1 1 1 0 0 0</inertia><attached_geometry>{geometry}</attached_geometry>"
            f"<components>{components}</components></Body>")


def pin(name, parent, child, coordinate, frames="", translation="0 0 0"):
    return (f'<PinJoint name="{name}"><socket_parent_frame>{parent}</socket_parent_frame>'
            f"<socket_child_frame>{child}</socket_child_frame>"
            f'<coordinates><Coordinate name="{coordinate}"><default_value>0</default_value>'
            f"</Coordinate></coordinates><frames>{frames}"
            f'<PhysicalOffsetFrame name="{name}_offset"><socket_parent>{parent}</socket_parent>'
            f"<translation>{translation}</translation><orientation>0 0 0</orientation>"
            "</PhysicalOffsetFrame></frames></PinJoint>")


def custom(name, parent, child, coordinates, function):
    """A CustomJoint whose rotation1 is ``function`` of ``coordinates``."""
    cs = "".join(f'<Coordinate name="{c}"><default_value>0</default_value></Coordinate>'
                 for c in coordinates)
    return (f'<CustomJoint name="{name}"><socket_parent_frame>{parent}</socket_parent_frame>'
            f"<socket_child_frame>{child}</socket_child_frame><coordinates>{cs}</coordinates>"
            '<SpatialTransform><TransformAxis name="rotation1"><coordinates>'
            f"{' '.join(coordinates)}</coordinates><axis>1 0 0</axis>"
            f'<function>{function}</function></TransformAxis></SpatialTransform></CustomJoint>')


def one_body(**body_kw):
    return osim_text(body("b", **body_kw), pin("j", "/ground", "/bodyset/b", "q"))


def coupler(name, dependent, independent):
    return (f'<CoordinateCouplerConstraint name="{name}"><independent_coordinate_names>'
            f"{independent}</independent_coordinate_names><dependent_coordinate_name>"
            f"{dependent}</dependent_coordinate_name><coupled_coordinates_function>"
            "<LinearFunction><coefficients>1 0</coefficients></LinearFunction>"
            "</coupled_coordinates_function></CoordinateCouplerConstraint>")


def chain_model(n, child_first):
    """``n`` bodies in a chain of pin joints, the joints listed child first or parent first."""
    bodies = "".join(body(f"b{i}") for i in range(n))
    joints = [pin(f"j{i}", "/ground" if i == 0 else f"/bodyset/b{i - 1}", f"/bodyset/b{i}",
                  f"q{i}") for i in range(n)]
    return osim_text(bodies, "".join(joints[::-1] if child_first else joints))


def vtp_text(block_header, stream, points=1):
    """A .vtp of one zlib-compressed points array: ``block_header`` (nblocks, block size, last
    block size, compressed sizes...) as UInt32 and the zlib ``stream``."""
    head = base64.b64encode(struct.pack(f"<{len(block_header)}I", *block_header)).decode()
    data = base64.b64encode(stream).decode()
    return ('<?xml version="1.0"?><VTKFile type="PolyData" version="1.0" '
            'byte_order="LittleEndian" header_type="UInt32" compressor="vtkZLibDataCompressor">'
            f'<PolyData><Piece NumberOfPoints="{points}" NumberOfPolys="0"><Points>'
            f'<DataArray type="Float64" NumberOfComponents="3" format="binary">{head}{data}'
            "</DataArray></Points></Piece></PolyData></VTKFile>")


def motion_text(rows, header="nRows={rows}", cell="0"):
    lines = ["m", "version=1", header.format(rows=rows), "nColumns=2", "inDegrees=no",
             "endheader", "time\tq"]
    return "\n".join(lines) + "\n" + f"{cell}\t0\n" * rows


# ==============================================================================================
# 1. Small inputs that take all memory or time
# ==============================================================================================

def _read_measured(reader, path):
    """``(outcome "read" or "refused", message, peak bytes Python allocated)`` of
    ``reader(path)``."""
    import tracemalloc

    tracemalloc.start()
    try:
        try:
            reader(path)
            outcome, message = "read", ""
        except InvalidInputError as exc:
            outcome, message = "refused", str(exc)
        return outcome, message, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@HYPOTHESIS
@example(declared=1000, actual=64 * 2 ** 20)
@given(declared=st.integers(1, 2 ** 32 - 1), actual=st.integers(24, 64 * 2 ** 20))
def test_a_zlib_block_inflates_to_what_its_header_declares_at_most(tmp_path, declared, actual):
    stream = zlib.compress(b"\0" * actual, 9)
    path = tmp_path / "bomb.vtp"
    path.write_text(vtp_text([1, declared, declared, len(stream)], stream, points=actual // 24))
    done, result = isolated(_read_measured, read_vtp, path, timeout=20, memory=2 ** 30)
    assert done == "returned", result
    outcome, message, peak = result
    # what the header declares, with the copies of a mesh that is read, never what a lying
    # header hides
    assert peak < 3 * min(declared, actual) + 8 * 2 ** 20
    if declared == actual and actual % 24 == 0:
        assert outcome == "read"
    else:
        assert outcome == "refused" and "bomb.vtp" in message


def test_a_mesh_whose_blocks_announce_more_than_the_limit_is_refused_before_inflating(tmp_path):
    from core.io.vtp import MAX_INFLATED_BYTES

    stream = zlib.compress(b"\0" * 2 ** 20)    # 1 MiB of zeros, the header says 4 x 1 GiB
    path = tmp_path / "bomb.vtp"
    path.write_text(vtp_text([4, 2 ** 30, 0, *[len(stream)] * 4], stream * 4, points=1))
    outcome, message = isolated(read_vtp, path, memory=2 ** 30)
    assert outcome == "refused" and f"{MAX_INFLATED_BYTES}" in message and "decimate" in message


@pytest.mark.parametrize("dimension, order, coefficients", [(2, 10 ** 9, 3), (6, 60, 7),
                                                            (6, 17, 100947)])
def test_a_huge_polynomial_is_refused_before_its_terms_are_enumerated(dimension, order,
                                                                      coefficients):
    from core.joints.opensim import MAX_POLYNOMIAL_TERMS

    function = (f"<MultivariatePolynomialFunction><coefficients>{' 1' * coefficients}"
                f"</coefficients><dimension>{dimension}</dimension><order>{order}</order>"
                "</MultivariatePolynomialFunction>")
    names = [f"c{i}" for i in range(dimension)]
    text = osim_text(body("b"), custom("j", "/ground", "/bodyset/b", names, function))
    outcome, message = isolated(parse_osim, text, timeout=20, memory=2 ** 30)
    assert outcome == "refused", message
    if math.comb(order + dimension, dimension) > MAX_POLYNOMIAL_TERMS:
        assert str(MAX_POLYNOMIAL_TERMS) in message and "lower the order" in message


def _uv_sphere(n, m):
    th = np.linspace(0, np.pi, m + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                     np.outer(np.cos(th), np.ones(n))], axis=-1).reshape(-1, 3)
    return np.vstack([ring, [[0, 0, 1], [0, 0, -1]]])


def _hull(points):
    from core.contacts.shapes import ConvexHull

    ConvexHull(points)


def _on_sphere(n):
    p = np.random.default_rng(3).normal(size=(n, 3))
    return p / np.linalg.norm(p, axis=1, keepdims=True)


@pytest.mark.parametrize("points", [_uv_sphere(64, 32), _uv_sphere(128, 64), _on_sphere(4000)])
def test_a_dense_collider_mesh_gets_its_hull_in_seconds(points):
    t = time.perf_counter()
    outcome, message = isolated(_hull, points, timeout=15, memory=2 ** 30)
    assert outcome == "returned", message
    assert time.perf_counter() - t < 15


def test_a_hull_of_too_many_points_is_refused_with_the_advice_to_decimate():
    from core.contacts.shapes import MAX_HULL_POINTS

    points = np.random.default_rng(0).normal(size=(MAX_HULL_POINTS + 1, 3))
    outcome, message = isolated(_hull, points, timeout=15, memory=2 ** 30)
    assert outcome == "refused" and str(MAX_HULL_POINTS) in message and "decimate" in message


def _linkage_run(duration, fps, substeps):
    from core.linkage import simulate_linkage
    from core.linkage_demos import four_bar

    simulate_linkage(four_bar(driven=False)[0], duration, fps, substeps)


@pytest.mark.parametrize("duration, fps, substeps, figure", [
    (1.0, 24.0, 10 ** 9, "1e+08"), (1e9, 24.0, 1, "GiB"), (1000.0, 100.0, 2000, "1e+08")])
def test_a_linkage_run_checks_its_steps_and_frames_before_it_starts(duration, fps, substeps,
                                                                      figure):
    outcome, message = isolated(_linkage_run, duration, fps, substeps, timeout=20)
    assert outcome == "refused" and figure in message, message


@pytest.mark.parametrize("make", [
    lambda: __import__("core.sweep").sweep.grid_variants({f"p{i}": list(range(10))
                                                          for i in range(10)}),
    lambda: __import__("core.sweep").sweep.random_variants({"a": (0, 1)}, 10 ** 7),
    lambda: __import__("core.sweep").sweep.check_variants(
        __import__("core.mechanisms").mechanisms.DEMOS["knee_pendulum"],
        {"knee_start": list(range(1000)), "ankle_stiffness": list(range(1000))}),
])
def test_a_sweep_refuses_too_many_variants_before_building_them(make):
    from core.sweep import MAX_VARIANTS

    outcome, message = isolated(make, timeout=20, memory=2 ** 30)
    assert outcome == "refused" and str(MAX_VARIANTS) in message, message


def test_a_motion_file_of_too_many_rows_is_refused_before_its_rows_are_read(tmp_path):
    from core.io.motion import MAX_MOTION_LINES

    path = tmp_path / "long.mot"
    path.write_text(motion_text(MAX_MOTION_LINES))
    outcome, message = isolated(read_motion, path, timeout=20)
    assert outcome == "refused" and str(MAX_MOTION_LINES) in message, message


def test_a_motion_file_of_too_many_numbers_is_refused(tmp_path):
    from core.io.motion import MAX_MOTION_CELLS

    columns = 400
    labels = "\t".join(["time"] + [f"c{i}" for i in range(columns)])
    row = "\t".join(["0"] * (columns + 1)) + "\n"
    rows = MAX_MOTION_CELLS // (columns + 1) + 1
    path = tmp_path / "wide.mot"
    path.write_text(f"m\nendheader\n{labels}\n" + row * rows)
    outcome, message = isolated(read_motion, path, timeout=30)
    assert outcome == "refused" and str(MAX_MOTION_CELLS) in message, message


def test_a_long_chain_listed_child_first_reads_in_seconds_parents_first(tmp_path):
    path = tmp_path / "chain.osim"
    path.write_text(chain_model(40000, child_first=True))
    outcome, message = isolated(read_osim, path, timeout=90)
    assert outcome == "returned", message
    # the order of any tree: parents first, in file order within a depth
    rng = np.random.default_rng(5)
    n = 60
    parents = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]
    bodies = "".join(body(f"b{i}") for i in range(n))
    joints = [pin(f"j{i}", "/ground" if p < 0 else f"/bodyset/b{p}", f"/bodyset/b{i}", f"q{i}")
              for i, p in enumerate(parents)]
    order = rng.permutation(n)
    model = parse_osim(osim_text(bodies, "".join(joints[k] for k in order)))
    depth = {-1: 0}
    for i, p in enumerate(parents):
        depth[i] = depth[p] + 1
    expected = sorted(order, key=lambda k: depth[int(k)])   # stable: file order within a depth
    assert [j.name for j in model.joints] == [f"j{k}" for k in expected]


# ==============================================================================================
# 2. Special files that would hang a reader
# ==============================================================================================

def _fifo(tmp_path, name):
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _bake_input_problem(path):
    problem = _script("bake").input_problem(str(path))
    if problem is not None:
        raise InvalidInputError(problem)


@pytest.mark.parametrize("reader, name", [(read_osim, "m.osim"), (read_vtp, "m.vtp"),
                                          (read_motion, "m.mot"), (load, "j.json"),
                                          (read_c3d, "t.c3d"), (_bake_input_problem, "x.blend")])
def test_a_fifo_is_refused_without_blocking(tmp_path, reader, name):
    outcome, message = isolated(reader, _fifo(tmp_path, name), timeout=15)
    assert outcome == "refused" and "not a regular file" in message, message


@pytest.mark.parametrize("reader", [read_vtp, read_motion, read_osim, load, read_c3d])
def test_a_device_is_refused_without_reading_it(reader):
    outcome, message = isolated(reader, "/dev/zero", timeout=15, memory=2 ** 30)
    assert outcome == "refused" and "not a regular file" in message, message


def test_a_file_larger_than_the_input_limit_is_refused_before_it_is_read(tmp_path):
    from core.io.files import MAX_INPUT_BYTES

    path = tmp_path / "huge.vtp"
    with open(path, "wb") as fh:   # sparse: no disk is used
        fh.truncate(MAX_INPUT_BYTES + 1)
    outcome, message = isolated(read_vtp, path, timeout=15, memory=256 * 2 ** 20)
    assert outcome == "refused" and str(MAX_INPUT_BYTES) in message, message


# ==============================================================================================
# 3. Raw exceptions
# ==============================================================================================

def _nested_multiplier(depth):
    inner = "<Constant><value>1</value></Constant>"
    for _ in range(depth):
        inner = (f"<MultiplierFunction><function>{inner}</function><scale>1</scale>"
                 "</MultiplierFunction>")
    return inner


@pytest.mark.parametrize("depth", [600, 5000])
def test_deeply_nested_functions_are_refused_with_the_limit(depth):
    from core.io.osim import MAX_FUNCTION_NESTING

    text = osim_text(body("b"), custom("j", "/ground", "/bodyset/b", ["q"],
                                       _nested_multiplier(depth)))
    outcome, message = isolated(parse_osim, text, timeout=20)
    assert outcome == "refused" and str(MAX_FUNCTION_NESTING) in message, message


def test_a_long_chain_of_offset_frames_is_located():
    n = 3000
    frames = "".join(f'<PhysicalOffsetFrame name="f{i}"><socket_parent>'
                     f"{'..' if i == 0 else f'../f{i - 1}'}</socket_parent>"
                     "<translation>0.001 0 0</translation><orientation>0 0 0</orientation>"
                     "</PhysicalOffsetFrame>" for i in range(n))
    text = osim_text(body("a", components=frames) + body("b"),
                     pin("ja", "/ground", "/bodyset/a", "qa")
                     + pin("jb", f"/bodyset/a/f{n - 1}", "/bodyset/b", "qb"))
    model = parse_osim(text)
    joint = model.joint("jb")
    assert joint.parent == "a"
    assert joint.parent_offset[0, 3] == pytest.approx(0.001 * n)


@pytest.mark.parametrize("encoding", ["Shift_JIS", "rot13", "no-such-encoding", "EUC-JP"])
def test_an_xml_encoding_the_parser_cannot_use_is_refused(encoding):
    data = osim_text(body("b"), pin("j", "/ground", "/bodyset/b", "q"),
                     declaration=f'<?xml version="1.0" encoding="{encoding}"?>').encode()
    with pytest.raises(InvalidInputError, match="encoding"):
        parse_osim(data, source="m.osim")


NOT_ASCII_NUMBERS = st.sampled_from(["²", "٣", "१२", "1_0", "abc", "1e", "--1", "0x10", "½",
                                     "𝟏", "①", "一", " ", "1.2.3", "١٫٥"])


@HYPOTHESIS
@given(word=NOT_ASCII_NUMBERS, where=st.sampled_from(["mass", "translation", "radius",
                                                      "Version"]))
def test_numbers_in_a_model_are_ascii_decimals_and_their_field_is_named(word, where):
    if word.strip() == "" and where != "Version":
        return   # an empty element keeps its default
    if where == "mass":
        text = one_body(mass=word)
    elif where == "translation":
        text = osim_text(body("b"), pin("j", "/ground", "/bodyset/b", "q",
                                        translation=f"0 {word} 0"))
    elif where == "radius":
        text = one_body(geometry=f'<Sphere name="s"><radius>{word}</radius></Sphere>')
    else:
        text = osim_text(body("b"), pin("j", "/ground", "/bodyset/b", "q"), version=word)
    with pytest.raises(InvalidInputError, match="mass|translation|radius|Version"):
        parse_osim(text)


@HYPOTHESIS
@given(word=NOT_ASCII_NUMBERS, where=st.sampled_from(["nRows", "cell", "offset",
                                                      "NumberOfPoints", "ascii"]))
def test_numbers_in_motions_and_meshes_are_ascii_decimals(tmp_path, word, where):
    if where in ("nRows", "cell"):
        path = tmp_path / "m.mot"
        path.write_text(motion_text(2, header="nRows=" + word) if where == "nRows"
                        else motion_text(2, cell=word))
        if word == " " and where == "cell":
            return   # a blank cell is not a cell
        with pytest.raises(InvalidInputError, match="nRows|is not a number"):
            read_motion(path)
        return
    path = tmp_path / "m.vtp"
    if where == "offset":
        text = ('<VTKFile type="PolyData" byte_order="LittleEndian"><PolyData><Piece '
                'NumberOfPoints="1"><Points><DataArray type="Float64" NumberOfComponents="3" '
                f'format="appended" offset="{word}"/></Points></Piece></PolyData>'
                '<AppendedData encoding="raw">_</AppendedData></VTKFile>')
    else:
        count, values = ((word, "0 0 0") if where == "NumberOfPoints" else ("1", f"0 {word} 0"))
        text = ('<VTKFile type="PolyData" byte_order="LittleEndian"><PolyData><Piece '
                f'NumberOfPoints="{count}"><Points><DataArray type="Float64" '
                f'NumberOfComponents="3" format="ascii">{values}</DataArray></Points></Piece>'
                "</PolyData></VTKFile>")
    if word == " " and where == "ascii":
        return   # whitespace separates numbers
    path.write_text(text)
    with pytest.raises(InvalidInputError, match="m.vtp"):
        read_vtp(path)


def test_a_coordinate_name_longer_than_a_blender_property_name_is_refused():
    from core.io.osim import MAX_NAME_BYTES

    long = "q" * 40 + "é" * 12   # 64 bytes in UTF-8
    with pytest.raises(InvalidInputError, match=f"64 bytes long, more than the {MAX_NAME_BYTES}"):
        parse_osim(osim_text(body("b"), pin("j", "/ground", "/bodyset/b", long)))
    parse_osim(osim_text(body("b"), pin("j", "/ground", "/bodyset/b", "q" * MAX_NAME_BYTES)))


@pytest.mark.parametrize("out", ["under_a_file/sweeps", "x" * 300])
def test_a_sweep_checks_its_out_folder_before_any_variant_runs(tmp_path, capsys, monkeypatch,
                                                               out):
    script = _script("sweep")
    (tmp_path / "under_a_file").write_text("a file")
    ran = []
    monkeypatch.setattr(script.sweep, "run", lambda *a, **k: ran.append(1) or [])
    monkeypatch.chdir(tmp_path)
    code = script.main(["knee_pendulum", "--param", "knee_start=-1.4", "--duration", "0.05",
                        "--out", out])
    assert code == 2 and ran == []
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "Traceback" not in err


# ==============================================================================================
# 4. Silently wrong or accepted
# ==============================================================================================

def _two_coordinates(constraints):
    return osim_text(body("a") + body("b"),
                     pin("ja", "/ground", "/bodyset/a", "qa")
                     + pin("jb", "/bodyset/a", "/bodyset/b", "qb"), constraints)


@pytest.mark.parametrize("constraints, match", [
    (coupler("self", "qa", "qa"), "both its dependent and its independent"),
    (coupler("one", "qa", "qb") + coupler("two", "qb", "qa"), "form a cycle"),
    (coupler("one", "qa", "qb") + coupler("two", "qa", "qb"), "already the dependent"),
])
def test_coupler_cycles_and_self_dependence_are_refused(constraints, match):
    with pytest.raises(InvalidInputError, match=match):
        parse_osim(_two_coordinates(constraints))


def test_a_chain_of_couplers_is_accepted():
    three = osim_text(body("a") + body("b") + body("c"),
                      pin("ja", "/ground", "/bodyset/a", "qa")
                      + pin("jb", "/bodyset/a", "/bodyset/b", "qb")
                      + pin("jc", "/bodyset/b", "/bodyset/c", "qc"),
                      coupler("one", "qb", "qa") + coupler("two", "qc", "qb"))
    with pytest.raises(InvalidInputError, match="form a cycle"):
        parse_osim(three.replace("<independent_coordinate_names>qa",
                                 "<independent_coordinate_names>qc"))
    assert len(parse_osim(three).couplers) == 2


@HYPOTHESIS
@given(value=st.floats(1.0001e15, 1.7e308), sign=st.sampled_from([1, -1]),
       field=st.sampled_from(["mass", "translation", "spline"]))
def test_numbers_beyond_the_magnitude_limit_are_refused_with_the_field_named(value, sign, field):
    from core.io.osim import MAX_MAGNITUDE

    v = repr(sign * value)
    if field == "mass":
        text, tag = one_body(mass=repr(value)), "mass"
    elif field == "translation":
        text, tag = osim_text(body("b"), pin("j", "/ground", "/bodyset/b", "q",
                                             translation=f"0 {v} 0")), "translation"
    else:
        spline = f"<SimmSpline><x>0 1 2</x><y>0 {v} 0</y></SimmSpline>"
        text, tag = osim_text(body("b"), custom("j", "/ground", "/bodyset/b", ["q"],
                                                spline)), "y"
    limit = re.escape(f"{MAX_MAGNITUDE:g}")
    with pytest.raises(InvalidInputError, match=f"<{tag}> holds .*beyond the {limit}"):
        parse_osim(text)


@pytest.mark.parametrize("geometry", [
    '<Sphere name="s"><radius>nan</radius></Sphere>',
    '<Sphere name="s"><radius>-0.1</radius></Sphere>',
    '<Brick name="s"><half_lengths>0.1 -0.2 0.1</half_lengths></Brick>',
    '<Cylinder name="s"><radius>0.1</radius><half_height>NaN</half_height></Cylinder>',
    '<Ellipsoid name="s"><radii>0.1 0.1 inf</radii></Ellipsoid>',
])
def test_nan_and_negative_primitive_sizes_are_refused(geometry):
    with pytest.raises(InvalidInputError, match="non-finite|negative"):
        parse_osim(one_body(geometry=geometry))


@pytest.mark.parametrize("argv, match", [
    (["--param", "knee_start=-1.4,,-1.2"], "empty value"),
    (["--param", "knee_start=-1.4", "--substeps", "0"], "substeps must be an integer >= 1"),
    (["--param", "substeps=0,1"], "substeps must be an integer >= 1"),
    (["--param", "knee_start=-1.4", "--fps", "-24"], "fps must be a finite number > 0"),
])
def test_a_sweep_every_variant_of_which_would_fail_is_refused(tmp_path, capsys, argv, match):
    script = _script("sweep")
    assert script.main(["knee_pendulum", *argv, "--out", str(tmp_path / "s")]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_sweep_with_failed_variants_exits_non_zero(tmp_path, capsys):
    script = _script("sweep")
    code = script.main(["knee_pendulum", "--param", "knee_start=-1.4", "--param",
                        "ankle_stiffness=5,1e9", "--duration", "0.1", "--out", str(tmp_path)])
    assert code == 1 and "2 variants, 1 failed" in capsys.readouterr().out


# ==============================================================================================
# 5. Data loss and races
# ==============================================================================================

SWEEP = ["knee_pendulum", "--param", "knee_start=-1.4,-1.3", "--duration", "0.05"]


def test_a_sweep_that_cannot_write_its_plot_leaves_the_previous_table(tmp_path, capsys,
                                                                      monkeypatch):
    pytest.importorskip("matplotlib")
    script = _script("sweep")
    assert script.main([*SWEEP, "--out", str(tmp_path)]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", full_disk)
    code = script.main(["knee_pendulum", "--param", "knee_start=-1.2", "--duration", "0.05",
                        "--out", str(tmp_path)])
    assert code != 0 and "No space left" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_two_sweeps_into_one_folder_cannot_both_write(tmp_path, capsys):
    script = _script("sweep")
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # what a running sweep holds
    try:
        code = script.main([*SWEEP, "--out", str(tmp_path)])
    finally:
        os.close(fd)
    assert code == 2 and "another sweep.py run is writing into this folder" in \
        capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_holds_its_folder_while_it_runs(tmp_path, monkeypatch):
    script = _script("sweep")
    held = []
    real_run = script.sweep.run

    def run(*args, **kwargs):
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(script.sweep, "run", run)
    assert script.main([*SWEEP, "--out", str(tmp_path)]) == 0
    assert held == [True]


# ==============================================================================================
# 6. Weak messages
# ==============================================================================================

def test_a_placement_holding_nan_says_so():
    from core.contacts.shapes import Box, StaticCollider

    T = np.eye(4)
    T[1, 3] = np.nan
    with pytest.raises(InvalidInputError, match="holds NaN or inf") as info:
        StaticCollider(Box([0.1, 0.1, 0.1]), T)
    assert "got shape" not in str(info.value)


@pytest.mark.parametrize("gravity", [(0.0, 0.0, math.nan), (math.inf, 0.0, -9.81)])
def test_nan_gravity_is_refused_before_the_run(gravity):
    import dataclasses

    from core.linkage import check_linkage
    from core.linkage_demos import four_bar

    linkage = dataclasses.replace(four_bar(driven=False)[0], gravity=gravity)
    with pytest.raises(InvalidInputError, match="gravity .* holds NaN or inf"):
        check_linkage(linkage)

