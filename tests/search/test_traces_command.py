"""`manage.py traces`: the trace list's filters as flags; --json prints exactly the API's body."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command


def run(*args: str) -> str:
    out = StringIO()
    call_command("traces", "demo-project", *args, stdout=out)
    return out.getvalue()


def test_json_equals_the_api_body(client, owner, world):
    client.force_login(owner)
    query = "q=kubectl&model=gpt-4o&page_size=1&ordering=external_id"
    api = client.get(f"/api/projects/demo-project/traces/?{query}").json()
    cli = json.loads(
        run(
            "--q",
            "kubectl",
            "--model",
            "gpt-4o",
            "--page-size",
            "1",
            "--ordering",
            "external_id",
            "--json",
            "--base-url",
            "http://testserver",
        )
    )
    assert cli == api and cli["count"] == 1 and cli["results"][0]["matches"][0]["index"] == 3


def test_json_equals_the_api_body_on_a_later_page(client, owner, world):
    client.force_login(owner)
    api = client.get("/api/projects/demo-project/traces/?state=complete&page_size=1&page=2").json()
    cli = json.loads(
        run(
            "--state",
            "complete",
            "--page-size",
            "1",
            "--page",
            "2",
            "--json",
            "--base-url",
            "http://testserver",
        )
    )
    assert cli == api and api["previous"] and not api["next"]


def test_table_lists_traces_with_their_matching_steps(world):
    out = run("--gold-mode", "FM-1.3", "--meta", "split:test", "--q", "kubectl")
    assert out.startswith("1 trace(s)")
    assert "sre-1" in out and "step 3:" in out


def test_errors_name_the_flag(world):
    with pytest.raises(CommandError, match="--score-min"):
        run("--score-min", "lots")


def test_as_a_member_blind_holds_apply(world, annotator_a):
    with pytest.raises(CommandError, match="gold_mode"):
        run("--gold-mode", "FM-1.3", "--user", annotator_a.username)
    assert run("--model", "gpt-4o", "--user", annotator_a.username).startswith("2 trace(s)")
