"""The API keeps its published contract: every operation answers bodies that match the OpenAPI schema.

Every response below goes through tests/api/openapi.py (installed for every test by tests/conftest.py),
which checks status, body and the absence of undocumented keys. The walk covers every operation of the
schema, with the successes and the documented errors a client meets; `test_every_operation_is_exercised`
fails when a new endpoint appears without a call here.

The world and the token clients are in tests/api/contract_world.py (test_schemathesis.py uses them too); the
single requests that once answered otherwise than the contract says are in test_contract_errors.py.
"""

from __future__ import annotations

import json

from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotator.models import LLMConfig, Membership, Project
from annotator.services.adjudication import do_check_trace
from tests.api import openapi
from tests.api.contract_world import _as, _small_jobs, world  # noqa: F401 (the fixtures)
from tests.factories import PASSWORD, BatchFactory, UserFactory
from tests.labels import project_trace, submit
from traces.importers.synthetic import native_lines, synthetic_traces


def _second_rater(project):
    """A second annotator for a gold trace of the contract walk (Ben's slots are the world's)."""
    user = UserFactory(username="gil-gold")
    Membership.objects.create(project=project, user=user, role="annotator")
    return user


def _labels(*records) -> SimpleUploadedFile:
    body = "".join(json.dumps(record) + "\n" for record in records)
    return SimpleUploadedFile("labels.jsonl", body.encode(), content_type="application/jsonl")


def _upload() -> SimpleUploadedFile:
    body = "".join(line + "\n" for line in native_lines(synthetic_traces(2, steps=3, seed=5)))
    return SimpleUploadedFile("run.jsonl", body.encode(), content_type="application/jsonl")


def test_every_operation_answers_its_documented_shapes(
    world,  # noqa: F811
    project,
    owner,
    annotator_a,
    annotator_b,
    adjudicator,
    outsider,
    django_capture_on_commit_callbacks,
):
    openapi.COVERED.clear()
    cache.clear()  # rate limits (token creation) count per address, in the shared cache: start from none
    w = world
    api = f"/api/projects/{w['slug']}"
    item, trace, slot, done, run = w["item"], w["trace"], w["slot"], w["done"], w["run"]
    o, a, j, x = _as(owner), _as(annotator_a), _as(adjudicator), _as(outsider)

    def expect(client, method, url, status, body=None, **extra):
        response = getattr(client, method)(url, body, format=extra.pop("format", "json"), **extra)
        assert response.status_code == status, (method, url, response.status_code, response.content[:500])
        return response

    # Credentials, projects, taxonomies.
    expect(APIClient(), "post", "/api/token/", 200, {"username": "olivia-owner", "password": PASSWORD})
    expect(APIClient(), "post", "/api/token/", 400, {"username": "olivia-owner", "password": "nope"})
    mine = expect(o, "get", "/api/tokens/", 200).json()
    expect(x, "delete", f"/api/tokens/{mine[0]['id']}/", 404)
    expect(o, "delete", f"/api/tokens/{mine[0]['id']}/", 204)
    expect(APIClient(), "get", "/api/projects/", 401)
    expect(o, "get", "/api/projects/", 200)
    expect(o, "get", f"/api/projects/{w['slug']}/", 200)
    expect(x, "get", f"/api/projects/{w['slug']}/", 404)
    expect(a, "get", "/api/taxonomies/", 200)
    expect(a, "get", "/api/taxonomies/mast/", 200)

    # Traces, steps, search: annotators see their own traces only.
    expect(o, "get", f"{api}/traces/", 200)
    expect(o, "get", f"{api}/traces/{trace.pk}/", 200)
    expect(o, "get", f"{api}/traces/{trace.pk}/steps/?kind=message", 200)
    expect(o, "get", f"{api}/traces/{trace.pk}/steps/?kind=nonsense", 400)
    expect(o, "get", f"{api}/traces/{trace.pk}/search/?q=step", 200)
    expect(o, "get", f"{api}/traces/{trace.pk}/search/", 400)
    expect(x, "get", f"{api}/traces/{trace.pk}/", 404)
    expect(o, "get", f"{api}/traces/{trace.pk}/annotations/", 200)
    expect(a, "get", f"{api}/traces/{trace.pk}/annotations/", 403)

    # Saved views: save, list with counts, apply to the trace list, rename, refuse, delete.
    saved = expect(o, "post", f"{api}/views/", 201, {"name": "Failures", "params": {"outcome": "failure"}})
    view_id = saved.json()["id"]
    expect(o, "post", f"{api}/views/", 400, {"name": "failures", "params": {}})
    expect(a, "post", f"{api}/views/", 403, {"name": "Mine", "params": {}})
    expect(a, "get", f"{api}/views/", 200)
    expect(o, "get", f"{api}/views/{view_id}/", 200)
    expect(o, "get", f"{api}/traces/?view={view_id}", 200)
    expect(o, "patch", f"{api}/views/{view_id}/", 200, {"name": "All failures"})
    expect(o, "patch", f"{api}/views/{view_id}/", 400, {"params": {"outcome": "maybe"}})
    expect(a, "delete", f"{api}/views/{view_id}/", 403)
    expect(o, "delete", f"{api}/views/{view_id}/", 204)
    expect(o, "get", f"{api}/views/{view_id}/", 404)

    # My assignments and my annotation: read, draft, stale draft, submit, skip, claim.
    expect(a, "get", f"{api}/assignments/", 200)
    expect(a, "get", f"{api}/assignments/{slot.pk}/annotation/", 200)
    draft = {"version": 0, "labels": [{"mode": "FM-1.1", "evidence": [{"step": 1}]}]}
    expect(a, "put", f"{api}/assignments/{slot.pk}/annotation/", 200, draft)
    expect(a, "put", f"{api}/assignments/{slot.pk}/annotation/", 409, draft)
    expect(a, "put", f"{api}/assignments/{slot.pk}/annotation/", 400, {"version": 1, "labels": [{}]})
    expect(a, "post", f"{api}/assignments/{slot.pk}/submit/", 200, {"version": 1, "no_failure": True})
    expect(a, "post", f"{api}/assignments/{slot.pk}/skip/", 400, {})
    expect(a, "post", f"{api}/assignments/next/", 204)
    expect(a, "get", f"{api}/assignments/{done.pk}/llm-labels/", 200)

    # Agreement: the GET answers the report as the page does; a bad filter is 400.
    expect(j, "get", f"{api}/agreement/", 200)
    expect(j, "post", f"{api}/agreement/", 200, {})
    expect(j, "get", f"{api}/agreement/?batch=nope", 400)
    expect(a, "get", f"{api}/agreement/", 403)

    # Calibration rounds: list, open, refuse, close.
    fresh = project_trace(Project.objects.get(slug=w["slug"]))
    expect(j, "get", f"{api}/rounds/", 200)
    opened = {"name": "R1", "annotators": ["ana-annotator", "ben-annotator"], "traces": [fresh.pk]}
    round_id = expect(o, "post", f"{api}/rounds/", 201, opened).json()["id"]
    expect(o, "post", f"{api}/rounds/", 400, {"name": "R2", "annotators": ["ana-annotator"]})
    expect(o, "post", f"{api}/rounds/", 400, {**opened, "name": "R3"})
    fresh_project = Project.objects.get(slug=w["slug"])
    submit(fresh_project, fresh, annotator_a, {"FM-1.1": [1], "FM-2.1": [2]})
    submit(fresh_project, fresh, annotator_b, {"FM-1.1": [1]})  # they disagree on FM-2.1
    expect(o, "post", f"{api}/rounds/{round_id}/close/", 200)
    expect(o, "post", f"{api}/rounds/{round_id + 99}/close/", 404)

    # The round's disagreements: read them (its annotators too, now it is closed), settle one.
    threads = expect(a, "get", f"{api}/rounds/{round_id}/threads/", 200).json()
    assert [(t["mode"], [p["chose"] for p in t["positions"]]) for t in threads] == [("FM-2.1", [True, False])]
    thread_url = f"{api}/threads/{threads[0]['id']}/decision/"
    expect(j, "get", f"{api}/rounds/{round_id + 99}/threads/", 404)
    expect(o, "post", thread_url, 400, {"decision": "guideline", "text": ""})
    expect(o, "post", thread_url, 400, {"decision": "nonsense"})
    expect(a, "post", thread_url, 403, {"decision": "annotator_error"})
    decided = expect(j, "post", thread_url, 200, {"decision": "guideline", "text": "Resets only."}).json()
    assert (decided["decision"], decided["decided_by"]) == ("guideline", "ada-adjudicator")
    expect(
        o, "post", f"{api}/threads/{threads[0]['id'] + 999}/decision/", 404, {"decision": "annotator_error"}
    )

    # Adjudication: the queue, claim, read, a stale decision, a decision, reopen.
    expect(j, "get", f"{api}/adjudication/", 200)
    expect(j, "get", f"{api}/adjudication/?status=nonsense", 400)
    claimed = expect(j, "post", f"{api}/adjudication/claim/", 200).json()
    expect(j, "get", f"{api}/adjudication/{item.pk}/", 200)
    version = claimed["item"]["version"]
    decision = {
        "version": version,
        "decisions": [{"mode": "FM-3.1", "choice": "a", "steps": [4], "reason_code": "evidence"}],
    }
    expect(j, "post", f"{api}/adjudication/{item.pk}/decide/", 409, {**decision, "version": version + 5})
    expect(j, "post", f"{api}/adjudication/{item.pk}/decide/", 400, {**decision, "decisions": []})
    expect(j, "post", f"{api}/adjudication/{item.pk}/decide/", 400, {"decisions": "x"})
    decided = expect(j, "post", f"{api}/adjudication/{item.pk}/decide/", 200, decision).json()
    reopen = {"version": decided["item"]["version"], "note": "second look"}
    expect(j, "post", f"{api}/adjudication/{item.pk}/reopen/", 200, reopen)
    expect(j, "post", f"{api}/adjudication/{item.pk}/reopen/", 400, {"version": "x"})
    expect(a, "get", f"{api}/adjudication/", 403)

    # Signatures.
    expect(o, "get", f"{api}/signatures/", 200)
    expect(o, "get", f"{api}/signatures/?source=silver", 400)

    # LLM runs and agreement (owners).
    expect(o, "get", f"{api}/llm-runs/", 200)
    expect(o, "get", f"{api}/llm-runs/{run.pk}/", 200)
    expect(o, "post", f"{api}/llm-runs/", 400, {"batch": "missing"})
    expect(o, "post", f"{api}/llm-runs/", 400, {"batch": w["batch"], "limit": 0})
    expect(o, "post", f"{api}/llm-runs/{run.pk}/resume/", 409)
    expect(o, "get", f"{api}/llm-agreement/", 200)
    expect(a, "get", f"{api}/llm-runs/", 403)

    # LLM triage (owners): the first traces of a signal, and a round from them.
    expect(o, "get", f"{api}/triage/?signal=rare_modes", 200)
    expect(o, "get", f"{api}/triage/?signal=vibes", 400)
    expect(a, "get", f"{api}/triage/", 403)
    expect(o, "post", f"{api}/triage/round/", 400, {"name": "T", "annotators": ["ana-annotator"]})
    triage_round = {
        "name": "T",
        "annotators": ["ana-annotator", "ben-annotator"],
        "signal": "uncertain",
        "n": 5,
    }
    expect(o, "post", f"{api}/triage/round/", 400, triage_round)  # the model's answers rank too few traces

    # Discovery and the codebook gate (owners start; owners and adjudicators read).
    for _ in range(4):
        project_trace(project)
    LLMConfig.objects.filter(project=project).update(model="contract-model")
    if not LLMConfig.objects.filter(project=project).exists():
        LLMConfig.objects.create(project=project, model="contract-model")
    raters = ["m1", "m2", "m3"]
    start = {"scope": "outcome:failure", "raters": raters, "sample": 4, "gate_sample": 2}
    expect(o, "post", f"{api}/discovery/estimate/", 200, start)
    expect(o, "post", f"{api}/discovery/estimate/", 400, {**start, "scope": "batch:missing"})
    found = expect(o, "post", f"{api}/discovery/", 201, start).json()
    expect(o, "post", f"{api}/discovery/", 400, {**start, "raters": raters[:2]})
    expect(a, "post", f"{api}/discovery/", 403, start)
    expect(j, "get", f"{api}/discovery/", 200)
    expect(j, "get", f"{api}/discovery/{found['id']}/", 200)
    expect(o, "post", f"{api}/discovery/{found['id']}/stop/", 200)
    expect(o, "post", f"{api}/discovery/{found['id']}/stop/", 400)
    expect(o, "post", f"{api}/discovery/{found['id']}/resume/", 200)
    expect(o, "post", f"{api}/discovery/{found['id']}/send/", 400)  # not finished
    expect(o, "post", f"{api}/discovery/{found['id']}/round/", 400, {})
    candidate = {
        "op": "add",
        "code": "NEW-1",
        "name": "New",
        "definition": "A new failure.",
        "category": "FC1",
    }
    gate = {"scope": "outcome:failure", "raters": raters, "changes": [candidate], "sample": 3}
    expect(o, "post", f"{api}/discovery/gate/", 201, gate)
    expect(
        o, "post", f"{api}/discovery/gate/", 400, {**gate, "changes": [{"op": "retire", "code": "FM-1.1"}]}
    )

    # Similar traces: the representation's state (owners, adjudicators, annotators), a build and its stop
    # (owners).
    expect(o, "get", f"{api}/similar/", 200)
    with django_capture_on_commit_callbacks(execute=True):
        expect(o, "post", f"{api}/similar/", 202)
    expect(a, "post", f"{api}/similar/", 403)
    expect(o, "post", f"{api}/similar/", 202)  # queued: no worker has it yet
    expect(a, "post", f"{api}/similar/stop/", 403)
    stopped = expect(o, "post", f"{api}/similar/stop/", 200).json()
    assert stopped["building"] is None and stopped["latest"]["status"] == "stopped"
    expect(o, "post", f"{api}/similar/stop/", 409)  # nothing in progress

    # Imports and exports (owners): eager Celery runs the job on commit.
    with django_capture_on_commit_callbacks(execute=True):
        job = expect(
            o, "post", f"{api}/imports/", 202, {"batch": "up", "files": [_upload()]}, format="multipart"
        )
    expect(o, "get", f"{api}/imports/{job.json()['id']}/", 200)
    expect(o, "post", f"{api}/imports/", 400, {"batch": ""}, format="multipart")
    with django_capture_on_commit_callbacks(execute=True):
        export = expect(o, "post", f"{api}/exports/", 202, {"gold_only": False})
    expect(o, "get", f"{api}/exports/{export.json()['id']}/", 200)
    expect(o, "post", f"{api}/exports/", 400, {"real_names": {}})
    expect(o, "post", f"{api}/exports/", 400, {"license": "wtfpl"})
    expect(a, "post", f"{api}/exports/", 403, {})
    expect(o, "get", f"{api}/exports/labels/?kind=labels&format=jsonl", 200)
    expect(o, "get", f"{api}/exports/labels/?kind=votes", 400)
    expect(a, "get", f"{api}/exports/labels/", 403)

    # Project administration: create (staff), settings, batches, members, archive (owners and staff).
    staff = _as(UserFactory(username="stacy-staff", is_staff=True))
    created = {"slug": "contract-new", "name": "New", "taxonomy": "mast", "overlap": 1}
    expect(staff, "post", "/api/projects/", 201, created)
    expect(staff, "post", "/api/projects/", 400, {**created, "taxonomy": "nope"})
    expect(o, "post", "/api/projects/", 403, {**created, "slug": "contract-other"})
    expect(o, "get", f"{api}/settings/", 200)
    expect(o, "patch", f"{api}/settings/", 200, {"guidelines": "Be brief."})
    expect(o, "patch", f"{api}/settings/", 400, {"overlap": 0})
    expect(o, "patch", f"{api}/settings/", 200, {"queue_order": "llm_rare_modes"})
    expect(o, "patch", f"{api}/settings/", 400, {"queue_order": "by-vibes"})
    expect(a, "get", f"{api}/settings/", 403)
    BatchFactory(name="contract-extra", imported_by=owner)
    expect(o, "get", f"{api}/batches/", 200)
    expect(o, "post", f"{api}/batches/", 201, {"batch": "contract-extra"})
    expect(o, "post", f"{api}/batches/", 404, {"batch": "missing"})
    UserFactory(username="carl-contract")
    members = expect(o, "get", f"{api}/members/", 200).json()
    added = expect(o, "post", f"{api}/members/", 201, {"username": "carl-contract", "role": "viewer"}).json()
    expect(o, "post", f"{api}/members/", 400, {"username": "nobody", "role": "viewer"})
    expect(o, "post", f"{api}/members/", 400, {"role": "viewer"})
    carl = added["member"]["id"]
    expect(o, "patch", f"{api}/members/{carl}/", 400, {"role": "boss"})
    expect(o, "patch", f"{api}/members/{carl}/", 200, {"role": "adjudicator"})  # a new membership
    moved = Membership.objects.get(project__slug=w["slug"], user__username="carl-contract", active=True)
    expect(o, "delete", f"{api}/members/{moved.pk}/", 200)
    mine = next(row["id"] for row in members if row["username"] == owner.username)
    expect(o, "delete", f"{api}/members/{mine}/", 400)

    # Labels from files (owners): all or nothing.
    good = _labels({"trace": fresh.external_id, "annotator": "r1", "no_failure": True})
    expect(o, "post", f"{api}/label-imports/", 201, {"files": [good]}, format="multipart")
    bad = _labels({"trace": "no-such-trace", "annotator": "r1", "no_failure": True})
    expect(o, "post", f"{api}/label-imports/", 400, {"files": [bad]}, format="multipart")

    # Outcomes from a results file (owners): all or nothing.
    scores = f"external_id,score\n{fresh.external_id},0.5\n".encode()
    sent = {"file": SimpleUploadedFile("scores.csv", scores), "dry_run": True}
    expect(o, "post", f"{api}/outcomes/", 200, sent, format="multipart")
    unknown = {"file": SimpleUploadedFile("scores.csv", b"external_id,score\nno-such-trace,1\n")}
    expect(o, "post", f"{api}/outcomes/", 400, unknown, format="multipart")

    # LLM settings, key, prompt, dry run, stop (owners).
    expect(o, "get", f"{api}/llm-settings/", 200)
    expect(o, "patch", f"{api}/llm-settings/", 200, {"model": "contract-model", "temperature": 0.5})
    expect(o, "patch", f"{api}/llm-settings/", 400, {"base_url": "http://169.254.169.254/v1"})
    expect(o, "post", f"{api}/llm-settings/key/", 200, {"api_key": "sk-contract-1234"})
    expect(o, "post", f"{api}/llm-settings/key/", 400, {"api_key": "two words"})
    expect(o, "delete", f"{api}/llm-settings/key/", 200)
    expect(o, "get", f"{api}/llm-settings/prompt/", 200)
    expect(o, "put", f"{api}/llm-settings/prompt/", 200, {"instructions": "Label tersely."})
    expect(o, "post", f"{api}/llm-runs/preview/", 200, {"batch": w["batch"]})
    expect(o, "post", f"{api}/llm-runs/preview/", 400, {"batch": "missing"})
    expect(o, "post", f"{api}/llm-runs/{run.pk}/stop/", 409)
    expect(a, "get", f"{api}/llm-settings/", 403)

    # Proposed modes: record one on a trace (its annotator), list them grouped, settle some (owners).
    proposals = f"{api}/traces/{trace.pk}/proposals/"
    proposal = expect(a, "post", proposals, 201, {"text": "Loops on one tool", "steps": [1]}).json()
    expect(a, "post", proposals, 400, {"text": " "})
    expect(a, "post", proposals, 400, {"steps": "x"})
    expect(a, "get", proposals, 200)
    expect(j, "get", f"{api}/proposals/", 200)
    expect(o, "get", f"{api}/proposals/?status=maybe", 400)
    declined = {"proposals": [proposal["id"]], "status": "declined", "outcome": "FM-1.3 covers it"}
    expect(j, "post", f"{api}/proposals/settle/", 403, declined)
    expect(o, "post", f"{api}/proposals/settle/", 400, {**declined, "proposals": [proposal["id"] + 99]})
    expect(o, "post", f"{api}/proposals/settle/", 200, declined)

    # The rounds' agreement trend (owners, adjudicators, viewers).
    expect(j, "get", f"{api}/rounds/trend/", 200)
    expect(a, "get", f"{api}/rounds/trend/", 403)

    # Gold calibration: settings and items (owners), scores, a calibration item and its gold after submit.
    gold_trace = project_trace(project)
    submit(project, gold_trace, annotator_a, {"FM-1.1": [1]})
    submit(project, gold_trace, _second_rater(project), {"FM-1.1": [2]})
    do_check_trace(project.pk, gold_trace.pk)
    carl = UserFactory(username="carl-calibrating")
    Membership.objects.create(project=project, user=carl, role="annotator")
    c = _as(carl)
    expect(o, "get", f"{api}/calibration/", 200)
    expect(o, "patch", f"{api}/calibration/", 200, {"qualification_size": 2, "min_kappa": 0.4})
    expect(o, "patch", f"{api}/calibration/", 400, {"rate": 0.9})
    expect(a, "patch", f"{api}/calibration/", 403, {"rate": 0.1})
    expect(o, "post", f"{api}/calibration/items/", 400, {"trace_ids": [trace.pk]})  # disputed: no gold yet
    expect(o, "post", f"{api}/calibration/items/", 200, {"all": True})
    expect(a, "post", f"{api}/calibration/items/", 403, {"all": True})
    cal = expect(c, "post", f"{api}/assignments/next/", 200).json()
    assert cal["purpose"] is None  # a gold item looks like any other until it is submitted
    expect(c, "get", f"{api}/assignments/{cal['id']}/gold/", 403)
    expect(c, "post", f"{api}/assignments/{cal['id']}/submit/", 200, {"version": 0, "no_failure": True})
    listed = expect(c, "get", f"{api}/assignments/?status=submitted", 200).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {row["id"]: row["purpose"] for row in rows}[cal["id"]] == "calibration"
    expect(c, "get", f"{api}/assignments/{cal['id']}/gold/", 200)
    expect(a, "get", f"{api}/assignments/{slot.pk}/gold/", 404)
    expect(c, "post", f"{api}/assignments/next/", 403)  # one item done of a qualification set of two
    expect(c, "get", f"{api}/calibration/?annotator=carl-calibrating", 200)
    expect(x, "get", f"{api}/calibration/", 404)

    # Taxonomy migrations (owners; last, since applying moves the project to a new taxonomy version).
    changes = {"changes": [{"op": "rename", "code": "FM-1.1", "new_code": "FM-1.1r"}]}
    expect(o, "get", f"{api}/taxonomy-migrations/", 200)
    preview = expect(o, "post", f"{api}/taxonomy-migrations/", 201, changes).json()
    expect(o, "post", f"{api}/taxonomy-migrations/", 400, {"changes": [{"op": "grow"}]})
    expect(o, "post", f"{api}/taxonomy-migrations/", 400, {"changes": "x"})
    expect(o, "get", f"{api}/taxonomy-migrations/{preview['id']}/", 200)
    expect(o, "get", f"{api}/taxonomy-migrations/{preview['id'] + 99}/", 404)
    confirmed = {code: new or "retire" for code, new in preview["mapping"].items()}
    expect(
        o,
        "post",
        f"{api}/taxonomy-migrations/{preview['id']}/apply/",
        400,
        {"mapping": {"FM-1.1": "FM-1.1r"}},
    )
    expect(o, "post", f"{api}/taxonomy-migrations/{preview['id']}/apply/", 200, {"mapping": confirmed})
    expect(a, "get", f"{api}/taxonomy-migrations/", 403)

    # Live OTLP spans and logs (tests/live/ covers them in depth): an owner's own token may send.
    otlp_json = {"content_type": "application/json", "format": None}
    empty = json.dumps({"resourceSpans": []})
    expect(o, "post", f"{api}/otlp/v1/traces", 200, empty, **otlp_json)
    expect(o, "post", f"{api}/otlp/v1/traces", 400, "{", **otlp_json)
    expect(o, "post", f"{api}/otlp/v1/logs", 200, json.dumps({"resourceLogs": []}), **otlp_json)
    expect(o, "post", f"{api}/otlp/v1/logs", 400, "[]", **otlp_json)
    expect(x, "post", f"{api}/otlp/v1/traces", 404, empty, **otlp_json)

    # Live settings (owners; tests/live/test_settings_api.py covers them in depth).
    expect(o, "get", f"{api}/live/", 200)
    expect(o, "patch", f"{api}/live/", 200, {"assign": "sample", "sample_rate": 0.25})
    expect(o, "patch", f"{api}/live/", 400, {"sample_rate": 2})
    expect(a, "get", f"{api}/live/", 403)
    expect(x, "get", f"{api}/live/", 404)

    # Archive and restore (last: an archived project takes no new work).
    expect(o, "post", f"{api}/archive/", 200, {"archived": True})
    expect(o, "post", f"{api}/archive/", 200, {"archived": False})

    missing = openapi.operations() - openapi.COVERED
    assert not missing, f"operations no test answered: {sorted(missing)}"
