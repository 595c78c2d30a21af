"""Hostile label files for `import_annotations`, and the import's promise over them.

Each example writes one JSONL label file for a project holding three traces (t0, t1, t2, four steps each).
Its lines carry generated values where a user's labels go (trace id, rater, note, confidence, each label's
mode, steps, note and attribution): NUL and other control characters, lone surrogates (escaped, or written
raw so the file is not UTF-8), text that spells an escape, huge and empty values, values of the wrong type,
nesting beyond the depth limit, modes the taxonomy lacks, lines that are not JSON, and lines repeated as
they are or with other labels. Then `import_annotations` runs (the command, with or without
--ignore-unknown-modes, the format detected or forced) and must keep its promise: either it succeeds and
every stored annotation reads back as the file said (the first usable record of each trace and rater;
a record with nothing usable, no label in the taxonomy and no "no failure", is not stored), or it fails
with a CommandError naming the file and the line, leaving no row behind. Any other exception fails the test.
Profiles and replay: tests/fuzz/conftest.py and docs/security.md.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import Annotation, Assignment, LabelHistory, Membership
from taxonomy.schema import resolve_mode
from taxonomy.services import version_to_spec
from tests.factories import BatchFactory, trace_with_steps
from traces.importers import limits

pytestmark = pytest.mark.django_db

TRACES, STEPS = ("t0", "t1", "t2"), 4
HOSTILE = [
    "a\x00b",
    "\x00",
    "\ud800",
    "x\udfff",
    "\\u0000",
    "\t\n\r\\",
    "\x01\x7f\x85\u2028",
    "",
    " ",
    "名前🙂",
]
TEXT = st.one_of(
    st.sampled_from(["a\x00b", "\x00", "\ud800", "x\udfff"]),  # what the database cannot hold, most often
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=()), max_size=10),  # surrogates included
    st.just("y" * 5000),  # huge: past a rater name's 150 characters
)
DEEP = st.integers(limits.current().max_depth - 2, limits.current().max_depth + 5).map(
    lambda n: json.loads("[" * n + "]" * n)
)
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2**70),
    st.floats(allow_nan=True),
    st.lists(TEXT, max_size=2),
    st.dictionaries(TEXT, TEXT, max_size=2),
    DEEP,
)
# Text the database holds but a careless import might not: control characters, escapes spelled out,
# separators, emoji, blanks, huge.
STORABLE = st.one_of(
    st.sampled_from(["ok", "\\u0000", "\t\n\r\\", "\x01\x7f\x85\u2028", "", " ", "名前🙂", "y" * 5000]),
    st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=8),
)
MODES = st.sampled_from(["FM-1.3", "fm-2.1", "FM-3.3", "FM-1.3 ", "FM-9.9", "not a mode", "1.4 FM-1.3"])
ATTRIBUTION = st.fixed_dictionaries(
    {"agent": st.one_of(st.just("WebSurfer"), STORABLE)},
    optional={"step": st.one_of(st.none(), st.integers(0, STEPS - 1)), "reason": STORABLE},
)
# Each field of a label or a record: a plain value, or (in up to two places of a record) a hostile one.
LABEL_FIELDS = {
    "mode": (MODES, st.one_of(TEXT, WRONG)),
    "steps": (
        st.lists(st.integers(0, STEPS - 1), max_size=3),
        st.one_of(st.lists(st.integers(-1, STEPS)), WRONG),
    ),
    "primary": (st.booleans(), WRONG),
    "note": (STORABLE, st.one_of(TEXT, WRONG)),
    "attribution": (ATTRIBUTION, st.one_of(WRONG, st.fixed_dictionaries({"agent": TEXT, "reason": TEXT}))),
}
RECORD_FIELDS = {
    "trace": (st.sampled_from(TRACES), st.one_of(TEXT, WRONG)),
    "annotator": (
        st.one_of(st.sampled_from(["a1", "a2"]), STORABLE.filter(str.strip)),
        st.one_of(TEXT, WRONG),
    ),
    "no_failure": (st.booleans(), WRONG),
    "ambiguous": (st.booleans(), WRONG),
    "note": (STORABLE, st.one_of(TEXT, WRONG)),
    "confidence": (st.integers(1, 5), st.one_of(st.integers(-1, 6), WRONG)),
    "why": (st.nothing(), TEXT),  # a key the format does not have
}
OPTIONAL = {"steps", "primary", "note", "attribution", "no_failure", "ambiguous", "confidence", "labels"}


UNSTORABLE = st.sampled_from(["a\x00b", "\x00", "\ud800", "x\udfff"])
STRING_PLACES = ["annotator", "note", "mode", "label note", "attribution agent", "attribution reason"]


@st.composite
def label_records(draw) -> dict:
    """A record: plain (so that files import and are read back), hostile in one or two places, or plain
    but for one string the database cannot hold in a field that is stored."""
    places = list(RECORD_FIELDS) + ["labels"] + [f"label.{name}" for name in LABEL_FIELDS]
    how = draw(st.sampled_from(["plain", "plain", "hostile", "unstorable"]))
    hostile = draw(st.sets(st.sampled_from(places), min_size=1, max_size=2)) if how == "hostile" else set()
    record = _fields(draw, RECORD_FIELDS, hostile, "")
    if "labels" in hostile:
        record["labels"] = draw(WRONG)
    elif draw(st.booleans()) or how == "unstorable":
        record["labels"] = [
            _fields(draw, LABEL_FIELDS, {h for h in hostile if draw(st.booleans())}, "label.")
            for _ in range(draw(st.integers(1 if how == "unstorable" else 0, 3)))
        ]
    if how == "unstorable":
        place, text = draw(st.sampled_from(STRING_PLACES)), draw(UNSTORABLE)
        label = record["labels"][0]
        if place in ("annotator", "note"):
            record[place] = text
        elif place == "mode":
            label["mode"] = text
        elif place == "label note":
            label["note"] = text
        else:
            label["attribution"] = {"agent": "WebSurfer", place.split()[1]: text}
    return record


def _fields(draw, fields: dict, hostile: set, prefix: str) -> dict:
    out = {}
    for name, (plain, bad) in fields.items():
        if prefix + name in hostile:
            out[name] = draw(bad)
        elif name != "why" and (name not in OPTIONAL or draw(st.booleans())):
            out[name] = draw(plain)
    return out


RAW_LINES = st.sampled_from([b"", b"   ", b"{not json", b"\x00", b'{"trace": "t0", "annotator": "a\x00"}'])


@st.composite
def label_files(draw) -> bytes:
    """Up to five lines: mostly records (hostile in a few places), some repeated, some not JSON at all."""
    lines: list[bytes] = []
    records: list[dict] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["record"] * 12 + ["repeat"] * 2 + ["relabel"] * 2 + ["wrong", "raw"]))
        if kind in ("repeat", "relabel") and records:
            record = dict(draw(st.sampled_from(records)))
            if kind == "relabel":
                record["labels"] = draw(label_records()).get("labels", [])
        elif kind == "wrong":
            lines.append(json.dumps(draw(WRONG)).encode())
            continue
        elif kind == "raw":
            lines.append(draw(RAW_LINES))
            continue
        else:
            record = draw(label_records())
        records.append(record)
        # Escaped (\ud800) or written as it is, so that a lone surrogate makes the file not UTF-8.
        text = json.dumps(record, ensure_ascii=draw(st.booleans()))
        lines.append(text.encode("utf-8", "surrogatepass"))
    return b"".join(line + b"\n" for line in lines)


@pytest.fixture
def labelled_project(project):
    batch = BatchFactory(name="runs")
    project.batches.add(batch)
    for external_id in TRACES:
        trace_with_steps(STEPS, batch=batch, external_id=external_id)
    return project


@given(body=label_files(), ignore=st.booleans(), fmt=st.sampled_from([None, "jsonl"]))
def test_a_hostile_label_file_imports_faithfully_or_fails_by_name(labelled_project, body, ignore, fmt):
    project = labelled_project
    with tempfile.TemporaryDirectory() as folder, transaction.atomic():
        path = Path(folder) / "labels.jsonl"
        path.write_bytes(body)
        before = (get_user_model().objects.count(), Membership.objects.count(), Assignment.objects.count())
        options = {"project": project.slug, "ignore_unknown_modes": ignore, "format": fmt}
        try:
            call_command("import_annotations", str(path), stdout=io.StringIO(), **options)
        except CommandError as error:
            message = str(error)
            event(f"refused: {message.rpartition(': ')[2][:40]}")
            assert message.startswith("Nothing imported: ") and "labels.jsonl" in message, message
            # By line, or the file as a whole (its format cannot be told, it is empty).
            assert LINE.search(message) or any(why in message for why in FILE_LEVEL), message
            counts = (
                get_user_model().objects.count(),
                Membership.objects.count(),
                Assignment.objects.count(),
            )
            assert counts == before
            assert not Annotation.objects.exists() and not LabelHistory.objects.exists()
        else:
            event("imported")
            assert stored(project) == expected(project, body, ignore)
        transaction.set_rollback(True)


LINE = re.compile(r"labels\.jsonl, line \d+")
FILE_LEVEL = ("format", "the file is empty")


def stored(project) -> dict:
    """(trace, rater's name in the file) -> the annotation as read back."""
    out = {}
    annotations = Annotation.objects.filter(assignment__project=project).select_related(
        "assignment__trace", "assignment__annotator__rater"
    )
    for annotation in annotations:
        labels = {
            la.mode.code: (la.primary, sorted(e["step"] for e in la.evidence), la.note, la.attribution)
            for la in annotation.labels.select_related("mode")
        }
        key = (annotation.assignment.trace.external_id, annotation.assignment.annotator.rater.name)
        out[key] = (
            annotation.note,
            annotation.ambiguous,
            annotation.no_failure,
            annotation.confidence,
            labels,
        )
    return out


def expected(project, body: bytes, ignore: bool) -> dict:
    """What an import that succeeded must have stored, from the file's records (all of them valid, or it
    would have failed): the first usable record of each (trace, rater); labels in modes the taxonomy lacks
    left out (with `ignore`), a mode given twice kept once (its first label)."""
    spec = version_to_spec(project.taxonomy_version)
    out: dict = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        labels = {}
        for label in record.get("labels", []):
            mode = resolve_mode(spec, label["mode"])
            assert mode is not None or ignore  # else the import must have failed
            if mode is None or mode.code in labels:
                continue
            attribution = label.get("attribution")
            if attribution is not None:
                attribution = {
                    "agent": attribution["agent"],
                    "step": attribution.get("step"),
                    "reason": "",
                } | {k: v for k, v in attribution.items() if k == "reason"}
            labels[mode.code] = (
                label.get("primary", False),
                sorted(label.get("steps", [])),
                label.get("note") or "",  # a note of another type fails the import
                attribution or {},
            )
        no_failure = record.get("no_failure", False)
        if not labels and not no_failure:
            event("a record with nothing usable")
            continue  # nothing usable: not stored
        # Imported raters are found by their name in the file, bounded to 150 characters.
        key = (str(record["trace"]), str(record["annotator"]).strip()[:150])
        if key in out:
            event("a record repeated")
            continue  # the first is kept; a different one would have failed the import
        confidence = record.get("confidence")
        out[key] = (
            record.get("note") or "",
            record.get("ambiguous", False),
            no_failure and not labels,
            None if confidence is None else int(confidence),
            labels,
        )
    return out
