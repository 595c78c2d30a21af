"""Who is a human and who is a language model: the one place that decides it.

An LLM rater is an ordinary (inactive) user whose username starts with ``llm:`` (``llm:qwen2.5-7b``), so its
labels are plain Annotations and every agreement statistic treats it like any other rater. What must differ
is decided here and nowhere else:

- assignment: an LLM never receives human work and its annotations never fill a human overlap slot
  (``annotator.services.assignment.do_assign`` ignores its assignments);
- adjudication: "all required annotations submitted" and "do they disagree" count humans only
  (use ``Annotation.objects.human()`` / ``human_q("assignment__annotator")``);
- blindness: annotators see an LLM's labels only after submitting their own, and only when the project
  switches it on (``annotator.services.llm_opinion``).

The username prefix (rather than a flag column) keeps the rule visible wherever a username is shown, needs no
migration of the user model, and survives an export and re-import of the labels.
"""

from __future__ import annotations

import re

from django.db.models import Q

LLM_PREFIX = "llm:"
# Django's username field is 150 characters; model names such as "Qwen/Qwen2.5-7B-Instruct" or "qwen2.5:7b"
# keep letters, digits and . @ + - : and turn anything else (slashes, spaces) into "-".
_UNSAFE = re.compile(r"[^\w.@+:-]+")


def is_llm_rater(user) -> bool:
    """True for a language-model rater (works on a User or anything with a ``username``)."""
    return bool(user is not None and getattr(user, "username", "").startswith(LLM_PREFIX))


def llm_username(model: str) -> str:
    """The rater's username for a model name: ``llm:`` + the model, made safe and bounded."""
    cleaned = _UNSAFE.sub("-", model.strip()).strip("-") or "model"
    return (LLM_PREFIX + cleaned)[:150]


def llm_q(user_path: str = "") -> Q:
    """A filter for rows whose user (reached by ``user_path``, e.g. ``"assignment__annotator"``) is an LLM."""
    prefix = f"{user_path}__" if user_path else ""
    return Q(**{f"{prefix}username__startswith": LLM_PREFIX})


def human_q(user_path: str = "") -> Q:
    """The complement of :func:`llm_q`: rows by human raters (imported human labellers included)."""
    return ~llm_q(user_path)
