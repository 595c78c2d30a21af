"""Hostile files end as clear errors naming file and record, in bounded memory, and never take the process down.

The audit's cases: JSON nested 100,000 levels deep (200 KB; ijson's memory grew with the square of the
depth), the same as JSONL (RecursionError), a .eval zip that inflates a thousand times, records too large
for a row, and one trace id used twice in a file.
"""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from traces.importers import guarded, inspect_ai, iter_records, limits, native, openai_chat, who_and_when
from traces.importers._writers import write_inspect_eval
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import native_lines, synthetic_traces

DEPTH = 100_000
MB = 1024 * 1024


def deep(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


def chat(content: str = '"hi"', ident: str = "c") -> str:
    return f'{{"id": "{ident}", "messages": [{{"role": "user", "content": {content}}}]}}'


def peak_of(action) -> tuple[BaseException | None, int]:
    """Run ``action``; return what it raised and the peak of Python allocations meanwhile."""
    tracemalloc.start()
    try:
        action()
    except Exception as error:
        return error, tracemalloc.get_traced_memory()[1]
    else:
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_json_nested_100000_levels_deep_fails_fast_naming_the_record_in_bounded_memory(tmp_path: Path):
    path = tmp_path / "deep.json"
    path.write_text("[" + ",".join([chat(ident="a"), chat(ident="b"), chat(deep(), ident="c")]) + "]")
    assert path.stat().st_size < 250_000  # the audit's 200 KB file
    error, peak = peak_of(lambda: list(iter_records(path, "openai_chat")))
    assert isinstance(error, TraceFormatError)
    assert str(error) == f"{path}, record 3: nested deeper than 100 levels (limit IMPORT_MAX_DEPTH)"
    assert peak < 8 * MB, peak  # was 22.7 GB when the kernel killed it


def test_jsonl_nested_100000_levels_deep_names_the_line_instead_of_a_recursion_error(tmp_path: Path):
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([chat(ident="a"), chat(ident="b"), chat(deep(), ident="c")]) + "\n")
    error, peak = peak_of(lambda: list(iter_records(path, "openai_chat")))
    assert isinstance(error, TraceFormatError), repr(error)
    assert str(error) == f"{path}, line 3: nested deeper than 100 levels (limit IMPORT_MAX_DEPTH)"
    assert peak < 8 * MB, peak


def test_nested_paths_in_one_document_name_the_sample(tmp_path: Path):
    # Inspect's JSON log: samples found by path inside one big object.
    sample = '{"id": %s, "epoch": 1, "messages": [], "metadata": %s}'
    doc = (
        '{"version": 2, "status": "success", "eval": {"task": "t", "task_id": "x", "model": "m"}, '
        f'"samples": [{sample % (1, "{}")}, {sample % (2, deep())}]}}'
    )
    with pytest.raises(TraceFormatError, match=r"^log\.json, record 2: nested deeper than 100 levels"):
        list(inspect_ai.parse(io.BytesIO(doc.encode()), "log.json"))


def test_a_depth_within_the_limit_still_imports():
    nested = deep(90)
    (record,) = openai_chat.parse(
        io.BytesIO(f"[{chat(json.dumps({'k': json.loads(nested)}))}]".encode()), "ok.json"
    )
    assert record.external_id == "c"


def test_a_string_longer_than_the_value_limit_names_the_record():
    long_text = json.dumps("x\\" * 600)  # escapes count as bytes: 1,800 bytes of string
    data = f"[{chat(ident='a')}, {chat(long_text, ident='b')}]".encode()
    with limits.override(max_value_bytes=1000):
        with pytest.raises(
            TraceFormatError, match=r"^v\.json, record 2: a single value is longer than 1000 bytes"
        ):
            list(openai_chat.parse(io.BytesIO(data), "v.json"))
        # just under the limit goes through
        ok = f"[{chat(json.dumps('y' * 990), ident='a')}]".encode()
        assert [r.external_id for r in openai_chat.parse(io.BytesIO(ok), "v.json")] == ["a"]


@pytest.mark.parametrize("piece", [1, 2, 7, 4096])
def test_the_scanner_measures_the_same_whatever_the_read_sizes(piece: int):
    # Brackets and escaped quotes inside strings are text, not structure.
    text = json.dumps({"a": [[["[[[[", {"b": 'say \\"{{{{\\" and \\\\'}]]], "c": "]]]]"}).encode()
    for limit, fits in ((5, True), (4, False)):  # {, [, [, [, {: five levels
        scanner = limits.JsonScanner(limits.Limits(max_depth=limit))
        for start in range(0, len(text), piece):
            scanner.feed(text[start : start + piece])
        assert (scanner.error is None) is fits, (limit, scanner.error)


def test_jsonl_line_longer_than_a_record_is_refused_without_reading_it_whole():
    data = (chat(ident="a") + "\n" + chat(json.dumps("z" * 5000), ident="b") + "\n").encode()
    message = r"^r\.jsonl, line 2: record is larger than 2000 bytes"
    with limits.override(max_record_bytes=2000), pytest.raises(TraceFormatError, match=message):
        list(openai_chat.parse(io.BytesIO(data), "r.jsonl"))


def test_a_single_record_file_larger_than_a_record_is_refused():
    data = json.dumps({"history": [{"content": "w" * 5000}], "instance_id": "i"}).encode()
    message = r"^one\.json, record 1: record is larger than 2000 bytes"
    with limits.override(max_record_bytes=2000), pytest.raises(TraceFormatError, match=message):
        list(who_and_when.parse(io.BytesIO(data), "one.json"))


def bomb(path: Path, inflated: int) -> Path:
    write_inspect_eval(list(synthetic_traces(2, steps=2)), path)
    sample = json.dumps({"id": 99, "epoch": 1, "messages": [], "metadata": {"pad": " " * inflated}})
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("samples/99_epoch_1.json", sample)
    return path


def test_a_zip_bomb_is_refused_without_inflating_it(tmp_path: Path):
    path = bomb(tmp_path / "bomb.eval", 20 * MB)
    assert path.stat().st_size < 200_000
    error, peak = peak_of(lambda: list(iter_records(path, "inspect_ai")))
    assert isinstance(error, TraceFormatError), repr(error)
    assert str(error).startswith(
        f"{path}:samples/99_epoch_1.json, record 3: member inflates more than 200 times"
    )
    assert peak < 10 * MB, peak  # the member alone inflates to 20 MB


def test_an_archive_inflating_past_its_total_is_refused(tmp_path: Path):
    path = tmp_path / "big.eval"
    write_inspect_eval(list(synthetic_traces(6, steps=3)), path)
    with limits.override(max_archive_bytes=2000), pytest.raises(TraceFormatError) as error:
        list(iter_records(path, "inspect_ai"))
    assert "the archive inflates to more than" in str(error.value) and "IMPORT_MAX_ARCHIVE_MB" in str(
        error.value
    )


def test_a_sane_eval_archive_still_imports(tmp_path: Path):
    path = tmp_path / "ok.eval"
    write_inspect_eval(list(synthetic_traces(3, steps=3)), path)
    assert len(list(guarded(iter_records(path, "inspect_ai"), "ok.eval"))) == 3


def test_a_trace_id_used_twice_in_a_jsonl_file_names_both_lines():
    lines = list(native_lines(synthetic_traces(3, steps=2)))
    body = "\n".join([lines[0], "", lines[1], lines[2], lines[1]]) + "\n"
    records = guarded(native.parse(io.BytesIO(body.encode()), "dup.jsonl"), "dup.jsonl")
    with pytest.raises(TraceFormatError) as error:
        list(records)
    ident = json.loads(lines[1])["id"]
    assert str(error.value) == (
        f"dup.jsonl, line 5: duplicate trace id {ident!r}: line 5 repeats the id of line 3; "
        "every trace in a file needs its own id"
    )


def test_a_trace_id_used_twice_in_a_json_array_names_both_records():
    data = f"[{chat(ident='a')}, {chat(ident='b')}, {chat(json.dumps('other'), ident='a')}]".encode()
    with pytest.raises(TraceFormatError, match=r"^d\.json, record 3: .*record 3 repeats the id of record 1"):
        list(guarded(openai_chat.parse(io.BytesIO(data), "d.json"), "d.json"))


def test_a_record_too_large_for_a_row_is_refused_before_the_database():
    data = f"[{chat(ident='a')}, {chat(json.dumps('q' * 3000), ident='b')}]".encode()
    with limits.override(max_record_bytes=2000), pytest.raises(TraceFormatError) as error:
        list(guarded(openai_chat.parse(io.BytesIO(data), "big.json"), "big.json"))
    assert str(error.value).startswith("big.json, record 2: record is larger than 2000 bytes")


def test_deeply_nested_tool_arguments_stay_text_instead_of_crashing():
    arguments = deep(5000)  # JSON inside a string: json.loads would recurse 5,000 times
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": arguments}}],
    }
    data = json.dumps([{"id": "x", "messages": [message]}]).encode()
    (record,) = guarded(openai_chat.parse(io.BytesIO(data), "tools.json"), "tools.json")
    assert record.steps[0].tool_args == arguments


def test_an_otlp_export_with_a_deeply_nested_attribute_names_the_span(tmp_path: Path):
    from traces.importers._writers import otel_document

    doc = otel_document(list(synthetic_traces(1, steps=3)))
    text = json.dumps(doc)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    marker = json.dumps(spans[2]["attributes"][0])
    path = tmp_path / "otlp.json"
    nested = '{"key": "deep", "value": {"arrayValue": ' + deep() + "}}"
    path.write_text(text.replace(marker, nested + ", " + marker, 1))
    with pytest.raises(TraceFormatError, match=r"otlp\.json, record 3: nested deeper than 100 levels"):
        list(iter_records(path, "otel"))


def test_dataset_rows_go_through_the_same_gates(tmp_path: Path):
    from traces.importers.hf_dataset import parse_source

    datasets = pytest.importorskip("datasets")
    rows = [
        {"trace_id": "r1", "messages": json.dumps([{"role": "user", "content": "hi"}])},
        {"trace_id": "r2", "messages": deep(5000)},  # JSON text nested 5,000 deep in a column: kept as text
        {"trace_id": "r1", "messages": json.dumps([{"role": "user", "content": "again"}])},
    ]
    folder = tmp_path / "ds"
    (folder / "data").mkdir(parents=True)
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "data" / "train-00000.parquet"))
    records = guarded(parse_source(str(folder)), "ds")
    first, second = next(records), next(records)
    assert first.external_id == "r1" and second.steps[0].content == deep(5000)
    with pytest.raises(TraceFormatError, match=r"^ds, record 3: duplicate trace id 'r1': record 3 repeats"):
        next(records)


def test_detecting_the_format_of_a_deeply_nested_file_does_not_crash(tmp_path: Path):
    from traces.importers import detect_format

    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "a", "steps": ' + deep(20_000) + "}\n")  # the first line fits in the sniffed head
    assert detect_format(path) == "native"
    with pytest.raises(TraceFormatError, match=r"line 1: nested deeper than 100 levels"):
        list(iter_records(path))


def _random_json(rng, depth: int) -> object:
    """A JSON value nested up to `depth`, with strings full of brackets, quotes and backslashes."""
    alphabet = ['"', "\\", "[", "]", "{", "}", "a", " ", "\n", "é"]
    kind = rng.random()
    if depth <= 0 or kind < 0.3:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind < 0.4:
        return rng.choice([1, -2.5, True, None, ""])
    if kind < 0.7:
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {_random_json(rng, 0): _random_json(rng, depth - 1) for _ in range(rng.randrange(4))}


def _scanner_within(data: bytes, max_depth: int) -> bool:
    scanner = limits.JsonScanner(limits.Limits(max_depth=max_depth))
    return scanner.feed(data) == len(data) and scanner.error is None and not scanner.in_string


@pytest.mark.parametrize("seed", range(20))
def test_the_skeleton_check_of_a_piece_agrees_with_the_scanner(seed: int):
    """The import workers check a piece's nesting from its skeleton: it must accept exactly the valid
    documents the scanner accepts, and never accept what the scanner refuses (cut or corrupted bytes
    included; refusing those is safe, each line is then scanned on its own)."""
    import random

    rng = random.Random(seed)
    for _ in range(40):
        max_depth = rng.randrange(1, 8)
        lines = [
            json.dumps(_random_json(rng, rng.randrange(10)), ensure_ascii=rng.random() < 0.5)
            for _ in range(3)
        ]
        data = ("\n".join(lines) + "\n").encode()
        assert limits._nesting_within(data, max_depth) == _scanner_within(data, max_depth), data
        cut = data[: rng.randrange(len(data) + 1)]
        if rng.random() < 0.5:
            at = rng.randrange(len(cut) + 1)
            cut = cut[:at] + rng.choice([b'"', b"\\", b"[", b"}", b'\\"']) + cut[at:]
        if limits._nesting_within(cut, max_depth):
            assert _scanner_within(cut, max_depth), cut


def test_the_skeleton_check_counts_nesting_one_level_per_pass():
    assert limits._nesting_within(b'{"a": [{"b": [1]}]}\n', 4)
    assert not limits._nesting_within(b'{"a": [{"b": [1]}]}\n', 3)
    assert limits._nesting_within(b'{"a": "[[[[[[", "b": "\\"[[[["}\n', 1)
    assert not limits._nesting_within(b'{"a": "open\n', 5)  # a string left open
    assert not limits._nesting_within(b"[[[]]\n", 5)  # unbalanced: for the scanner to judge
    assert limits.within(b"[" * 100 + b"]" * 100 + b"\n")
    assert not limits.within(b"[" * 101 + b"]" * 101 + b"\n")
