"""Inspect AI logs: the real JSON log and a synthetic .eval ZIP built here."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from tests.importers.conftest import need, truncate
from traces.importers import detect_format, inspect_ai, iter_records, limits
from traces.importers.records import TraceFormatError
from traces.importers.synthetic import synthetic_traces, write_inspect_eval

LOG = "inspect_ai/2025-05-12T20-27-36-04-00_browser.json"


def test_json_log(datasets_dir: Path):
    path = need(datasets_dir / LOG)
    assert detect_format(path) == "inspect_ai"
    (rec,) = iter_records(path)
    assert rec.external_id == "1-e1"
    assert rec.model == "openai/gpt-4o-mini" and rec.benchmark == "browser"
    # PROVENANCE.md: score "includes" = C.
    assert rec.outcome == "success" and rec.score == 1.0
    # 10 messages: user, 4 x (assistant tool call + tool result), final assistant answer.
    assert [s.kind for s in rec.steps] == ["message"] + ["tool_call", "tool_result"] * 4 + ["message"]
    assert [s.tool_name for s in rec.steps if s.kind == "tool_call"] == ["web_browser_go"] + [
        "web_browser_click"
    ] * 3
    assert rec.steps[1].tool_args == {"url": "https://www.aisi.gov.uk/"}
    assert all(rec.steps[i].parent == i - 1 for i in (2, 4, 6, 8))
    assert rec.task.startswith("Use the web browser tool")


def test_json_log_truncated(datasets_dir: Path, tmp_path: Path):
    cut = truncate(need(datasets_dir / LOG), tmp_path / "log.json")
    with pytest.raises(TraceFormatError, match=r"log\.json, record 1: malformed JSON: truncated"):
        list(iter_records(cut, "inspect_ai"))


def test_eval_zip(tmp_path: Path):
    recs = list(synthetic_traces(3, steps=9, seed=2))
    path = tmp_path / "run.eval"
    assert write_inspect_eval(recs, path, epochs=2) == 6
    assert detect_format(path) == "inspect_ai"
    parsed = list(iter_records(path))
    assert [p.external_id for p in parsed] == ["1-e1", "1-e2", "2-e1", "2-e2", "3-e1", "3-e2"]
    assert {p.model for p in parsed} == {"openai/gpt-4o"} and {p.benchmark for p in parsed} == {"synthetic"}
    for orig, got in zip([r for r in recs for _ in range(2)], parsed, strict=True):
        want = {"success": "success", "failure": "failure"}.get(orig.outcome, "unknown")
        assert got.outcome == want
        assert sum(s.kind == "tool_call" for s in got.steps) == sum(s.kind == "tool_call" for s in orig.steps)
    # The synthetic sample puts a reasoning block in the first assistant turn.
    assert any(s.kind == "reasoning" and s.content == "Let me think first." for s in parsed[0].steps)


def test_eval_zip_from_a_non_seekable_stream(tmp_path: Path):
    path = tmp_path / "run.eval"
    write_inspect_eval(synthetic_traces(2, steps=4), path)

    class OneWay(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._b = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:
            data = self._b.read(len(buf))
            buf[: len(data)] = data
            return len(data)

    assert len(list(inspect_ai.parse(io.BufferedReader(OneWay(path.read_bytes())), "run.eval"))) == 2


def test_eval_zip_errors(tmp_path: Path):
    path = tmp_path / "bad.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", json.dumps({"eval": {"model": "m", "task": "t"}}))
        zf.writestr("samples/1_epoch_1.json", '{"id": 1, "epoch": 1, "messages": [')
    with pytest.raises(
        TraceFormatError, match=r"bad\.eval:samples/1_epoch_1\.json, record 1: malformed JSON"
    ):
        list(iter_records(path))
    truncated = tmp_path / "cut.eval"
    write_inspect_eval(synthetic_traces(5, steps=6), truncated)
    data = truncated.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"cut\.eval.*not a valid \.eval archive"):
        list(iter_records(truncated, "inspect_ai"))


@pytest.mark.parametrize(
    ("value", "outcome", "score"),
    [
        ("C", "success", 1.0),
        ("I", "failure", 0.0),
        (1, "success", 1.0),
        (True, "success", 1.0),
        (0, "failure", 0.0),
        ("P", "unknown", 0.5),
        (0.25, "unknown", 0.25),
        ({"acc": "C"}, "success", 1.0),
    ],
)
def test_score_mapping(value, outcome: str, score: float):
    assert inspect_ai.score_outcome({"s": {"value": value}}) == (outcome, score)


def zstd_eval(path: Path, members: dict[str, bytes], *, crc_of: dict[str, int] | None = None) -> Path:
    """An .eval archive as inspect-ai writes it by default: every member compressed with zstd (method 93),
    written byte by byte here because zipfile writes that method only from Python 3.14."""
    import struct
    import zlib

    import zstandard

    out, directory = bytearray(), bytearray()
    for name, data in members.items():
        packed = zstandard.ZstdCompressor(level=3).compress(data)
        crc = (crc_of or {}).get(name, zlib.crc32(data))
        encoded = name.encode()
        sizes = (crc, len(packed), len(data), len(encoded), 0)
        offset = len(out)
        out += struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 63, 0, 0, 93, 0, 0x21, *sizes) + encoded + packed
        directory += (
            struct.pack(
                "<4s4B4HL2L5H2L",
                b"PK\x01\x02",
                63,
                3,
                63,
                0,
                0,
                93,
                0,
                0x21,
                *sizes,
                0,
                0,
                0,
                0o100644 << 16,
                offset,
            )
            + encoded
        )
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), len(out), 0
    )
    path.write_bytes(bytes(out + directory + end))
    return path


def eval_members(samples: int) -> dict[str, bytes]:
    from traces.importers._writers import inspect_sample

    recs = list(synthetic_traces(samples, steps=5, seed=4))
    members = {
        "header.json": json.dumps(
            {
                "version": 2,
                "status": "success",
                "eval": {"eval_id": "z", "task": "zstd", "model": "openai/gpt-4o"},
            }
        ).encode()
    }
    for i, rec in enumerate(recs, start=1):
        members[f"samples/{i}_epoch_1.json"] = json.dumps(inspect_sample(rec, i)).encode()
    return members


def test_eval_zip_with_zstd_members_as_inspect_writes_by_default(tmp_path: Path):
    path = zstd_eval(tmp_path / "default.eval", eval_members(3))
    assert zipfile.ZipFile(path).getinfo("header.json").compress_type == inspect_ai.ZIP_ZSTANDARD
    assert detect_format(path) == "inspect_ai"
    parsed = list(iter_records(path))
    assert [p.external_id for p in parsed] == ["1-e1", "2-e1", "3-e1"]
    assert {p.benchmark for p in parsed} == {"zstd"} and {p.model for p in parsed} == {"openai/gpt-4o"}
    assert all(any(s.kind == "tool_call" for s in p.steps) for p in parsed)


def test_a_zstd_member_with_a_wrong_crc_is_refused(tmp_path: Path):
    members = eval_members(1)
    path = zstd_eval(tmp_path / "bad.eval", members, crc_of={"samples/1_epoch_1.json": 1234})
    with pytest.raises(
        TraceFormatError, match=r"bad\.eval, record 1: cannot read samples/1_epoch_1\.json \(Bad CRC"
    ):
        list(iter_records(path))


def test_a_zstd_bomb_is_refused_like_a_deflate_one(tmp_path: Path):
    members = eval_members(1)
    pad = json.dumps({"id": 99, "epoch": 1, "messages": [], "metadata": {"pad": " " * (20 * 1024 * 1024)}})
    members["samples/99_epoch_1.json"] = pad.encode()
    path = zstd_eval(tmp_path / "bomb.eval", members)
    assert path.stat().st_size < 100_000
    with pytest.raises(TraceFormatError) as error:
        list(iter_records(path))
    assert str(error.value).startswith(
        f"{path}:samples/99_epoch_1.json, record 2: member inflates more than 200 times"
    )
    with (
        limits.override(max_archive_bytes=2000),
        pytest.raises(TraceFormatError, match="IMPORT_MAX_ARCHIVE_MB"),
    ):
        list(iter_records(zstd_eval(tmp_path / "many.eval", eval_members(4))))
