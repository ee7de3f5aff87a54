"""A bone's reach cone and twist limit as the core takes them (:func:`cone_options`), and
the name of the cone mesh drawn for it."""

from __future__ import annotations

CONE_PREFIX = "SJ_ReachCone"


def cone_options(settings):
    """core BoneCone from the bone's reach-cone settings."""
    from ..core.bones import BoneCone

    return BoneCone(axis=tuple(settings.cone_axis), shape=settings.cone_shape.lower(),
                    half_angle=settings.cone_half_angle, half_angle_x=settings.cone_half_angle_x,
                    half_angle_z=settings.cone_half_angle_z, twist_limit=settings.twist_limit)


def cone_object_name(armature, pose_bone) -> str:
    return f"{CONE_PREFIX}_{armature.name}_{pose_bone.name}"
