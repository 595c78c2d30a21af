"""Hypothesis profiles for the fuzz suite (tests/fuzz/).

CI runs a short, seeded profile ("ci", the default) so a run is repeatable and quick; `make fuzz` selects
the "fuzz" profile, which runs many more examples with a fresh seed each time (print_blob, so a failure
can be replayed with @reproduce_failure). FUZZ_EXAMPLES overrides the count of either profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_CHECKS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
_EXAMPLES = os.environ.get("FUZZ_EXAMPLES")

settings.register_profile(
    "ci",
    max_examples=int(_EXAMPLES or 25),
    derandomize=True,
    deadline=None,
    suppress_health_check=_SLOW_CHECKS,
    database=None,
)
settings.register_profile(
    "fuzz",
    max_examples=int(_EXAMPLES or 1000),
    deadline=None,
    suppress_health_check=_SLOW_CHECKS,
    print_blob=True,
)
settings.load_profile(os.environ.get("FUZZ_PROFILE", "ci"))
