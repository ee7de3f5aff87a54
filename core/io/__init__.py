"""Files the project reads and writes: versioned JSON documents for joints and fits (the
add-on stores fitted joints in .blend files this way), OpenSim models (.osim), their bone
meshes (.vtp), motions (.mot / .sto) and external loads, and the atomic writes every file goes
through. See :mod:`core.io.joints`, :mod:`core.io.osim`, :mod:`core.io.vtp`,
:mod:`core.io.motion`, :mod:`core.io.external_loads` and
:mod:`core.io.files` (which also reads regular files only, within a size limit, and locks
output folders); numbers in their text are parsed by :mod:`core.io.fields`."""

from .external_loads import ExternalLoads, read_external_loads
from .files import (MAX_INPUT_BYTES, atomic_path, atomic_write, check_writable_path,
                    input_file_problem, lock_folder, read_input)
from .joints import (MAX_DEPTH, MAX_DOCUMENT_SIZE, RANGE_SLACK, READ_VERSIONS, SCHEMA,
                     SCHEMA_VERSION, JointDocument, RestFrames, document_from_dict, document_to_dict, dumps, load, loads, save)
from .motion import Motion, read_motion, write_motion
from .osim import OsimModel, motion_coordinates, parse_osim, read_osim
from .vtp import Mesh, read_vtp, write_vtp

__all__ = ["SCHEMA", "SCHEMA_VERSION", "READ_VERSIONS", "JointDocument", "RestFrames",
           "document_to_dict",
           "document_from_dict", "dumps", "loads", "save", "load", "atomic_write", "atomic_path",
           "check_writable_path", "read_input", "input_file_problem", "lock_folder",
           "MAX_INPUT_BYTES", "MAX_DOCUMENT_SIZE", "MAX_DEPTH", "RANGE_SLACK",
           "Motion", "read_motion", "write_motion", "Mesh", "read_vtp", "write_vtp",
           "OsimModel", "read_osim", "parse_osim", "motion_coordinates", "ExternalLoads",
           "read_external_loads"]
