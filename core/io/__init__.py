"""Versioned JSON documents for joints and fits (the add-on stores fitted joints in .blend
files this way). See :mod:`core.io.joints`."""

from .joints import (SCHEMA, SCHEMA_VERSION, JointDocument, document_from_dict, document_to_dict,
                     dumps, load, loads, save)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "JointDocument", "document_to_dict",
           "document_from_dict", "dumps", "loads", "save", "load"]
