"""Versioned JSON documents for joints and fits (the add-on stores fitted joints in .blend
files this way), and the atomic file writes every file the project writes goes through. See
:mod:`core.io.joints` and :mod:`core.io.files`."""

from .files import atomic_path, atomic_write, check_writable_path
from .joints import (MAX_DEPTH, MAX_DOCUMENT_SIZE, RANGE_SLACK, SCHEMA, SCHEMA_VERSION,
                     JointDocument, document_from_dict, document_to_dict, dumps, load, loads, save)
# OpenSim's companion files: bone meshes (.vtp) and motions (.mot / .sto)
from .motion import Motion, read_motion, write_motion
from .vtp import Mesh, read_vtp, write_vtp
from .files import read_input

__all__ = ["SCHEMA", "SCHEMA_VERSION", "JointDocument", "document_to_dict",
           "document_from_dict", "dumps", "loads", "save", "load", "atomic_write", "atomic_path",
           "check_writable_path", "MAX_DOCUMENT_SIZE", "MAX_DEPTH", "RANGE_SLACK"]
__all__ += ["Motion", "read_motion", "write_motion"]
__all__ += ["Mesh", "read_vtp", "write_vtp"]
__all__ += ["read_input"]
