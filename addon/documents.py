"""Documents stored in the .blend, read back as core objects: the joint stored on a bone and
the OpenSim model stored on an imported armature.

A bone's joint lives in ``PoseBone.spline_joints.joint_json`` as the core's versioned JSON
(:mod:`core.io`); its coordinate ranges and fit report are copied beside it for the panels and
the coordinate sliders. :func:`store_document` is the only writer of those properties, so they
always describe the stored JSON.

An imported OpenSim model lives on its armature data as the .osim file's whole text (ID property
:data:`OSIM_TEXT_KEY`) with the path it was read from (:data:`OSIM_PATH_KEY`);
:func:`osim_rig` parses it again when needed, with the spline joints fitted to its joints
(``Armature.spline_joints_osim.fits``, each a JointDocument's JSON, written by
:func:`store_osim_fit`) that are switched on in place of the exact joints. Both kinds are parsed once per distinct text and
kept in memory (a text that cannot be read is remembered with its message, so the live drive
does not parse it again on every frame change).
"""

from __future__ import annotations

import hashlib

from . import bridge

#: ID property (on an armature data-block) holding the imported .osim file's text
OSIM_TEXT_KEY = "spline_joints_osim_text"
#: the ID property that holds the text in files saved by Blender 5.0 with add-on 0.1.0, read
#: when :data:`OSIM_TEXT_KEY` is absent. It is the name of the registered
#: ``Armature.spline_joints_osim``: Blender 5.0 keeps custom and registered properties apart,
#: Blender 4.2-4.5 store both in one group, where the registered one replaces the text
LEGACY_OSIM_TEXT_KEY = "spline_joints_osim"
#: ID property beside it: the path the model was imported from
OSIM_PATH_KEY = "spline_joints_osim_path"
#: ID property beside it: the text's SHA-256 (the parsed model's cache key, so the live drive
#: does not hash the text on every update)
OSIM_HASH_KEY = "spline_joints_osim_sha256"

#: key -> parsed object, or the message of the error that refused its text
_DOCUMENTS: dict[str, object] = {}
_RIGS: dict[str, object] = {}


def _parsed(cache: dict, key: str, parse, refusal: str):
    """``parse()`` once per key; its InvalidInputError is kept as ``refusal`` (formatted with
    ``exc``) and raised again on every later call with that key."""
    from ..core.errors import InvalidInputError

    value = cache.get(key)
    if value is None:
        try:
            value = parse()
        except InvalidInputError as exc:
            value = refusal.format(exc=exc)
        if len(cache) > 64:
            cache.clear()
        cache[key] = value
    if isinstance(value, str):
        raise InvalidInputError(value)
    return value


def joint_document(settings):
    """The bone's stored joint as a core.io JointDocument (parsed once per distinct JSON text);
    the core's InvalidInputError (a ValueError) when the stored text is not a valid document."""
    from ..core import io

    text = settings.joint_json
    if not text:
        raise ValueError("no joint stored on this bone: fit one first (Fit Joint)")
    return _parsed(_DOCUMENTS, text, lambda: io.loads(text),
                   "the joint stored on this bone cannot be read ({exc}); fit or import the joint again")


def osim_text(armature_data) -> str | None:
    """The .osim text stored on an armature data-block, or None."""
    for key in (OSIM_TEXT_KEY, LEGACY_OSIM_TEXT_KEY):
        text = armature_data.get(key)
        if isinstance(text, str) and text:
            return text
    return None


def is_osim_armature(obj) -> bool:
    """True for an armature object whose data holds an imported OpenSim model."""
    return obj is not None and obj.type == "ARMATURE" and osim_text(obj.data) is not None


def store_osim_model(armature_data, text: str, path: str) -> None:
    """Store an OpenSim model's file text and source path on an armature data-block."""
    if isinstance(armature_data.get(LEGACY_OSIM_TEXT_KEY), str):
        del armature_data[LEGACY_OSIM_TEXT_KEY]
    armature_data[OSIM_TEXT_KEY] = text
    armature_data[OSIM_PATH_KEY] = path
    armature_data[OSIM_HASH_KEY] = _sha256(text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def osim_rig(armature_data, fitted: bool = True):
    """The core :class:`~core.osim_rig.OsimRig` of the model stored on an armature data-block,
    parsed from its text once per distinct text (keyed by the text's SHA-256, stored beside it
    at import, and its length); ValueError when there is none or it cannot be read.

    fitted: substitute the fitted joints that are switched on (:func:`enabled_osim_fits`) for
    the model's exact ones (core.fitting.osim.model_with_fits), the rest frames staying those
    of the imported model; the result is cached per model and set of enabled fitted joints
    (the key holds each one's joint name and JSON text's SHA-256), so adding, removing or
    switching one gives another rig. False: the model as imported.
    """
    from ..core.io.osim import parse_osim
    from ..core.osim_rig import OsimRig

    text = osim_text(armature_data)
    if text is None:
        raise ValueError(f"armature '{armature_data.name}' holds no OpenSim model: import one "
                         "(File > Import > OpenSim Model)")
    source = armature_data.get(OSIM_PATH_KEY) or armature_data.name
    digest = armature_data.get(OSIM_HASH_KEY)
    key = f"{digest if isinstance(digest, str) else _sha256(text)}:{len(text)}"
    exact = _parsed(_RIGS, key, lambda: OsimRig(parse_osim(text, source=source)),
                    "the OpenSim model stored on this armature cannot be read ({exc}); import it again")
    fits = enabled_osim_fits(armature_data) if fitted else {}
    if not fits:
        return exact
    key += "".join(f"|{name}:{_sha256(json_text)}" for name, json_text in fits.items())
    return _parsed(_RIGS, key, lambda: _fitted_rig(exact, fits),
                   "a fitted joint stored on this armature cannot be used ({exc}); remove it "
                   "(OpenSim panel) or fit it again")


def enabled_osim_fits(armature_data) -> dict:
    """``{joint name: JointDocument JSON text}`` of the fitted joints switched on, in the order
    they were fitted."""
    return {f.name: f.joint_json for f in armature_data.spline_joints_osim.fits
            if f.use and f.joint_json}


def _fitted_rig(exact, fits: dict):
    """The rig of ``exact``'s model with the fitted joints ``{name: JSON}`` substituted."""
    from ..core import io
    from ..core.fitting.osim import model_with_fits
    from ..core.osim_rig import OsimRig

    documents = {name: io.loads(text) for name, text in fits.items()}
    return OsimRig(model_with_fits(exact.model, documents), reference=exact.model)


def store_osim_fit(armature_data, fit, report: str):
    """Store ``fit`` (a core.fitting.osim.OsimSplineFit of the model's joint) on an imported
    armature's data, replacing an earlier fit of that joint, switched on, with its ``report``
    text and errors. The JSON is written and read back before anything is stored; returns the
    stored item."""
    from ..core import io

    text = io.dumps(fit.document)
    io.loads(text)
    name = fit.osim_joint.name
    fits = armature_data.spline_joints_osim.fits
    item = fits.get(name) or fits.add()
    item.name, item.joint_json, item.report = name, text, report
    item.max_mm, item.max_deg = fit.max_position_mm, fit.max_angle_deg
    item.beyond_mm = max((row[3] for row in fit.beyond), default=0.0)
    item.use = True
    armature_data.update_tag()
    return item


def remove_osim_fit(armature_data, joint_name: str) -> None:
    """Remove the fitted joint of ``joint_name`` (the exact joint is used again);
    ValueError when there is none."""
    fits = armature_data.spline_joints_osim.fits
    index = fits.find(joint_name)
    if index < 0:
        raise ValueError(f"joint '{joint_name}' has no fitted spline joint on "
                         f"'{armature_data.name}'; fitted: {[f.name for f in fits] or 'none'}")
    fits.remove(index)
    armature_data.update_tag()


def fit_status(doc):
    """The fit status shown for a stored document: its report's status, or "imported"."""
    return "imported" if doc.report is None else doc.report.status


#: a fit status (:func:`fit_status`, core.fitting.report.STATUSES) in plain words, with the
#: icon the Fit panel shows it with
STATUS_WORDS = {
    "converged": ("Fit converged", "CHECKMARK"),
    "max_iterations": ("Fit stopped at its iteration cap, still improving: fit again", "INFO"),
    "diverged": ("Fit did not converge: check the samples", "ERROR"),
    "imported": ("Imported or transferred joint (no fit of its own)", "INFO"),
}


def status_words(status: str) -> tuple[str, str]:
    """(sentence, icon) of a bone's fit status; another text (the live drive's "cannot drive:
    ...") is shown as it is, as an error."""
    return STATUS_WORDS.get(status, (status, "ERROR"))


def rest_frames(pose_bone):
    """core RestFrames of the bone and its parent, as a joint document keeps them
    (BridgeError when the bone has no parent)."""
    from ..core.io import RestFrames

    return RestFrames(*bridge.read_rest_frames(pose_bone))


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
