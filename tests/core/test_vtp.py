"""VTK XML PolyData meshes (core.io.vtp): the shipped OpenSim bone meshes, every binary layout
VTK writes (encoded here independently with struct, base64 and zlib), strips, and the
refusals of damaged files."""

import base64
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.io import Mesh, read_vtp, write_vtp

GEOMETRY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "osim" / "Geometry"
SHIPPED = sorted(GEOMETRY.glob("*.vtp"))


def _ascii_piece(path):
    """(NumberOfPoints, points, per-piece polygon sizes) read from the file's ascii text."""
    piece = ET.parse(path).getroot().find("PolyData/Piece")
    points = np.array(piece.find("Points/DataArray").text.split(), dtype=np.float32)
    offsets = np.array(piece.find("Polys/DataArray[@Name='offsets']").text.split(), dtype=int)
    return int(piece.get("NumberOfPoints")), int(piece.get("NumberOfPolys")), points, \
        np.diff(np.concatenate(([0], offsets)))


# -- the shipped meshes ----------------------------------------------------------------------


@pytest.mark.skipif(not SHIPPED, reason="shared/data is not beside this checkout")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_mesh_reads(path):
    mesh = read_vtp(path)
    n_points, n_polys, points, sizes = _ascii_piece(path)
    assert mesh.name == path.stem and mesh.skipped == {} and mesh.normals is None
    assert mesh.vertices.shape == (n_points, 3) and mesh.vertices.dtype == np.float64
    assert np.array_equal(mesh.vertices, points.astype(np.float64).reshape(-1, 3))
    assert len(sizes) == n_polys and len(mesh.faces) == np.sum(sizes - 2)  # fans of polygons
    assert mesh.faces.dtype == np.int64 and mesh.faces.min() >= 0
    assert mesh.faces.max() < n_points


@pytest.mark.skipif(not SHIPPED, reason="shared/data is not beside this checkout")
def test_femur_counts_and_first_triangle():
    mesh = read_vtp(GEOMETRY / "femur_r.vtp")
    assert mesh.vertices.shape == (456, 3) and mesh.faces.shape == (908, 3)
    assert mesh.vertices[0].tolist() == np.float32([-0.002485, 0.016259, -0.015792]).tolist()
    text = (GEOMETRY / "femur_r.vtp").read_text()
    conn = re.search(r'Name="connectivity" format="ascii">\s*(\d+)\s+(\d+)\s+(\d+)', text)
    assert mesh.faces[0].tolist() == [int(g) for g in conn.groups()]


@pytest.mark.skipif(not SHIPPED, reason="shared/data is not beside this checkout")
def test_quads_become_two_triangles_of_a_fan():
    mesh = read_vtp(GEOMETRY / "treadmill.vtp")  # six quads
    assert mesh.faces[:4].tolist() == [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5]]


# -- round trips -----------------------------------------------------------------------------


def _mesh_with_normals():
    rng = np.random.default_rng(7)
    v = rng.normal(size=(40, 3)) * np.array([1e-3, 1.0, 1e5])
    v[0] = [-0.0, 5e-324, np.nextafter(1.0, 2.0)]
    n = rng.normal(size=(40, 3))
    f = rng.integers(0, 40, size=(70, 3))
    return Mesh(vertices=v, faces=f, normals=n / np.linalg.norm(n, axis=1, keepdims=True),
                name="random")


OPTIONS = {
    "ascii": {},
    "binary": dict(binary=True, compress=False),
    "binary+zlib": dict(binary=True),
    "binary+zlib, many blocks": dict(binary=True, block_size=100),
    "UInt64 header": dict(binary=True, header_type="UInt64"),
    "UInt64 header, uncompressed": dict(binary=True, compress=False, header_type="UInt64"),
    "big-endian": dict(binary=True, byte_order="BigEndian", block_size=64),
    "big-endian, uncompressed": dict(binary=True, compress=False, byte_order="BigEndian"),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_round_trip_gives_identical_arrays(tmp_path, options):
    meshes = [_mesh_with_normals()]
    if SHIPPED:
        meshes.append(read_vtp(GEOMETRY / "femur_r.vtp"))
    for mesh in meshes:
        path = tmp_path / f"{mesh.name}.vtp"
        write_vtp(path, mesh, **options)
        back = read_vtp(path)
        assert np.array_equal(back.vertices, mesh.vertices)
        assert np.signbit(back.vertices).tolist() == np.signbit(mesh.vertices).tolist()
        assert np.array_equal(back.faces, mesh.faces)
        assert (back.normals is None) == (mesh.normals is None)
        if mesh.normals is not None:
            assert np.array_equal(back.normals, mesh.normals)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            f"{m.name}.vtp" for m in meshes[:meshes.index(mesh) + 1])  # no temporaries


def test_writing_an_empty_mesh_round_trips(tmp_path):
    for binary in (False, True):
        write_vtp(tmp_path / "e.vtp", Mesh(np.zeros((0, 3)), np.zeros((0, 3), int)), binary)
        back = read_vtp(tmp_path / "e.vtp")
        assert back.vertices.shape == (0, 3) and back.faces.shape == (0, 3)


def test_write_refuses_bad_options_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "m.vtp"
    path.write_text("old")
    mesh = Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    for bad, match in ((dict(header_type="UInt16"), "header_type"),
                       (dict(byte_order="Middle"), "byte_order"),
                       (dict(block_size=0), "block_size")):
        with pytest.raises(InvalidInputError, match=match):
            write_vtp(path, mesh, True, **bad)
    with pytest.raises(InvalidInputError, match="writes a Mesh"):
        write_vtp(path, {"vertices": []})
    assert path.read_text() == "old"


def test_mesh_checks_its_arrays():
    with pytest.raises(InvalidInputError, match=r"\(V, 3\)"):
        Mesh(np.zeros((4, 2)), [[0, 1, 2]])
    with pytest.raises(InvalidInputError, match=r"triangles of shape \(F, 3\)"):
        Mesh(np.zeros((4, 3)), [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]])
    with pytest.raises(InvalidInputError, match="index vertices 0..3"):
        Mesh(np.zeros((4, 3)), [[0, 1, 4]])
    with pytest.raises(InvalidInputError, match="normals"):
        Mesh(np.zeros((4, 3)), [[0, 1, 2]], normals=np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="NaN"):
        Mesh(np.full((4, 3), np.nan), [[0, 1, 2]])


# -- files encoded here, independently of the writer -----------------------------------------

TRIANGLE_AND_QUAD = {
    "points": np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0]], np.float64),
    "connectivity": [1, 4, 2, 0, 1, 2, 3],  # a triangle, then a quad
    "offsets": [3, 7],
}
EXPECTED_FACES = [[1, 4, 2], [0, 1, 2], [0, 2, 3]]


def _encode_parts(values, code, *, order="<", header="I", zlib_block=None):
    """(header, data) bytes of a VTK binary DataArray: struct-packed values behind a
    byte-count header, or zlib blocks of ``zlib_block`` bytes behind the block header."""
    values = list(np.ravel(values))
    data = struct.pack(f"{order}{len(values)}{code}", *values)
    if zlib_block is None:
        return struct.pack(order + header, len(data)), data
    chunks = [data[i:i + zlib_block] for i in range(0, len(data), zlib_block)]
    packed = [zlib.compress(c, 9) for c in chunks]
    head = struct.pack(f"{order}{3 + len(packed)}{header}", len(packed), zlib_block,
                       len(data) % zlib_block, *map(len, packed))
    return head, b"".join(packed)


def _encode(values, code, *, two_streams=False, **options):
    """Base64 text of a binary DataArray: header and data as one stream or as two."""
    head, data = _encode_parts(values, code, **options)
    if two_streams:
        return base64.b64encode(head).decode() + base64.b64encode(data).decode()
    return base64.b64encode(head + data).decode()


def _file(pieces, *, order="LittleEndian", header="UInt32", compressor=None, version="1.0",
          kind="PolyData", appended=""):
    attrs = f'type="{kind}" version="{version}" byte_order="{order}" header_type="{header}"'
    if compressor:
        attrs += f' compressor="{compressor}"'
    return (f'<?xml version="1.0"?>\n<VTKFile {attrs}>\n<{kind}>\n{"".join(pieces)}</{kind}>\n'
            f'{appended}</VTKFile>\n')


def _piece(points, cells, *, point_fmt, cell_fmt, n_points=None, counts=None, point_data=""):
    """A Piece; ``cells`` maps a section (Polys, Strips, ...) to (connectivity, offsets);
    ``point_fmt(values)`` / ``cell_fmt(values)`` give (type, format, text)."""
    counts = dict({f"NumberOf{s}": len(cells.get(s, ((), ()))[1])
                   for s in ("Verts", "Lines", "Strips", "Polys")}, **(counts or {}))
    attrs = " ".join(f'{k}="{v}"' for k, v in counts.items())
    n = len(points) if n_points is None else n_points
    out = [f'<Piece NumberOfPoints="{n}" {attrs}>\n{point_data}<Points>\n',
           '<DataArray type="{}" NumberOfComponents="3" format="{}">{}</DataArray>\n'.format(
               *point_fmt(points)), "</Points>\n"]
    for section, (conn, offsets) in cells.items():
        out.append(f"<{section}>\n")
        for name, values in (("connectivity", conn), ("offsets", offsets)):
            out.append('<DataArray type="{}" Name="{}" format="{}">{}</DataArray>\n'.format(
                cell_fmt(values)[0], name, *cell_fmt(values)[1:]))
        out.append(f"</{section}>\n")
    return "".join(out) + "</Piece>\n"


def _ascii(kind):
    return lambda values: (kind, "ascii", " ".join(map(str, np.ravel(values).tolist())))


LAYOUTS = {
    "uncompressed, one stream": dict(),
    "uncompressed, two streams": dict(two_streams=True),
    "zlib, one stream": dict(zlib_block=16),
    "zlib, two streams": dict(zlib_block=16, two_streams=True),
    "zlib, one block, two streams": dict(zlib_block=1 << 15, two_streams=True),
    "zlib, exact blocks": dict(zlib_block=4),  # the last block is full: last size 0
}


@pytest.mark.parametrize("order,code", [("LittleEndian", "<"), ("BigEndian", ">")])
@pytest.mark.parametrize("header,hcode", [("UInt32", "I"), ("UInt64", "Q")])
@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_hand_encoded_binary_files_read(tmp_path, order, code, header, hcode, layout):
    def binary(vtk_type, fmt):
        return lambda values: (vtk_type, "binary",
                               _encode(values, fmt, order=code, header=hcode, **layout))

    cases = [(binary("Float32", "f"), binary("Int32", "i")),
             (binary("Float64", "d"), binary("UInt8", "B")),
             (binary("Float32", "f"), binary("Int64", "q")),
             (binary("Float64", "d"), binary("UInt64", "Q"))]
    compressor = "vtkZLibDataCompressor" if "zlib_block" in layout else None
    for point_fmt, cell_fmt in cases:
        text = _file([_piece(TRIANGLE_AND_QUAD["points"],
                             {"Polys": (TRIANGLE_AND_QUAD["connectivity"],
                                        TRIANGLE_AND_QUAD["offsets"])},
                             point_fmt=point_fmt, cell_fmt=cell_fmt)],
                     order=order, header=header, compressor=compressor)
        (tmp_path / "m.vtp").write_text(text)
        mesh = read_vtp(tmp_path / "m.vtp")
        assert np.array_equal(mesh.vertices, TRIANGLE_AND_QUAD["points"])
        assert mesh.faces.tolist() == EXPECTED_FACES


def test_the_two_stream_layout_really_differs_from_one_stream():
    """The 12-byte compressed header of a one-block UInt32 array is a multiple of 3 bytes,
    but a 4-byte uncompressed one is not: its separate stream ends in '==' mid-text."""
    two = _encode([1.0, 2.0], "d", two_streams=True)
    one = _encode([1.0, 2.0], "d")
    assert two != one and "==" in two[:-2]


def _appended_file(encoding, compressor=None, header="I"):
    """Points and cells in one AppendedData section; offsets as VTK counts them (bytes for
    raw, base64 characters for base64)."""
    arrays = [("points", TRIANGLE_AND_QUAD["points"], "d", "Float64"),
              ("connectivity", TRIANGLE_AND_QUAD["connectivity"], "i", "Int32"),
              ("offsets", TRIANGLE_AND_QUAD["offsets"], "q", "Int64")]
    blob, offsets = b"", {}
    block = None if compressor is None else 24
    for name, values, code, _ in arrays:
        offsets[name] = len(blob)
        if encoding == "raw":
            blob += b"".join(_encode_parts(values, code, header=header, zlib_block=block))
        else:
            blob += _encode(values, code, header=header, zlib_block=block,
                            two_streams=True).encode()
    tags = {name: f'type="{kind}" format="appended" offset="{offsets[name]}"'
            for name, _, _, kind in arrays}
    piece = (f'<Piece NumberOfPoints="5" NumberOfPolys="2">\n<Points>\n'
             f'<DataArray {tags["points"]} NumberOfComponents="3"/>\n</Points>\n<Polys>\n'
             f'<DataArray {tags["connectivity"]} Name="connectivity"/>\n'
             f'<DataArray {tags["offsets"]} Name="offsets"/>\n</Polys>\n</Piece>\n')
    head = _file([piece], compressor=compressor,
                 header="UInt32" if header == "I" else "UInt64").encode()
    head = head[:head.rindex(b"</VTKFile>")]
    return head + f'<AppendedData encoding="{encoding}">\n   _'.encode() + blob + \
        b"\n</AppendedData>\n</VTKFile>\n"


@pytest.mark.parametrize("encoding", ["raw", "base64"])
@pytest.mark.parametrize("compressor", [None, "vtkZLibDataCompressor"])
@pytest.mark.parametrize("header", ["I", "Q"])
def test_appended_data_reads(tmp_path, encoding, compressor, header):
    data = _appended_file(encoding, compressor, header)
    if encoding == "raw":
        assert b"\x00" in data  # really binary inside the XML
    (tmp_path / "a.vtp").write_bytes(data)
    mesh = read_vtp(tmp_path / "a.vtp")
    assert np.array_equal(mesh.vertices, TRIANGLE_AND_QUAD["points"])
    assert mesh.faces.tolist() == EXPECTED_FACES


# -- strips, pieces, skipped cells, normals --------------------------------------------------


def _ribbon(n):
    """2n points of a flat zigzag ribbon in the xy plane, (0, 1), (0, 0), (1, 1), (1, 0), ...,
    ordered as a triangle strip whose first triangle (0, 1, 2) is counter-clockwise seen from
    +z."""
    i = np.arange(2 * n)
    return np.column_stack([i // 2, 1.0 - i % 2, np.zeros(2 * n)]).astype(float)


def _triangle_normals(mesh):
    v = mesh.vertices[mesh.faces]
    return np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])


def test_strips_triangulate_with_the_strip_orientation(tmp_path):
    pts = _ribbon(5)
    assert np.cross(pts[1] - pts[0], pts[2] - pts[0])[2] > 0
    normals = np.tile([0.0, 0.0, 1.0], (len(pts), 1))
    point_data = ('<PointData Normals="N">\n<DataArray type="Float64" Name="N" '
                  f'NumberOfComponents="3" format="ascii">{" ".join(map(str, normals.ravel()))}'
                  '</DataArray>\n</PointData>\n')
    strip = list(range(10))
    text = _file([_piece(pts, {"Strips": (strip, [10])}, point_fmt=_ascii("Float64"),
                         cell_fmt=_ascii("Int32"), point_data=point_data)])
    (tmp_path / "s.vtp").write_text(text)
    mesh = read_vtp(tmp_path / "s.vtp")
    assert len(mesh.faces) == 8 and np.array_equal(mesh.normals, normals)
    n = _triangle_normals(mesh)
    assert np.all(np.einsum("ij,ij->i", n, mesh.normals[mesh.faces[:, 0]]) > 0)
    assert mesh.faces[:3].tolist() == [[0, 1, 2], [2, 1, 3], [2, 3, 4]]
    # each inner edge (k, k+2 or k+1) is used once in each direction: one orientation
    edges = [(a, b) for f in mesh.faces.tolist() for a, b in zip(f, f[1:] + f[:1])]
    inner = [(a, b) for a, b in edges if {a, b} not in ({0, 1}, {8, 9}) and abs(a - b) == 1]
    assert len(edges) == len(set(edges)) and all((b, a) in edges for a, b in inner)


def test_pieces_concatenate_and_verts_lines_degenerate_cells_are_counted(tmp_path):
    pts = TRIANGLE_AND_QUAD["points"]
    first = _piece(pts, {"Polys": (TRIANGLE_AND_QUAD["connectivity"],
                                   TRIANGLE_AND_QUAD["offsets"]),
                         "Verts": ([0, 1], [1, 2]), "Lines": ([1, 2, 3], [3])},
                   point_fmt=_ascii("Float32"), cell_fmt=_ascii("Int32"))
    second = _piece(pts[:4] + 10, {"Strips": ([0, 1, 2, 3], [4]),
                                   "Polys": ([0, 1, 2, 3], [2, 4])},
                    point_fmt=_ascii("Float64"), cell_fmt=_ascii("Int64"))
    (tmp_path / "p.vtp").write_text(_file([first, second]))
    mesh = read_vtp(tmp_path / "p.vtp")
    assert np.array_equal(mesh.vertices, np.concatenate([pts, pts[:4] + 10]))
    assert mesh.faces.tolist() == EXPECTED_FACES + [[5, 6, 7], [7, 6, 8]]
    assert mesh.skipped == {"verts": 2, "lines": 1, "degenerate": 2}
    assert mesh.normals is None


# -- refusals --------------------------------------------------------------------------------


def _good(tmp_path, **piece):
    piece = dict(dict(point_fmt=_ascii("Float32"), cell_fmt=_ascii("Int32")), **piece)
    cells = piece.pop("cells", {"Polys": (TRIANGLE_AND_QUAD["connectivity"],
                                          TRIANGLE_AND_QUAD["offsets"])})
    return _file([_piece(TRIANGLE_AND_QUAD["points"], cells, **piece)])


def _refused(tmp_path, content, match):
    path = tmp_path / "bad.vtp"
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=match) as info:
        read_vtp(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_not_xml_and_truncated_files_are_refused(tmp_path):
    _refused(tmp_path, "solid cube\nfacet normal 0 0 1\n", "not a complete XML file")
    good = _good(tmp_path)
    _refused(tmp_path, good[:len(good) // 2], "truncated")
    if SHIPPED:
        _refused(tmp_path, (GEOMETRY / "femur_r.vtp").read_bytes()[:20000], "truncated")
    _refused(tmp_path, b"<a/>", "not <VTKFile>")
    for missing, match in ((tmp_path / "missing.vtp", "No such file"),
                           (tmp_path, "is a folder, not a file")):
        with pytest.raises(InvalidInputError, match=f"cannot read mesh .*: {match}"):
            read_vtp(missing)


def test_other_dataset_types_are_refused(tmp_path):
    text = _good(tmp_path).replace("PolyData", "UnstructuredGrid")
    _refused(tmp_path, text, r"<VTKFile>: type is 'UnstructuredGrid', not 'PolyData'")


def test_an_index_out_of_range_is_refused(tmp_path):
    text = _good(tmp_path, cells={"Polys": ([0, 1, 5], [3])})
    message = _refused(tmp_path, text, r"<Piece> 0 <Polys> DataArray 'connectivity': index 5 "
                                       r"at position 2 is out of range 0..4")
    assert "NumberOfPoints=5" in message
    _refused(tmp_path, _good(tmp_path, cells={"Strips": ([0, -1, 2], [3])}),
             "<Strips> DataArray 'connectivity': index -1")


def test_counts_that_disagree_with_the_attributes_are_refused(tmp_path):
    _refused(tmp_path, _good(tmp_path, n_points=6), r"<Piece> 0 <Points>: 15 numbers but "
                                                    r"NumberOfPoints=6 needs 18")
    _refused(tmp_path, _good(tmp_path, counts={"NumberOfPolys": 3}),
             r"<Polys>: 2 offsets but NumberOfPolys=3")
    _refused(tmp_path, _good(tmp_path, cells={"Polys": ([0, 1, 2, 3], [3])}),
             "offsets must rise from 0 to the connectivity length 4")
    _refused(tmp_path, _good(tmp_path, cells={}, counts={"NumberOfStrips": 1}),
             "NumberOfStrips=1 but there is no <Strips> element")
    _refused(tmp_path, _good(tmp_path, n_points="many"), "NumberOfPoints='many' is not a count")


def test_undecodable_data_is_refused(tmp_path):
    _refused(tmp_path, _good(tmp_path, point_fmt=lambda v: ("Float32", "ascii", "1 2 x")),
             r"<Points>: cannot decode the ascii data")
    _refused(tmp_path, _good(tmp_path, cell_fmt=lambda v: ("Int32", "binary", "!!!!")),
             r"DataArray 'connectivity': cannot decode the binary data")
    short = _encode([0, 1, 2], "i")[:8]
    _refused(tmp_path, _good(tmp_path, cell_fmt=lambda v: ("Int32", "binary", short)),
             "announces 12 bytes of data, 2 follow: the file is truncated")
    _refused(tmp_path, _good(tmp_path, point_fmt=lambda v: ("Float16", "ascii", "1")),
             "type 'Float16' is not one of")
    _refused(tmp_path, _good(tmp_path, cell_fmt=_ascii("Float32")), "not an integer type")
    _refused(tmp_path, _good(tmp_path, point_fmt=lambda v: ("Float32", "ascii",
                                                            " ".join(["nan"] * 15))),
             "NaN or inf")


def test_an_unsupported_compressor_is_refused(tmp_path):
    encoded = _encode([0.0] * 15, "f")
    text = _file([_piece(TRIANGLE_AND_QUAD["points"], {},
                         point_fmt=lambda v: ("Float32", "binary", encoded),
                         cell_fmt=_ascii("Int32"))], compressor="vtkLZ4DataCompressor")
    _refused(tmp_path, text, r"<VTKFile>: compressor 'vtkLZ4DataCompressor' is not supported "
                             r".*re-save the mesh uncompressed or with zlib")
    # the compressor concerns binary data only: ascii arrays read whatever it names
    text = _file([_piece(TRIANGLE_AND_QUAD["points"], {}, point_fmt=_ascii("Float32"),
                         cell_fmt=_ascii("Int32"))], compressor="vtkLZ4DataCompressor")
    (tmp_path / "ok.vtp").write_text(text)
    assert read_vtp(tmp_path / "ok.vtp").vertices.shape == (5, 3)


def test_a_corrupt_zlib_block_is_refused(tmp_path):
    encoded = _encode(TRIANGLE_AND_QUAD["points"], "f", zlib_block=16)
    raw = bytearray(base64.b64decode(encoded))
    raw[-3] ^= 0xFF
    text = _file([_piece(TRIANGLE_AND_QUAD["points"], {},
                         point_fmt=lambda v: ("Float32", "binary",
                                              base64.b64encode(bytes(raw)).decode()),
                         cell_fmt=_ascii("Int32"))], compressor="vtkZLibDataCompressor")
    _refused(tmp_path, text, r"<Points>: cannot decode the binary data")


def test_appended_data_without_its_section_or_end_is_refused(tmp_path):
    data = _appended_file("raw")
    _refused(tmp_path, data[:data.index(b"</AppendedData>") - 3],
             r"<AppendedData> has no '_' marker or no end tag: the file is truncated")
    _refused(tmp_path, data[:data.index(b"<AppendedData")] + b"</VTKFile>\n",
             "format is 'appended' but the file has no <AppendedData>")
    _refused(tmp_path, data.replace(b'offset="0"', b'offset="999999"'),
             "offset 999999 is outside the appended data")
    _refused(tmp_path, data.replace(b'offset="0"', b'offset="x"'), "'x' is not a byte offset")
