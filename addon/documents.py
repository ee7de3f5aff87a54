"""The joint stored on a bone: read it as a core JointDocument, store one.

A bone's joint lives in ``PoseBone.spline_joints.joint_json`` as the core's versioned JSON
(:mod:`core.io`); its coordinate ranges and fit report are copied beside it for the panels and
the coordinate sliders. :func:`store_document` is the only writer of those properties, so they
always describe the stored JSON.
"""

from __future__ import annotations

#: JSON text -> its JointDocument, or the message of the InvalidInputError that refused it (so
#: the live drive does not parse a bad document again on every frame change)
_DOCUMENTS: dict[str, object] = {}


def joint_document(settings):
    """The bone's stored joint as a core.io JointDocument (parsed once per distinct JSON text);
    the core's InvalidInputError (a ValueError) when the stored text is not a valid document."""
    from ..core import io
    from ..core.errors import InvalidInputError

    text = settings.joint_json
    if not text:
        raise ValueError("no joint stored on this bone: fit one first (Fit Joint)")
    doc = _DOCUMENTS.get(text)
    if doc is None:
        try:
            doc = io.loads(text)
        except InvalidInputError as exc:
            doc = (f"the joint stored on this bone cannot be read ({exc}); fit or import the "
                   "joint again")
        if len(_DOCUMENTS) > 64:
            _DOCUMENTS.clear()
        _DOCUMENTS[text] = doc
    if isinstance(doc, str):
        raise InvalidInputError(doc)
    return doc


def fit_status(doc):
    """The fit status shown for a stored document: its report's status, or "imported"."""
    return "imported" if doc.report is None else doc.report.status


def store_document(settings, doc):
    """Store ``doc`` on a bone's settings: its JSON, coordinate ranges and fit report (status
    "imported" when it has none). Returns the document read back from the stored JSON; a
    document that cannot be written raises before anything is stored."""
    from ..core import io

    text = io.dumps(doc)
    stored = io.loads(text)
    settings.joint_json = text
    for i, (lo, hi) in enumerate(stored.ranges[: len(settings.range_min)]):
        settings.range_min[i], settings.range_max[i] = float(lo), float(hi)
    report = stored.report
    settings.fit_status = fit_status(stored)
    if report is not None:
        settings.fit_rms_mm, settings.fit_max_mm = report.rms_position_mm, report.max_position_mm
        settings.fit_rms_deg, settings.fit_max_deg = report.rms_rotation_deg, report.max_rotation_deg
    return stored
