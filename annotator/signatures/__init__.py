"""Failure signatures: the analyses that turn labels into an engineering roadmap (pure numpy; no Django).

Inputs are arrays (a traces x modes 0/1 matrix, an outcome per trace, group labels, evidence points);
outputs are frozen dataclasses. ``annotator.services.signatures`` is the one bridge that builds the arrays
from the database; the views, the API and the ``signatures`` command only call it.
"""

from annotator.signatures.inputs import (
    FAILURE,
    SUCCESS,
    UNKNOWN,
    Evidence,
    Grouping,
    ModeInfo,
    SignatureInput,
    factorize,
)
from annotator.signatures.report import Signatures, compute_signatures

__all__ = [
    "FAILURE",
    "SUCCESS",
    "UNKNOWN",
    "Evidence",
    "Grouping",
    "ModeInfo",
    "SignatureInput",
    "Signatures",
    "compute_signatures",
    "factorize",
]
