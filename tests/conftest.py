"""Shared test settings: hypothesis without per-example deadlines (the machines are noisy;
speed is measured in scripts/bench.py, never in tests)."""

from hypothesis import HealthCheck, settings

settings.register_profile("project", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")
