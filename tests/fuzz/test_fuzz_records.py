"""Hostile records for every importer format, and the import's promise over them.

Each example writes one or two files of one format (every format in ``traces.importers``: the file formats
and the published-dataset source) whose records carry generated values in the places a user's data goes
(ids, task, step text, tool names and arguments, metadata keys and values, labels): NUL and other control
characters, lone surrogates, text that spells an escape, huge and empty values, values of the wrong type,
nesting beyond the depth limit, and ids repeated within a file and across files. Then the import runs
(``do_import_files``, the verb behind the command line, the upload page and the API) and must keep its
promise: either it succeeds and every stored trace reads back as the parser gave it, or it fails with
ImportFailed whose every error names a file of the import and the record (or says why the file as a whole
is refused), leaving no row behind. Any other exception (a traceback, a database error) fails the test.

The limits are lowered for the run (value 64 KB, record 256 KB) so that "huge" is cheap to generate.
Profiles and replay: tests/fuzz/conftest.py and docs/security.md.
"""

from __future__ import annotations

import json
import re
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.db import transaction
from hypothesis import assume, event, given
from hypothesis import strategies as st

from traces import importers
from traces.importers import hf_export, limits
from traces.importers._writers import (
    otel_document,
    write_codex_rollout,
    write_inspect_eval,
    write_mast_full_json,
    write_openai_chat_jsonl,
)
from traces.importers.records import StepRecord, TraceRecord
from traces.models import Batch, Step, Trace
from traces.rows import content_hash, step_values
from traces.services import ImportFailed, do_import_files

pytestmark = pytest.mark.django_db

VALUE_LIMIT, RECORD_LIMIT = 64 * 1024, 256 * 1024

# Strings a user's file can hold that have broken imports, or could: the database's NUL, lone surrogates,
# COPY's own separators and escapes, the stand-ins the COPY writer uses for them, text that spells an escape.
HOSTILE = [
    "a\x00b",
    "\x00",
    "\ud800",
    "x\udfff",
    "\t\n\r\\",
    "\\N",
    "\x1d\x1e\x1f",
    "\\u0000",
    "\x01\x7f\x85\u2028",
    "",
    " ",
    "ok",
    "名前🙂",
]
TEXT = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=()), max_size=12),  # surrogates included
    st.just("x" * (VALUE_LIMIT + 1)),  # beyond the value limit
)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), TEXT)
JSON = st.recursive(
    SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8
)
DEEP = st.integers(limits.current().max_depth - 2, limits.current().max_depth + 20).map(
    lambda n: json.loads("[" * n + "]" * n)
)
# A place for a string: mostly text, sometimes a value of another type or nested too deep.
SLOT = st.one_of(TEXT, TEXT, TEXT, JSON, DEEP)


SLOTS = ("id", "task", "content", "tool_name", "arg_key", "arg_value", "meta_key", "meta_value", "annotator")
# Plain values for the places left alone, so that most files are valid but for what is being tried.
PLAIN = st.text(alphabet="abcxyz -_.", min_size=1, max_size=6)
HOSTILE_IN = {slot: SLOT for slot in SLOTS} | {
    "arg_key": TEXT,
    "meta_key": TEXT,
    "arg_value": JSON,
    "meta_value": st.one_of(JSON, DEEP),
}


@st.composite
def traces(draw) -> list[dict]:
    """One to three traces as plain values, each hostile in up to two places; a later one may repeat an
    earlier one's id (or its whole content)."""
    out: list[dict] = []
    for _ in range(draw(st.integers(1, 3))):
        hostile = draw(st.sets(st.sampled_from(SLOTS), max_size=2))
        trace = {slot: draw(HOSTILE_IN[slot] if slot in hostile else PLAIN) for slot in SLOTS}
        if out and draw(st.booleans()):
            first = out[0]
            trace = dict(first) if draw(st.booleans()) else {**trace, "id": first["id"]}
        out.append(trace)
    return out


def _s(value) -> str:
    """A writer's string field: TraceRecord is typed, but a wrong type is what we want some files to hold."""
    return value


def record_of(t: dict) -> TraceRecord:
    return TraceRecord(
        external_id=_s(t["id"]),
        task=_s(t["task"]),
        steps=[
            StepRecord(kind="message", role="user", agent="user", content=_s(t["content"])),
            StepRecord(
                kind="tool_call",
                role="assistant",
                agent="assistant",
                tool_name=_s(t["tool_name"]),
                tool_args={t["arg_key"]: t["arg_value"]},
                tool_call_id="c1",
            ),
        ],
        metadata={t["meta_key"]: t["meta_value"]},
    )


def dumps(value) -> str:
    return json.dumps(value)  # ASCII: a NUL or a lone surrogate is written as its JSON escape, as in the wild


def native(ts: list[dict], path: Path) -> None:
    lines = [
        {
            "id": t["id"],
            "task": t["task"],
            "metadata": {t["meta_key"]: t["meta_value"]},
            "steps": [
                {"kind": "message", "content": t["content"]},
                {
                    "kind": "tool_call",
                    "tool_name": t["tool_name"],
                    "tool_args": {t["arg_key"]: t["arg_value"]},
                },
            ],
            "annotations": [{"annotator": t["annotator"], "labels": [{"mode": "1.1"}]}],
        }
        for t in ts
    ]
    path.write_text("".join(dumps(line) + "\n" for line in lines))


def openai_chat(ts: list[dict], path: Path) -> None:
    write_openai_chat_jsonl([record_of(t) for t in ts], path)


def otel(ts: list[dict], path: Path) -> None:
    path.write_text(dumps(otel_document([record_of(t) for t in ts])))


def codex(ts: list[dict], path: Path) -> None:
    write_codex_rollout(record_of(ts[0]), path, session_id=ts[0]["id"])


def inspect_ai(ts: list[dict], path: Path) -> None:
    write_inspect_eval([record_of(t) for t in ts], path)


def mast_full(ts: list[dict], path: Path) -> None:
    write_mast_full_json([record_of(t) for t in ts], path)


def tau2_bench(ts: list[dict], path: Path) -> None:
    doc = {
        "info": {"agent_info": {"llm": ts[0]["tool_name"]}},
        "tasks": [{"id": t["id"], "description": t["task"]} for t in ts],
        "simulations": [
            {
                "id": t["id"],
                "task_id": t["id"],
                "messages": [
                    {"role": "user", "content": t["content"]},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c1", "name": t["tool_name"], "arguments": {t["arg_key"]: t["arg_value"]}}
                        ],
                    },
                    {"role": "tool", "id": "c1", "content": t["meta_value"]},
                ],
                "reward_info": {"reward": 1},
            }
            for t in ts
        ],
    }
    path.write_text(dumps(doc))


def swe_agent(ts: list[dict], path: Path) -> None:
    t = ts[0]
    doc = {
        "trajectory": [
            {"thought": t["task"], "action": t["content"], "observation": t["meta_value"]},
            {"thought": t["tool_name"], "action": t["arg_key"], "observation": t["arg_value"]},
        ],
        "info": {t["meta_key"]: t["meta_value"]},
    }
    path.write_text(dumps(doc))


def openhands(ts: list[dict], path: Path) -> None:
    t = ts[0]
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": t["content"]}},
        {
            "id": 1,
            "source": "agent",
            "action": "run",
            "args": {"command": t["tool_name"], t["arg_key"]: t["arg_value"]},
        },
        {"id": 2, "source": "environment", "observation": "run", "content": t["task"], "cause": 1},
    ]
    path.write_text(dumps(events))


def who_and_when(ts: list[dict], path: Path) -> None:
    t = ts[0]
    doc = {
        "history": [
            {"role": "human", "content": t["content"]},
            {"role": t["tool_name"], "content": t["task"]},
        ],
        "question": t["task"],
        "mistake_agent": t["annotator"],
        "mistake_step": "1",
        "mistake_reason": t["meta_value"],
    }
    path.write_text(dumps(doc))


def mast_labelled(ts: list[dict], path: Path) -> None:
    doc = [
        {
            "round": t["meta_value"],
            "mas_name": t["tool_name"],
            "trace_id": t["id"],
            "trace": t["content"],
            "annotations": [{"failure mode": "1.1 Disobey task specification", t["annotator"]: True}],
        }
        for t in ts
    ]
    path.write_text(dumps(doc))


def hf_dataset(ts: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "trace_id": t["id"],
            "messages": [
                {"role": "user", "content": t["content"]},
                {"role": "assistant", "content": t["task"]},
            ],
            "model_name": t["tool_name"],
            "difficulty": t["meta_value"],
        }
        for t in ts
    ]
    try:
        pq.write_table(pa.Table.from_pylist(rows), path)
    except (pa.ArrowException, UnicodeEncodeError, OverflowError):
        assume(False)  # not a table parquet can hold (mixed column types, a surrogate): no such file exists


FILE_FORMATS = {
    "native": (native, ".jsonl"),
    "openai_chat": (openai_chat, ".jsonl"),
    "otel": (otel, ".json"),
    "codex": (codex, ".jsonl"),
    "inspect_ai": (inspect_ai, ".eval"),
    "mast_full": (mast_full, ".json"),
    "tau2_bench": (tau2_bench, ".json"),
    "swe_agent": (swe_agent, ".traj"),
    "openhands": (openhands, ".json"),
    "who_and_when": (who_and_when, ".json"),
    "mast_labelled": (mast_labelled, ".json"),
    "hf_dataset": (hf_dataset, ".parquet"),
}


def test_every_format_is_fuzzed():
    assert set(FILE_FORMATS) == set(importers.FORMATS)
    assert set(importers.ALL_FORMATS) - set(FILE_FORMATS) == {"hf_export"}  # fuzzed below, as a source


# An error names a file and a record ("line 3", "record 2"), or says why the file as a whole is refused.
RECORD = re.compile(r"\b(line|record) \d+")
FILE_LEVEL = (
    "no traces found",
    "the file is empty",
    "malformed JSON",
    "not a readable parquet",
    "could not read",
)


def check_promise(files: list[tuple[Path, str]], fmt: str) -> None:
    """Import `files` and check the promise (see the module's docstring); rolled back afterwards."""
    with transaction.atomic():
        traces_before, batches_before = Trace.objects.count(), Batch.objects.count()
        try:
            result = do_import_files(files, batch_name="fuzz", fmt=fmt)
        except ImportFailed as failure:
            event("refused")
            assert failure.result.errors
            names = [name for _, name in files]
            for error in failure.result.errors:
                assert any(name in error for name in names), error
                assert RECORD.search(error) or any(kind in error for kind in FILE_LEVEL), error
            assert (Trace.objects.count(), Batch.objects.count()) == (traces_before, batches_before)
        else:
            event("imported")
            read_back_equal(files, fmt, result)
        transaction.set_rollback(True)


def read_back_equal(files: list[tuple[Path, str]], fmt: str, result) -> None:
    """Every trace of the files is stored (once) as the parser gives it."""
    expected: dict[str, TraceRecord] = {}
    if fmt == "otel" and len(files) > 1:  # the files of one import are read as one (a trace may span them)
        with ExitStack() as stack:
            streams = [(stack.enter_context(open(path, "rb")), name) for path, name in files]
            for record in importers.otel.parse_files(streams):
                expected.setdefault(content_hash(record), record)
    for path, _ in [] if fmt == "otel" and len(files) > 1 else files:
        records = (
            importers.iter_source(path, fmt) if fmt == "hf_export" else importers.iter_records(path, fmt)
        )
        for record in records:
            expected.setdefault(content_hash(record), record)
    stored = {t.content_hash: t for t in Trace.objects.filter(batch=result.batch)}
    assert set(stored) == set(expected)
    for digest, record in expected.items():
        trace = stored[digest]
        assert trace.external_id == record.external_id[:255]
        assert trace.task == record.task
        rows = list(Step.objects.filter(trace=trace).order_by("index").values_list(*Step.DATA_FIELDS))
        assert [_plain(row) for row in rows] == [_plain(values) for values in step_values(record)]


def _plain(values: tuple) -> list:
    """Step values as JSON would give them back (the arguments go through jsonb)."""
    return json.loads(json.dumps(list(values), default=str))


@pytest.mark.parametrize("fmt", sorted(FILE_FORMATS))
@given(data=st.data())
def test_a_file_of_hostile_records_imports_faithfully_or_fails_by_name(fmt, data):
    write, suffix = FILE_FORMATS[fmt]
    with (
        tempfile.TemporaryDirectory() as folder,
        limits.override(max_value_bytes=VALUE_LIMIT, max_record_bytes=RECORD_LIMIT),
    ):
        files = []
        for n in range(data.draw(st.integers(1, 2), label="files")):
            path = Path(folder) / f"f{n}" / f"run{suffix}"  # one stem: ids made from it repeat across files
            path.parent.mkdir()
            try:
                write(data.draw(traces(), label=f"traces of file {n}"), path)
            except (TypeError, AttributeError, ValueError):
                assume(False)  # the writer cannot spell this value in this format (not the parser's concern)
            files.append((path, f"f{n}/run{suffix}"))
        check_promise(files, fmt)


# hf_export reads a folder through `datasets` (seconds a load): its rows are given as `datasets` decodes them.
CARD = """---
tags: [trace-annotator]
configs:
- config_name: traces
  data_files: [{split: train, path: traces/*.parquet}]
- config_name: annotations
  data_files: [{split: train, path: annotations/*.parquet}]
---
"""


@given(ts=traces(), step_kind=st.one_of(st.just("message"), SLOT), tokens=st.one_of(st.none(), SCALAR))
def test_a_published_dataset_of_hostile_rows_imports_faithfully_or_fails_by_name(ts, step_kind, tokens):
    rows = {
        "traces": [
            {
                "id": t["id"],
                "trace_uid": f"u{i}",
                "task": t["task"],
                "outcome": "unknown",
                "metadata": dumps({t["meta_key"]: t["meta_value"]}),
                "steps": [
                    {"index": 0, "kind": step_kind, "content": t["content"], "tokens": tokens},
                    {
                        "index": 1,
                        "kind": "tool_call",
                        "tool_name": t["tool_name"],
                        "tool_args": dumps({t["arg_key"]: t["arg_value"]}),
                    },
                ],
            }
            for i, t in enumerate(ts)
        ],
        "annotations": [
            {
                "trace_uid": f"u{i}",
                "annotator": t["annotator"],
                "label_details": [{"mode": t["task"], "steps": [0]}],
            }
            for i, t in enumerate(ts)
        ],
    }
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        (Path(folder) / "README.md").write_text(CARD)
        patch.setattr(hf_export, "iter_rows", lambda source, split=None, config=None: iter(rows[config]))
        check_promise([(Path(folder), "published")], "hf_export")
