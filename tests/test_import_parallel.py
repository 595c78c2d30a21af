"""A large import on PostgreSQL is parsed by worker processes: it stores exactly what one process stores,
names the same line in its errors, finds ids repeated across the pieces of a file, and keeps all or
nothing."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from traces import import_pool, services
from traces.importers import HEAD_SIZE
from traces.importers.synthetic import (
    native_lines,
    synthetic_traces,
    write_openai_chat_jsonl,
)
from traces.models import Batch, Step, Trace

STEP_FIELDS = ("index", "parent_index", "depth", "agent", "role", "kind", "content", "tool_name", "tool_args")
STEP_FIELDS += ("tool_call_id", "timestamp", "tokens", "duration_ms")
AWKWARD = "tab\there, new\nline, cr\rreturn, back\\slash, a literal \\N, unit\x1fsep\x1erow\x1dnull é 🙂"


@pytest.fixture
def postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes serve imports into PostgreSQL only")


@pytest.fixture
def pools(monkeypatch):
    """Force the worker processes onto small files, in pieces of 3 traces; count the pools started."""
    started = []
    start = import_pool.start

    def counted(*args, **kwargs):
        started.append(1)
        return start(*args, **kwargs)

    monkeypatch.setattr(import_pool, "start", counted)
    # The test session may hold idle threads of its own (the command never does when it starts).
    monkeypatch.setattr(import_pool, "can_fork", lambda: True)
    monkeypatch.setattr(import_pool, "PIECE_TRACES", 3)
    monkeypatch.setattr(import_pool, "FILES_BYTES", 1)
    return started


def import_(*paths, parallel: bool, monkeypatch) -> tuple[list, str]:
    """(the stored traces and steps, the error) of one import, then the database emptied again."""
    monkeypatch.setattr(services, "PARALLEL_MIN_BYTES", 0 if parallel else 1 << 60)
    error = ""
    try:
        call_command("import_traces", *map(str, paths), "--batch", "b", stdout=StringIO(), stderr=StringIO())
    except CommandError as failure:
        error = str(failure)
    stored = [
        (
            t.external_id,
            t.content_hash,
            t.task,
            t.metadata,
            t.raw,
            t.source_format,
            t.step_count,
            list(t.steps.order_by("index").values_list(*STEP_FIELDS)),
        )
        for t in Trace.objects.order_by("pk")
    ]
    Batch.objects.all().delete()
    return stored, error


def both_ways(*paths, pools, monkeypatch) -> tuple[list, str]:
    pools.clear()
    in_process = import_(*paths, parallel=False, monkeypatch=monkeypatch)
    assert not pools
    parallel = import_(*paths, parallel=True, monkeypatch=monkeypatch)
    assert pools, "the import did not use worker processes"
    assert parallel == in_process
    return parallel


def native_file(path, n=10, extra=()):
    lines = list(native_lines(synthetic_traces(n, steps=5, seed=3)))
    path.write_text("".join(f"{line}\n" for line in [*lines, *extra]), encoding="utf-8")
    return path


def test_workers_store_what_one_process_stores(postgres, pools, monkeypatch, tmp_path):
    odd = {
        "id": "odd\tid",
        "task": AWKWARD,
        "metadata": {"note": AWKWARD},
        "steps": [
            {"agent": "a\tb", "content": AWKWARD, "tool_args": {"k": AWKWARD}, "kind": "tool_call"},
            {"kind": "tool_result", "content": "", "parent": 0, "tokens": 3},
        ],
    }
    path = native_file(tmp_path / "runs.jsonl", extra=["", json.dumps(odd, ensure_ascii=False)])
    stored, error = both_ways(path, pools=pools, monkeypatch=monkeypatch)
    assert not error and len(stored) == 11
    assert stored[-1][7][0][6] == AWKWARD


def test_an_error_in_a_late_piece_names_its_line_and_nothing_is_stored(
    postgres, pools, monkeypatch, tmp_path
):
    path = native_file(tmp_path / "runs.jsonl", extra=["", '{"id": "x", "steps": [{"kind": "telepathy"}]}'])
    stored, error = both_ways(path, pools=pools, monkeypatch=monkeypatch)
    assert "runs.jsonl, line 12, field 'steps[0].kind'" in error
    assert stored == [] and not Step.objects.exists()


def test_an_id_repeated_in_another_piece_is_found(postgres, pools, monkeypatch, tmp_path):
    first = next(native_lines(synthetic_traces(1, steps=5, seed=3)))
    path = native_file(tmp_path / "runs.jsonl", extra=[first])
    stored, error = both_ways(path, pools=pools, monkeypatch=monkeypatch)
    assert "line 11: duplicate trace id" in error and "repeats the id of line 1" in error
    assert stored == []


def test_chats_without_ids_are_named_by_their_place_in_the_whole_file(postgres, pools, monkeypatch, tmp_path):
    path = tmp_path / "chats.jsonl"
    write_openai_chat_jsonl(synthetic_traces(8, steps=4, seed=4), path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        del line["id"]
    path.write_text("".join(json.dumps(line) + "\n\n" for line in lines))
    stored, error = both_ways(path, pools=pools, monkeypatch=monkeypatch)
    assert not error and [t[0] for t in stored] == [f"chats-{n}" for n in range(1, 9)]


def test_a_folder_of_files_and_a_bad_one_report_every_error(postgres, pools, monkeypatch, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    for i, line in enumerate(native_lines(synthetic_traces(6, steps=3, seed=5))):
        (folder / f"t{i}.jsonl").write_text(line + "\n")
    (folder / "t2-again.jsonl").write_text((folder / "t2.jsonl").read_text())
    stored, error = both_ways(folder, pools=pools, monkeypatch=monkeypatch)
    assert not error and len(stored) == 6
    (folder / "t3.jsonl").write_text('{"id": "x", "steps": [{"kind": 3}]}\n')
    (folder / "t5.jsonl").write_text("")
    stored, error = both_ways(folder, pools=pools, monkeypatch=monkeypatch)
    assert "t3.jsonl, line 1, field 'steps[0].kind'" in error and "t5.jsonl: the file is empty" in error
    assert stored == []


def test_a_large_file_that_cannot_be_cut_is_read_in_the_importing_process(
    postgres, pools, monkeypatch, tmp_path
):
    monkeypatch.setattr(import_pool, "PIECE_BYTES", 0)  # every file is looked at first
    monkeypatch.setattr(import_pool, "WHOLE_FILE_MAX", 0)  # and none goes to a worker whole
    lines = tmp_path / "chats.jsonl"
    write_openai_chat_jsonl(synthetic_traces(5, steps=4, seed=4), lines)
    array = tmp_path / "array.json"
    array.write_text(json.dumps([json.loads(line) for line in lines.read_text().splitlines()]))
    lines.unlink()
    native = native_file(tmp_path / "runs.jsonl", n=4)
    stored, error = both_ways(array, native, pools=pools, monkeypatch=monkeypatch)
    assert not error and len(stored) == 9
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    stored, error = both_ways(array, tmp_path / "notes.json", pools=pools, monkeypatch=monkeypatch)
    assert "notes.json: unknown format" in error and stored == []


def test_a_line_nested_too_deep_in_a_piece_is_named(postgres, pools, monkeypatch, tmp_path):
    deep = '{"id": "deep", "steps": [], "metadata": ' + '{"a": ' * 150 + "1" + "}" * 150 + "}"
    path = native_file(tmp_path / "runs.jsonl", extra=[deep])
    stored, error = both_ways(path, pools=pools, monkeypatch=monkeypatch)
    assert "runs.jsonl, line 11: nested deeper than 100 levels" in error and stored == []


def test_whole_files_shorter_and_longer_than_their_head_are_read_whole(
    postgres, pools, monkeypatch, tmp_path
):
    # A file shorter than its head is parsed from the head already read; a longer one from the disk.
    folder = tmp_path / "runs"
    folder.mkdir()
    short, long = native_lines(synthetic_traces(2, steps=3, seed=6))
    (folder / "a-short.jsonl").write_text(short + "\n")
    record = json.loads(long)
    record["steps"][0]["content"] = "x" * (2 * HEAD_SIZE) + "THE-END"
    (folder / "b-long.jsonl").write_text(json.dumps(record) + "\n")
    stored, error = both_ways(folder, pools=pools, monkeypatch=monkeypatch)
    assert not error and len(stored) == 2
    assert stored[1][7][0][6].endswith("THE-END")


def test_progress_counts_every_byte_and_the_traces_stored(postgres, pools, monkeypatch, tmp_path):
    monkeypatch.setattr(services, "PARALLEL_MIN_BYTES", 0)
    folder = tmp_path / "runs"
    folder.mkdir()
    for i, line in enumerate(native_lines(synthetic_traces(6, steps=3, seed=7))):
        (folder / f"t{i}.jsonl").write_text(line + "\n")
    files = sorted(folder.iterdir())
    reports: list[tuple[int, int]] = []
    result = services.do_import_files(
        [(path, path.name) for path in files],
        batch_name="b",
        progress=lambda done, traces: reports.append((done, traces)),
    )
    assert pools
    assert result.traces == sum(f.traces for f in result.files) == 6
    assert reports[-1][0] == sum(path.stat().st_size for path in files)
    assert reports == sorted(reports) and all(traces <= 6 for _, traces in reports)


def test_the_pool_waits_for_its_workers_and_its_own_changes_not_for_unread_results():
    """multiprocessing's pool also woke its worker-handling thread whenever the results pipe was readable,
    which it does not read: it spun while results waited, taking CPU from the import (issue 14)."""
    pool = import_pool.start(1)
    try:
        assert pool._get_sentinels() == [pool._change_notifier._reader]
        assert pool.apply_async(sum, ([1, 2],)).get(timeout=60) == 3
        pool.close()
        pool.join()  # closing still wakes the handler, which lets the worker go
    finally:
        pool.terminate()
