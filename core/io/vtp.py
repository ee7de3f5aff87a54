"""VTK XML PolyData meshes (.vtp), the bone meshes OpenSim models name: read and write.

:func:`read_vtp` returns a :class:`Mesh` of triangles: polygons are split into fans, triangle
strips into triangles of alternating vertex order so that all share the strip's orientation.
Several ``Piece`` elements are concatenated (their indices shifted by the points before them).
Vertex and line cells are not surface and are only counted (``Mesh.skipped``).

Every DataArray format VTK writes is read: ``ascii``; ``binary`` (base64, one header integer
with the byte count, or with ``compressor="vtkZLibDataCompressor"`` the block header
``nblocks, block size, last block size, compressed sizes...`` followed by the zlib blocks);
and ``appended`` (the ``AppendedData`` element, ``encoding="raw"`` or ``"base64"``, each
array at its ``offset``). Header integers are ``UInt32`` or ``UInt64`` after the VTKFile's
``header_type``; numbers are in its ``byte_order``. VTK encodes a binary header and its data
either as one base64 stream or as two (the second starting after the first one's ``=``
padding); :func:`_b64decode_streams` reads any such concatenation.

A file that cannot be read completely raises :class:`~core.errors.InvalidInputError` naming
the file and the element; no partial mesh is returned. :func:`write_vtp` writes ascii or
binary (optionally zlib-compressed) files through :func:`~core.io.files.atomic_write`.
"""

import base64
import binascii
import os
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from .fields import parse_count
from .files import atomic_write, read_input

__all__ = ["Mesh", "read_vtp", "write_vtp", "MAX_INFLATED_BYTES"]

#: VTK DataArray type names -> numpy kinds (byte order added when read)
_TYPES = {"Int8": "i1", "UInt8": "u1", "Int16": "i2", "UInt16": "u2", "Int32": "i4",
          "UInt32": "u4", "Int64": "i8", "UInt64": "u8", "Float32": "f4", "Float64": "f8"}
_BYTE_ORDERS = {"LittleEndian": "<", "BigEndian": ">"}
_ZLIB = "vtkZLibDataCompressor"
#: the cell sections of a Piece, with the attribute that counts their cells
_CELLS = {"Verts": "NumberOfVerts", "Lines": "NumberOfLines", "Strips": "NumberOfStrips",
          "Polys": "NumberOfPolys"}
_REEXPORT = "the file is damaged or was not written by VTK: re-export the mesh"
#: the most bytes the zlib blocks of one file may inflate to (1 GiB, some 40 million
#: vertices), checked against the block headers before anything is inflated
MAX_INFLATED_BYTES = 2 ** 30


@dataclass(frozen=True, eq=False)
class Mesh:
    """A triangle mesh.

    ``vertices: (V, 3)`` float64; ``faces: (F, 3)`` int64 indices into ``vertices``, counter-
    clockwise as the file orders them; ``normals: (V, 3)`` float64 per-vertex normals when the
    file has them (every piece), else None; ``name``: the file's name without extension;
    ``skipped``: counts of cells that are not triangles of the surface (``"verts"``,
    ``"lines"``, ``"degenerate"`` polygons and strips with fewer than 3 points), only those
    that occurred.
    """

    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray = None
    name: str = ""
    skipped: dict = field(default_factory=dict)

    def __post_init__(self):
        v = np.array(self.vertices, dtype=np.float64)
        f = np.array(self.faces, dtype=np.int64)
        if f.size == 0:
            f = np.zeros((0, 3), np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise InvalidInputError(f"mesh vertices must have shape (V, 3), got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise InvalidInputError(f"mesh faces must be triangles of shape (F, 3), got "
                                    f"{f.shape}: split larger polygons into triangles")
        if f.size and (f.min() < 0 or f.max() >= len(v)):
            raise InvalidInputError(f"mesh faces index vertices 0..{len(v) - 1}, found "
                                    f"{f.min()}..{f.max()}: fix the face indices")
        n = None
        if self.normals is not None:
            n = np.array(self.normals, dtype=np.float64)
            if n.shape != v.shape:
                raise InvalidInputError(f"mesh normals must have the vertices' shape {v.shape}, "
                                        f"got {n.shape}")
        for name, a in (("vertices", v), ("normals", n)):
            if a is not None and not np.all(np.isfinite(a)):
                raise InvalidInputError(f"mesh {name} contain NaN or inf: fix the mesh")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)
        object.__setattr__(self, "normals", n)
        object.__setattr__(self, "skipped", dict(self.skipped))


# ---------------------------------------------------------------------------------- reading


def _b64decode_streams(text):
    """Bytes of ``text``, one base64 stream or several written one after another.

    A stream whose length is a multiple of 3 bytes ends without padding and decodes together
    with the next one; any other ends at its ``=`` padding, where the next one starts.
    binascii.Error on characters outside the base64 alphabet or a wrong length."""
    text = re.sub(r"\s+", "", text)
    return b"".join(base64.b64decode(part, validate=True)
                    for part in re.findall(r"[^=]+=*", text))


class _Reader:
    """One .vtp file being read: its path (for messages), header settings and appended data."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.inflated = 0           # bytes the zlib blocks read so far announce
        xml_bytes, self.appended = self._split_appended(read_input(self.path, "mesh"))
        try:
            self.root = ET.fromstring(xml_bytes)
        except ET.ParseError as exc:
            raise InvalidInputError(f"{self.path} is not a complete XML file ({exc}): it is "
                                    "truncated or not a VTK XML file; re-export the mesh"
                                    ) from None
        self._header()

    def fail(self, where, what):
        return InvalidInputError(f"{self.path}: {where}: {what}")

    def _split_appended(self, raw):
        """(XML with the AppendedData content removed, that content after its ``_`` marker as
        bytes, or None). Raw appended data is binary and cannot be parsed as XML."""
        start = raw.find(b"<AppendedData")
        if start < 0:
            return raw, None
        tag_end = raw.find(b">", start)
        marker = raw.find(b"_", tag_end)
        end = raw.rfind(b"</AppendedData>")
        if tag_end < 0 or marker < 0 or end < marker:
            raise InvalidInputError(f"{self.path}: <AppendedData> has no '_' marker or no end "
                                    f"tag: the file is truncated; re-export the mesh")
        return raw[:tag_end + 1] + raw[end:], raw[marker + 1:end]

    def _header(self):
        root = self.root
        if root.tag != "VTKFile":
            raise self.fail(f"<{root.tag}>", "the root element is not <VTKFile>: this is not a "
                            "VTK XML file; give a .vtp file")
        kind = root.get("type")
        if kind != "PolyData" or root.find("PolyData") is None:
            raise self.fail("<VTKFile>", f"type is {kind!r}, not 'PolyData' (a .vtp surface "
                            "mesh): convert the data to PolyData, e.g. with ParaView's Extract "
                            "Surface, and save it as .vtp")
        order = root.get("byte_order", "LittleEndian")
        if order not in _BYTE_ORDERS:
            raise self.fail("<VTKFile>", f"byte_order {order!r} is neither LittleEndian nor "
                            "BigEndian; re-export the mesh")
        self.order = _BYTE_ORDERS[order]
        header = root.get("header_type", "UInt32")
        if header not in ("UInt32", "UInt64"):
            raise self.fail("<VTKFile>", f"header_type {header!r} is not UInt32 or UInt64; "
                            "re-export the mesh")
        self.header = np.dtype(self.order + _TYPES[header])
        self.compressor = root.get("compressor")
        appended = root.find("AppendedData")
        self.appended_encoding = None if appended is None else appended.get("encoding", "raw")
        if self.appended_encoding not in (None, "raw", "base64"):
            raise self.fail("<AppendedData>", f"encoding {self.appended_encoding!r} is not "
                            "'raw' or 'base64'; re-export the mesh")
        # appended base64 arrays end where the next one starts
        self.offsets = sorted({self._offset(a) for a in root.iter("DataArray")
                               if a.get("format") == "appended"})

    def _offset(self, element):
        text = element.get("offset", "")
        try:
            return parse_count(text, "offset")
        except InvalidInputError:
            raise self.fail(f"<DataArray Name={element.get('Name')!r}>",
                            f"offset {text!r} is not a byte offset; " + _REEXPORT) from None

    # -- one DataArray ---------------------------------------------------------------------

    def array(self, element, where):
        """The values of a DataArray element, flat, in its own type."""
        kind = element.get("type")
        if kind not in _TYPES:
            raise self.fail(where, f"type {kind!r} is not one of {', '.join(_TYPES)}; "
                            "re-export the mesh")
        dtype = np.dtype(self.order + _TYPES[kind])
        fmt = element.get("format", "ascii")
        try:
            if fmt == "ascii":
                text = element.text or ""
                if not text.isascii() or "_" in text:
                    raise ValueError("the numbers must be written with the ASCII digits 0-9")
                return np.array(text.split(), dtype=dtype.newbyteorder("="))
            if fmt == "binary":
                return self._binary(_b64decode_streams(element.text or ""), dtype, where)
            if fmt == "appended":
                return self._binary(self._appended_bytes(element, where), dtype, where)
        except (ValueError, OverflowError, binascii.Error, zlib.error) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise self.fail(where, f"cannot decode the {fmt} data ({exc}): {_REEXPORT}") from None
        raise self.fail(where, f"format {fmt!r} is not ascii, binary or appended; re-export "
                        "the mesh")

    def _appended_bytes(self, element, where):
        if self.appended is None:
            raise self.fail(where, "format is 'appended' but the file has no <AppendedData>; "
                            + _REEXPORT)
        offset = self._offset(element)
        if offset > len(self.appended):
            raise self.fail(where, f"offset {offset} is outside the appended data "
                            f"({len(self.appended)} bytes); " + _REEXPORT)
        if self.appended_encoding == "raw":
            return memoryview(self.appended)[offset:]
        later = [o for o in self.offsets if o > offset]
        end = later[0] if later else len(self.appended)
        return _b64decode_streams(self.appended[offset:end].decode("ascii"))

    def _binary(self, data, dtype, where):
        """Decode header + data bytes (header integers of ``self.header``)."""
        h = self.header.itemsize

        def ints(start, count):
            if len(data) < start + count * h:
                raise self.fail(where, f"the binary header needs {start + count * h} bytes, "
                                f"the data has {len(data)}: the file is truncated; "
                                "re-export the mesh")
            return [int(x) for x in np.frombuffer(data, self.header, count, start)]

        if self.compressor is None:
            (size,) = ints(0, 1)
            payload = bytes(data[h:h + size])
            if len(payload) != size:
                raise self.fail(where, f"the header announces {size} bytes of data, "
                                f"{len(payload)} follow: the file is truncated; re-export "
                                "the mesh")
        elif self.compressor == _ZLIB:
            payload = self._inflate(data, ints, where)
        else:
            raise self.fail("<VTKFile>", f"compressor {self.compressor!r} is not supported "
                            f"(only {_ZLIB}): re-save the mesh uncompressed or with zlib "
                            "compression (ParaView: Save Data, Data Mode 'Ascii' or "
                            "Compressor 'ZLib')")
        if len(payload) % dtype.itemsize:
            raise self.fail(where, f"{len(payload)} bytes are not a whole number of "
                            f"{dtype.itemsize}-byte values; " + _REEXPORT)
        return np.frombuffer(payload, dtype).astype(dtype.newbyteorder("="))

    def _inflate(self, data, ints, where):
        nblocks, block, last = ints(0, 3)
        sizes = ints(3 * self.header.itemsize, nblocks)
        start = (3 + nblocks) * self.header.itemsize
        if start + sum(sizes) > len(data):
            raise self.fail(where, f"the compressed blocks need {start + sum(sizes)} bytes, the "
                            f"data has {len(data)}: the file is truncated; re-export the mesh")
        total = (nblocks - 1) * block + (last or block) if nblocks else 0
        self.inflated += total
        if self.inflated > MAX_INFLATED_BYTES:
            raise self.fail(where, f"the compressed blocks announce {self.inflated} bytes of "
                            f"data in this file, more than the {MAX_INFLATED_BYTES} a mesh may "
                            "inflate to: decimate the mesh (e.g. Blender's Decimate modifier) "
                            "and re-export it")
        out = []
        for i, size in enumerate(sizes):
            expected = last if (i == nblocks - 1 and last) else block
            inflater = zlib.decompressobj()
            chunk = inflater.decompress(bytes(data[start:start + size]), expected + 1)
            if len(chunk) != expected or not inflater.eof:
                got = (f"more than {expected}" if len(chunk) > expected else
                       f"{len(chunk)} (its zlib stream is incomplete)" if not inflater.eof else
                       len(chunk))
                raise self.fail(where, f"compressed block {i} inflates to {got} bytes, "
                                f"the header says {expected}; " + _REEXPORT)
            out.append(chunk)
            start += size
        return b"".join(out)

    # -- one Piece -------------------------------------------------------------------------

    def count(self, piece, attribute, where):
        text = piece.get(attribute, "0")
        try:
            return parse_count(text, attribute)
        except InvalidInputError:
            raise self.fail(where, f"{attribute}={text!r} is not a count; " + _REEXPORT) from None

    def cells(self, piece, section, n_points, where):
        """(connectivity, offsets) of a cell section, checked, or None when it is absent."""
        element = piece.find(section)
        n_cells = self.count(piece, _CELLS[section], where)
        if element is None:
            if n_cells:
                raise self.fail(where, f"{_CELLS[section]}={n_cells} but there is no "
                                f"<{section}> element; " + _REEXPORT)
            return None
        arrays = {a.get("Name"): a for a in element.findall("DataArray")}
        got = []
        for name in ("connectivity", "offsets"):
            at = f"{where} <{section}> DataArray {name!r}"
            if name not in arrays:
                raise self.fail(f"{where} <{section}>", f"no DataArray named {name!r}; "
                                + _REEXPORT)
            values = self.array(arrays[name], at)
            if values.dtype.kind not in "iu":
                raise self.fail(at, f"type {arrays[name].get('type')} is not an integer type; "
                                + _REEXPORT)
            got.append(values.astype(np.int64))
        conn, offsets = got
        at = f"{where} <{section}>"
        if len(offsets) != n_cells:
            raise self.fail(at, f"{len(offsets)} offsets but {_CELLS[section]}={n_cells}; "
                            + _REEXPORT)
        if n_cells and (np.any(np.diff(offsets) < 0) or offsets[0] < 0
                        or offsets[-1] != len(conn)):
            raise self.fail(at, f"offsets must rise from 0 to the connectivity length "
                            f"{len(conn)}, got {offsets[0]}..{offsets[-1]}; " + _REEXPORT)
        if not n_cells and len(conn):
            raise self.fail(at, f"{len(conn)} connectivity indices but no cells; " + _REEXPORT)
        bad = (conn < 0) | (conn >= n_points)
        if np.any(bad):
            raise self.fail(f"{at} DataArray 'connectivity'",
                            f"index {conn[bad][0]} at position {np.flatnonzero(bad)[0]} is out "
                            f"of range 0..{n_points - 1} (NumberOfPoints={n_points}); "
                            + _REEXPORT)
        return conn, offsets

    def piece(self, piece, where):
        """(points (V, 3), triangles (F, 3) local indices, normals or None, skipped counts)."""
        n_points = self.count(piece, "NumberOfPoints", where)
        points_el = piece.find("Points/DataArray")
        if points_el is None:
            raise self.fail(where, "no <Points> DataArray; " + _REEXPORT)
        points = self.array(points_el, f"{where} <Points>").astype(np.float64)
        if points.size != 3 * n_points:
            raise self.fail(f"{where} <Points>", f"{points.size} numbers but NumberOfPoints="
                            f"{n_points} needs {3 * n_points} (3 per point); " + _REEXPORT)
        if not np.all(np.isfinite(points)):
            raise self.fail(f"{where} <Points>", "coordinates contain NaN or inf; " + _REEXPORT)
        normals = self._normals(piece, n_points, where)
        skipped = {}
        triangles = []
        for section in _CELLS:
            found = self.cells(piece, section, n_points, where)
            if found is None:
                continue
            conn, offsets = found
            if section in ("Verts", "Lines"):
                if len(offsets):
                    skipped[section.lower()] = len(offsets)
                continue
            tris, degenerate = _triangulate(conn, offsets, strips=section == "Strips")
            triangles.append(tris)
            if degenerate:
                skipped["degenerate"] = skipped.get("degenerate", 0) + degenerate
        faces = np.concatenate(triangles) if triangles else np.zeros((0, 3), np.int64)
        return points.reshape(-1, 3), faces, normals, skipped

    def _normals(self, piece, n_points, where):
        data = piece.find("PointData")
        if data is None:
            return None
        name = data.get("Normals", "Normals")
        element = next((a for a in data.findall("DataArray") if a.get("Name") == name), None)
        if element is None:
            return None
        at = f"{where} <PointData> DataArray {name!r}"
        normals = self.array(element, at).astype(np.float64)
        if normals.size != 3 * n_points:
            raise self.fail(at, f"{normals.size} numbers but NumberOfPoints={n_points} needs "
                            f"{3 * n_points}; " + _REEXPORT)
        if not np.all(np.isfinite(normals)):
            raise self.fail(at, "normals contain NaN or inf; " + _REEXPORT)
        return normals.reshape(-1, 3)


def _triangulate(conn, offsets, strips):
    """(triangles (F, 3), number of cells with fewer than 3 points) of polygons (fans
    ``v0, vk, vk+1``) or triangle strips (triangle k is ``vk, vk+1, vk+2`` for even k and
    ``vk+1, vk, vk+2`` for odd k, so every triangle has the strip's orientation)."""
    starts = np.concatenate(([0], offsets[:-1]))
    sizes = offsets - starts
    keep = sizes >= 3
    n_tri = sizes[keep] - 2
    first = np.repeat(starts[keep], n_tri)            # where each triangle's cell starts
    k = np.arange(n_tri.sum()) - np.repeat(np.cumsum(n_tri) - n_tri, n_tri)  # index in cell
    if strips:
        odd = k % 2
        tris = np.stack([conn[first + k + odd], conn[first + k + 1 - odd], conn[first + k + 2]],
                        axis=1)
    else:
        tris = np.stack([conn[first], conn[first + k + 1], conn[first + k + 2]], axis=1)
    return tris.reshape(-1, 3), int(np.count_nonzero(~keep))


def read_vtp(path):
    """The triangle :class:`Mesh` of the VTK XML PolyData file ``path`` (all pieces).

    InvalidInputError naming the file and the element when the file is not complete XML, not
    PolyData, uses a compressor other than zlib, has counts that disagree with its
    ``NumberOf...`` attributes, or indexes a point that does not exist.
    """
    reader = _Reader(path)
    pieces = reader.root.find("PolyData").findall("Piece")
    vertices, faces, normals, skipped = [], [], [], {}
    base = 0
    for i, piece in enumerate(pieces):
        v, f, n, s = reader.piece(piece, f"<Piece> {i}")
        vertices.append(v)
        faces.append(f + base)
        normals.append(n)
        base += len(v)
        for key, count in s.items():
            skipped[key] = skipped.get(key, 0) + count
    has_normals = bool(pieces) and all(n is not None for n in normals)
    return Mesh(vertices=np.concatenate(vertices) if vertices else np.zeros((0, 3)),
                faces=np.concatenate(faces) if faces else np.zeros((0, 3), np.int64),
                normals=np.concatenate(normals) if has_normals else None,
                name=os.path.splitext(os.path.basename(os.fspath(path)))[0], skipped=skipped)


# ---------------------------------------------------------------------------------- writing


def _encode(values, kind, order, header, compress, block_size):
    """The base64 text of a binary DataArray: header and data, two streams when compressed
    (as VTK writes them), one otherwise."""
    data = np.ascontiguousarray(values, dtype=np.dtype(order + _TYPES[kind])).tobytes()
    fmt = order + ("I" if header == "UInt32" else "Q")
    if not compress:
        return base64.b64encode(struct.pack(fmt, len(data)) + data).decode("ascii")
    blocks = [zlib.compress(data[i:i + block_size]) for i in range(0, len(data), block_size)]
    last = len(data) % block_size
    head = struct.pack(order + fmt[1] * (3 + len(blocks)), len(blocks), block_size, last,
                       *map(len, blocks))
    return (base64.b64encode(head) + base64.b64encode(b"".join(blocks))).decode("ascii")


def write_vtp(path, mesh, binary=False, *, compress=True, header_type="UInt32",
              byte_order="LittleEndian", block_size=32768):
    """Write ``mesh`` (a :class:`Mesh`) to ``path`` as one PolyData piece of triangles.

    ``binary=False`` writes ascii (floats as their shortest exact decimal, so reading gives
    the same float64 values); ``binary=True`` writes base64, zlib-compressed in blocks of
    ``block_size`` bytes when ``compress``, with ``header_type`` (``"UInt32"`` or
    ``"UInt64"``) header integers and ``byte_order`` (``"LittleEndian"`` or
    ``"BigEndian"``). Points and normals are Float64, indices Int64. The file is written
    atomically (:func:`~core.io.files.atomic_write`).
    """
    if not isinstance(mesh, Mesh):
        raise InvalidInputError(f"write_vtp writes a Mesh, got {type(mesh).__name__}")
    if header_type not in ("UInt32", "UInt64"):
        raise InvalidInputError(f"header_type must be 'UInt32' or 'UInt64', got {header_type!r}")
    if byte_order not in _BYTE_ORDERS:
        raise InvalidInputError(f"byte_order must be 'LittleEndian' or 'BigEndian', got "
                                f"{byte_order!r}")
    if int(block_size) < 1:
        raise InvalidInputError(f"block_size must be a positive number of bytes, got "
                                f"{block_size!r}")
    order = _BYTE_ORDERS[byte_order]
    n_faces = len(mesh.faces)

    def array(values, kind, name=None, components=None):
        attrs = f'type="{kind}"' + (f' Name="{name}"' if name else "") + \
            (f' NumberOfComponents="{components}"' if components else "")
        if binary:
            text = _encode(values, kind, order, header_type, compress, int(block_size))
            return f'<DataArray {attrs} format="binary">\n{text}\n</DataArray>\n'
        flat = np.asarray(values).ravel().tolist()
        text = " ".join(map(repr, flat))
        return f'<DataArray {attrs} format="ascii">\n{text}\n</DataArray>\n'

    compressor = f' compressor="{_ZLIB}"' if binary and compress else ""
    parts = [
        '<?xml version="1.0"?>\n',
        f'<VTKFile type="PolyData" version="1.0" byte_order="{byte_order}" '
        f'header_type="{header_type}"{compressor}>\n<PolyData>\n',
        f'<Piece NumberOfPoints="{len(mesh.vertices)}" NumberOfVerts="0" NumberOfLines="0" '
        f'NumberOfStrips="0" NumberOfPolys="{n_faces}">\n',
    ]
    if mesh.normals is not None:
        parts += ['<PointData Normals="Normals">\n',
                  array(mesh.normals, "Float64", "Normals", 3), "</PointData>\n"]
    parts += ["<Points>\n", array(mesh.vertices, "Float64", "Points", 3), "</Points>\n",
              "<Polys>\n", array(mesh.faces, "Int64", "connectivity"),
              array(3 * np.arange(1, n_faces + 1), "Int64", "offsets"), "</Polys>\n",
              "</Piece>\n</PolyData>\n</VTKFile>\n"]
    atomic_write(path, "".join(parts))
