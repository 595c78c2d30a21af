"""Who is a human, a language model or an imported labeller: the one place that decides it.

Every rater is a user, so its labels are plain Annotations and every agreement statistic treats it like any
other rater. Its kind is a column (``Rater.kind``: human, llm, imported; a user without a row is a human who
signs in), never a naming convention. What must differ is decided here and nowhere else:

- assignment: only active human users receive work (``receives_work_q``); an LLM's annotations never fill a
  human overlap slot, and an imported rater's fill one only when the project says they count
  (``Project.imported_labels_count_toward_overlap``; ``fills_overlap_q``);
- adjudication: "all required annotations submitted" and "do they disagree" count the raters who fill the
  overlap (``fills_overlap_q``): people labelling here, and imported raters when the project says so;
- blindness: annotators see an LLM's labels only after submitting their own, and only when the project
  switches it on (``annotator.services.llm.opinion``);
- provenance: labels by ``imported`` raters were made elsewhere (how is unknown); the dataset card says so.

Imported raters are namespaced by their source (``annotator_1`` of ``MAD_human_labelled_dataset`` is the user
``MAD_human_labelled_dataset/annotator_1``) and found by (source, name), never by username, so a name in a
file never becomes a real account; their usernames hold a ``/``, which Django's username validator refuses
to people, so they cannot collide with an account someone signs up for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models import Q

from annotator.models.raters import Rater, RaterKind

LLM_PREFIX = "llm:"  # LLM raters' usernames start with it: readable, but the kind column decides
# Django's username field is 150 characters; model names such as "Qwen/Qwen2.5-7B-Instruct" or "qwen2.5:7b"
# keep letters, digits and . @ + - : and turn anything else (slashes, spaces) into "-".
_UNSAFE = re.compile(r"[^\w.@+:-]+")
_UNSAFE_PART = re.compile(r"[^\w.@+-]+")
_SOURCE_SUFFIX = re.compile(r"\.(jsonl?|ndjson|traj|eval|parquet|arrow|csv)$", re.IGNORECASE)


def kind_of(user) -> str:
    """The rater kind of a user (human when it has no Rater row)."""
    if user is None:
        return RaterKind.HUMAN
    try:
        return user.rater.kind
    except Rater.DoesNotExist:
        return RaterKind.HUMAN


def kinds_of(user_ids: Iterable[int]) -> dict[int, str]:
    """Rater kind per user id, in one query (human for users without a row)."""
    ids = list(user_ids)
    found = dict(Rater.objects.filter(user_id__in=ids).values_list("user_id", "kind"))
    return {pk: found.get(pk, RaterKind.HUMAN) for pk in ids}


def is_llm_rater(user) -> bool:
    """True for a language-model rater."""
    return kind_of(user) == RaterKind.LLM


def llm_username(model: str) -> str:
    """The rater's username for a model name: ``llm:`` + the model, made safe and bounded."""
    cleaned = _UNSAFE.sub("-", model.strip()).strip("-") or "model"
    return (LLM_PREFIX + cleaned)[:150]


def llm_q(user_path: str = "") -> Q:
    """A filter for rows whose user (reached by ``user_path``, e.g. ``"assignment__annotator"``) is an LLM."""
    prefix = f"{user_path}__" if user_path else ""
    return Q(**{f"{prefix}rater__kind": RaterKind.LLM})


def human_q(user_path: str = "") -> Q:
    """The complement of :func:`llm_q`: rows by human raters (imported human labellers included)."""
    return ~llm_q(user_path)


def imported_q(user_path: str = "") -> Q:
    """Rows whose user is an imported rater (labels made elsewhere)."""
    prefix = f"{user_path}__" if user_path else ""
    return Q(**{f"{prefix}rater__kind": RaterKind.IMPORTED})


def fills_overlap_q(imported_count: bool, user_path: str = "") -> Q:
    """Rows whose user fills one of a trace's `overlap` slots: never an LLM; an imported rater only when
    `imported_count` (the project's ``imported_labels_count_toward_overlap``). Off, imported raters are
    reference raters like LLMs: every trace still gets `overlap` people who label here."""
    return human_q(user_path) if imported_count else human_q(user_path) & ~imported_q(user_path)


def receives_work_q(user_path: str = "") -> Q:
    """Users who may be given traces to label: active accounts that are neither LLMs nor imported."""
    prefix = f"{user_path}__" if user_path else ""
    return Q(**{f"{prefix}is_active": True}) & ~Q(
        **{f"{prefix}rater__kind__in": [RaterKind.LLM, RaterKind.IMPORTED]}
    )


def get_llm_rater(model: str):
    """The (inactive, password-less) rater user of `model`, created on first use."""
    user = get_user_model().objects.filter(username=llm_username(model)).first()
    if user is None:
        user = _new_user(llm_username(model))
    Rater.objects.update_or_create(user=user, defaults={"kind": RaterKind.LLM})
    return user


def rater_source(name: str) -> str:
    """The namespace of raters from a file or dataset: its last path part without a trace-file suffix
    (``.../mast/MAD_human_labelled_dataset.json`` -> ``MAD_human_labelled_dataset``); never a server path."""
    text = name.strip().rstrip("/\\")
    if text.startswith("hf://"):
        text = text[len("hf://") :]
        return _clean(text.replace("/", "-")) or "imported"
    last = re.split(r"[/\\]", text)[-1]
    return _clean(_SOURCE_SUFFIX.sub("", last)) or "imported"


def _clean(text: str) -> str:
    return _UNSAFE_PART.sub("-", text.strip()).strip("-")[:80]


def imported_username(source: str, name: str) -> str:
    """``source/name``, bounded to Django's 150 characters (a hash keeps long names apart)."""
    username = f"{_clean(source) or 'imported'}/{_clean(name) or 'rater'}"
    if len(username) > 150:
        digest = hashlib.sha256(f"{source}/{name}".encode()).hexdigest()[:10]
        username = f"{username[:139]}~{digest}"
    return username


def get_imported_rater(source: str, name: str) -> tuple[object, bool]:
    """(user, created) for the rater `name` of `source`: found by (source, name), never by username, so an
    imported name never resolves to a real account. New ones are inactive with no usable password."""
    source, name = source[:200], name[:150]
    rater = Rater.objects.select_related("user").filter(kind=RaterKind.IMPORTED, source=source, name=name)
    found = rater.first()
    if found is not None:
        return found.user, False
    username = imported_username(source, name)
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        # Another source cleaned to the same text: keep them apart by a hash of the exact pair.
        digest = hashlib.sha256(f"{source}\0{name}".encode()).hexdigest()[:10]
        username = f"{username[:139]}~{digest}"
    user = _new_user(username)
    Rater.objects.create(user=user, kind=RaterKind.IMPORTED, source=source, name=name)
    return user, True


def _new_user(username: str):
    user = get_user_model()(username=username, is_active=False)
    user.set_unusable_password()
    user.save()
    return user
