"""Every route x every persona: the answer the table below expects, and nothing of annotator B's labels in
what annotator A (or an owner still annotating the trace) receives.

The routes come from `get_resolver()`, so a new URL (page, partial, API view, export, download) without a
row in ROUTES fails `test_every_route_has_a_row`; the failure prints the row it observed, to check against
the access policy (annotator/access.py) before pasting it in. A new route is listed here, in ROUTES, and
nowhere else; the objects its URL names (a new `<kind_id>` argument) are built by the `world` fixture in
tests/route_matrix_world.py.

Personas (columns):
  anon   anonymous                  out    signed in, member of nothing
  A      annotator A: a draft on T1, submitted T2
  B      annotator B: submitted T1 (with the planted marks) and T2
  adj    adjudicator                view   viewer
  own    owner (not annotating)     OA     an owner who is also annotator of T1 and has not submitted it
  oth    owner of another project   staff  staff, member of nothing

Cells: an HTTP status, or `login` for a redirect to the login page. Each request runs in a savepoint that is
rolled back, so a POST by one persona changes nothing for the next. Requests are the plainest possible
(GET, or POST without a body for POST-only views): the table is about who gets in, not about forms.

The blind marks: B's note and label notes on T1 and T2, an LLM rater's note and a failed LLM answer on T1,
and T1's answer key (the verdict that came with the data). A, a plain annotator, and the viewer never
receive any of them; OA never receives those of T1 (blind beats every role), while the owner does (so the
check is not vacuous).
"""

from __future__ import annotations

import logging
import re

from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse

from tests.route_matrix_world import MARK_T1, MARK_T2, world  # noqa: F401 (the fixture)

PERSONAS = ("anon", "out", "A", "B", "adj", "view", "own", "OA", "oth", "staff")

ROUTES = """
# route name (.fmt: DRF's  method anon  out   A     B     adj   view  own   OA    oth   staff
# format-suffix variant)
home                          GET   login 200   200   200   200   200   200   200   200   200
healthz                       GET   200   200   200   200   200   200   200   200   200   200
login                         GET   200   200   200   200   200   200   200   200   200   200
logout                        POST  login login login login login login login login login login
admin/*                       GET   302   302   302   302   302   302   302   302   302   302
taxonomy-list                 GET   login 200   200   200   200   200   200   200   200   200
taxonomy-detail               GET   login 200   200   200   200   200   200   200   200   200
batch-list                    GET   login 403   403   403   403   403   403   403   403   200
project-detail                GET   login 404   200   200   200   200   200   200   404   404
project-import                GET   login 404   403   403   403   403   200   200   404   404
project-import-job            GET   login 404   403   403   403   403   200   200   404   404
project-outcomes              GET   login 404   403   403   403   403   200   200   404   404
project-outcomes-import       POST  login 404   403   403   403   403   422   422   404   404
project-export                GET   login 404   403   403   403   403   200   403   404   404
project-export-job            GET   login 404   403   403   403   403   200   403   404   404
project-export-download       GET   login 404   403   403   403   403   404   403   404   404
project-export-labels         GET   login 404   403   403   403   403   200   403   404   404
project-signatures            GET   login 404   403   403   200   200   200   403   404   404
project-signatures-csv        GET   login 404   403   403   200   200   200   403   404   404
start-next                    POST  login 404   302   302   403   403   403   302   404   404
my-assignments                GET   login 404   200   200   403   403   403   200   404   404
annotate                      GET   login 404   200   404   403   403   403   404   404   404
annotate-save                 POST  login 404   409   404   403   403   403   404   404   404
annotate-submit               POST  login 404   409   404   403   403   403   404   404   404
annotate-skip                 POST  login 404   302   404   403   403   403   404   404   404
trace-steps                   GET   login 404   200   200   200   200   200   200   404   404
trace-step                    GET   login 404   200   200   200   200   200   200   404   404
trace-review                  GET   login 404   403   403   200   403   200   403   404   404
trace-review-steps            GET   login 404   403   403   200   403   200   403   404   404
project-traces                GET   login 404   403   403   200   403   200   200   404   404
project-traces-csv            GET   login 404   403   403   200   403   200   200   404   404
project-view-save             POST  login 404   403   403   302   403   302   302   404   404
project-view                  GET   login 404   403   403   302   403   302   302   404   404
project-view-rename           POST  login 404   403   403   403   403   302   302   404   404
project-view-delete           POST  login 404   403   403   403   403   302   302   404   404
trace-similar                 GET   login 404   200   200   200   403   200   200   404   404
trace-similar-build           POST  login 404   403   403   403   403   302   302   404   404
trace-similar-stop            POST  login 404   403   403   403   403   302   302   404   404
project-view-round            POST  login 404   403   403   403   403   302   302   404   404
project-members               GET   login 404   403   403   403   403   200   200   404   200
project-member-add            POST  login 404   403   403   403   403   302   302   404   302
project-member-remove         POST  login 404   403   403   403   403   302   302   404   302
project-batch-attach          POST  login 404   403   403   403   403   302   302   404   302
project-settings              POST  login 404   403   403   403   403   302   302   404   302
project-llm                   GET   login 404   403   403   403   403   200   200   404   404
project-llm-config            POST  login 404   403   403   403   403   422   422   404   404
project-llm-key               POST  login 404   403   403   403   403   422   422   404   404
project-llm-prompt            POST  login 404   403   403   403   403   422   422   404   404
project-llm-start             POST  login 404   403   403   403   403   422   422   404   404
project-llm-estimate          POST  login 404   403   403   403   403   422   422   404   404
project-llm-run               GET   login 404   403   403   403   403   200   200   404   404
project-llm-run-stop          POST  login 404   403   403   403   403   422   422   404   404
project-llm-run-resume        POST  login 404   403   403   403   403   422   422   404   404
project-llm-agreement         GET   login 404   403   403   403   403   200   403   404   404
project-triage                GET   login 404   403   403   403   403   200   403   404   404
project-triage-order          POST  login 404   403   403   403   403   302   302   404   404
project-triage-round          POST  login 404   403   403   403   403   302   403   404   404
discovery                     GET   login 404   403   403   200   403   200   200   404   404
discovery-start               POST  login 404   403   403   403   403   400   400   404   404
discovery-gate                POST  login 404   403   403   403   403   400   400   404   404
discovery-run                 GET   login 404   403   403   200   403   200   403   404   404
discovery-stop                POST  login 404   403   403   403   403   302   403   404   404
discovery-resume              POST  login 404   403   403   403   403   302   403   404   404
discovery-send                POST  login 404   403   403   403   403   302   403   404   404
discovery-round               POST  login 404   403   403   403   403   302   403   404   404
project-live                  GET   login 404   403   403   403   403   200   200   404   404
project-live-spans            GET   login 404   403   403   403   403   200   200   404   404
project-live-token            POST  login 404   403   403   403   403   200   200   404   404
project-live-settings         POST  login 404   403   403   403   403   200   200   404   404
agreement                     GET   login 404   403   403   200   200   200   403   404   404
agreement-refresh             POST  login 404   403   403   302   302   302   403   404   404
agreement-report              GET   login 404   403   403   200   200   200   403   404   404
agreement-json                GET   login 404   403   403   200   200   200   403   404   404
agreement-csv                 GET   login 404   403   403   200   200   200   403   404   404
codebook                      GET   login 404   403   403   403   403   200   403   404   404
codebook-preview              POST  login 404   403   403   403   403   400   403   404   404
codebook-migration            GET   login 404   403   403   403   403   200   403   404   404
codebook-apply                POST  login 404   403   403   403   403   400   403   404   404
adjudication                  GET   login 404   403   403   200   403   200   200   404   404
adjudication-next             POST  login 404   403   403   302   403   302   302   404   404
adjudication-history          GET   login 404   403   403   200   403   200   200   404   404
adjudication-item             GET   login 404   403   403   200   403   200   200   404   404
adjudication-steps            GET   login 404   403   403   200   403   200   200   404   404
adjudication-claim            POST  login 404   403   403   302   403   302   302   404   404
adjudication-release          POST  login 404   403   403   302   403   302   302   404   404
adjudication-reopen           POST  login 404   403   403   302   403   302   302   404   404
api-schema                    GET   401   200   200   200   200   200   200   200   200   200
api-docs                      GET   login 200   200   200   200   200   200   200   200   200
api-token                     POST  400   200   200   200   200   200   200   200   200   200
api-tokens                    GET   401   200   200   200   200   200   200   200   200   200
api-token-revoke              DELETE 401   404   404   404   404   404   204   204   404   404
account-tokens                GET   login 200   200   200   200   200   200   200   200   200
account-token-create          POST  login 422   422   422   422   422   422   422   422   422
account-tokens-revoke-all     POST  login 302   302   302   302   302   302   302   302   302
account-token-revoke          POST  login 404   404   404   404   404   302   302   404   404
project-token-create          POST  login 404   403   403   403   403   422   422   404   404
api-import-start              POST  401   404   403   403   403   403   400   400   404   404
api-import-status             GET   401   404   403   403   403   403   200   200   404   404
api-outcomes-import           POST  401   404   403   403   403   403   400   400   404   404
api-export-start              POST  401   404   403   403   403   403   202   403   404   404
api-export-status             GET   401   404   403   403   403   403   200   403   404   404
api-export-labels             GET   401   404   403   403   403   403   200   403   404   404
api-signatures                GET   401   404   403   403   200   200   200   403   404   404
api-project-traces            GET   401   404   200   200   200   200   200   200   404   404
# OTLP ingest takes a token only (an ingest token or an owner's; tests/live/): a session is not enough.
api-otlp-traces               POST  401   401   401   401   401   401   401   401   401   401
api-otlp-logs                 POST  401   401   401   401   401   401   401   401   401   401
api-live-settings             GET   401   404   403   403   403   403   200   200   404   404
api-views                     GET   401   404   200   200   200   200   200   200   404   404
api-view                      GET   401   404   200   200   200   200   200   200   404   404
api-trace                     GET   401   404   200   200   200   200   200   200   404   404
api-trace-steps               GET   401   404   200   200   200   200   200   200   404   404
api-trace-search              GET   401   404   200   200   200   200   200   200   404   404
api-trace-annotations         GET   401   404   403   403   200   403   200   403   404   404
api-my-assignments            GET   401   404   200   200   200   200   200   200   404   404
api-claim-next                POST  401   404   200   204   403   403   403   200   404   404
api-my-annotation             GET   401   404   200   404   403   403   403   404   404   404
api-submit                    POST  401   404   400   404   403   403   403   404   404   404
api-skip                      POST  401   404   400   404   403   403   403   404   404   404
project-new                   GET   login 403   403   403   403   403   403   403   403   200
password-set                  GET   302   302   302   302   302   302   302   302   302   302
password-set-done             GET   200   200   200   200   200   200   200   200   200   200
project-member-role           POST  login 404   403   403   403   403   302   302   404   302
project-archive               POST  login 404   403   403   403   403   302   302   404   302
api-project-settings          GET   401   404   403   403   403   403   200   200   404   200
api-project-archive           POST  401   404   403   403   403   403   200   200   404   200
api-members                   GET   401   404   403   403   403   403   200   200   404   200
api-member                    DELETE 401   404   403   403   403   403   200   200   404   200
api-project-batches           GET   401   404   403   403   403   403   200   200   404   200
api-llm-settings              GET   401   404   403   403   403   403   200   200   404   404
api-llm-key                   DELETE 401   404   403   403   403   403   200   200   404   404
api-llm-prompt                GET   401   404   403   403   403   403   200   200   404   404
api-label-import              POST  401   404   403   403   403   403   400   400   404   404
api-llm-run-preview           POST  401   404   403   403   403   403   400   400   404   404
api-rounds-trend              GET   401   404   403   403   200   200   200   403   404   404
api-llm-run-stop              POST  401   404   403   403   403   403   409   409   404   404
api-llm-runs                  GET   401   404   403   403   403   403   200   200   404   404
api-llm-run                   GET   401   404   403   403   403   403   200   200   404   404
api-llm-run-resume            POST  401   404   403   403   403   403   409   409   404   404
api-llm-agreement             GET   401   404   403   403   403   403   200   403   404   404
api-triage                    GET   401   404   403   403   403   403   200   403   404   404
api-triage-round              POST  401   404   403   403   403   403   400   403   404   404
api-discovery                 GET   401   404   403   403   200   403   200   200   404   404
api-discovery-estimate        POST  401   404   403   403   403   403   400   400   404   404
api-discovery-gate            POST  401   404   403   403   403   403   400   400   404   404
api-discovery-run             GET   401   404   403   403   200   403   200   403   404   404
api-discovery-stop            POST  401   404   403   403   403   403   400   403   404   404
api-discovery-resume          POST  401   404   403   403   403   403   400   403   404   404
api-discovery-send            POST  401   404   403   403   403   403   200   403   404   404
api-discovery-round           POST  401   404   403   403   403   403   400   403   404   404
api-llm-labels                GET   401   404   200   404   403   403   403   404   404   404
api-agreement                 GET   401   404   403   403   200   200   200   403   404   404
api-adjudication              GET   401   404   403   403   200   403   200   200   404   404
api-adjudication-claim        POST  401   404   403   403   200   403   200   200   404   404
api-adjudication-item         GET   401   404   403   403   200   403   200   200   404   404
api-adjudication-decide       POST  401   404   403   403   400   403   400   400   404   404
api-adjudication-reopen       POST  401   404   403   403   400   403   400   400   404   404
api-project-list              GET   401   200   200   200   200   200   200   200   200   200
api-project-list.fmt          GET   401   200   200   200   200   200   200   200   200   200
api-project-detail            GET   401   404   200   200   200   200   200   200   404   404
api-project-detail.fmt        GET   401   404   200   200   200   200   200   200   404   404
api-taxonomy-list             GET   401   200   200   200   200   200   200   200   200   200
api-taxonomy-list.fmt         GET   401   200   200   200   200   200   200   200   200   200
api-taxonomy-detail           GET   401   200   200   200   200   200   200   200   200   200
api-taxonomy-detail.fmt       GET   401   200   200   200   200   200   200   200   200   200
api-taxonomy-migrations       GET   401   404   403   403   403   403   200   403   404   404
api-taxonomy-migration        GET   401   404   403   403   403   403   200   403   404   404
api-taxonomy-migration-apply  POST  401   404   403   403   403   403   400   403   404   404
api-rounds                    GET   401   404   403   403   200   200   200   403   404   404
api-proposals                 GET   401   404   200   200   200   403   200   200   404   404
api-proposals-settle          POST  401   404   403   403   403   403   400   400   404   404
api-trace-proposals           GET   401   404   200   200   200   403   200   200   404   404
api-similar                   GET   401   404   200   200   200   403   200   200   404   404
api-similar-stop              POST  401   404   403   403   403   403   409   409   404   404
api-rounds-close              POST  401   404   403   403   403   403   400   400   404   404
api-round-threads             GET   401   404   200   200   200   403   200   200   404   404
api-thread-decide             POST  401   404   403   403   400   403   400   403   404   404
mentions                      GET   login 200   200   200   200   200   200   200   200   200
proposals                     GET   login 404   200   200   200   403   200   200   404   404
proposals-settle              POST  login 404   403   403   403   403   302   302   404   404
round-discussion              GET   login 404   200   200   200   403   200   200   404   404
rounds                        GET   login 404   403   403   200   200   200   403   404   404
calibration                   GET   login 404   200   200   200   200   200   200   404   404
calibration-settings          POST  login 404   403   403   403   403   302   302   404   404
calibration-items             POST  login 404   403   403   403   403   422   422   404   404
api-calibration               GET   401   404   200   200   200   200   200   200   404   404
api-calibration-items         POST  401   404   403   403   403   403   400   400   404   404
api-calibration-gold          GET   401   404   403   404   403   403   403   404   404   404
rounds-close                  POST  login 404   403   403   403   403   302   302   404   404
rounds-open                   POST  login 404   403   403   403   403   400   400   404   404
thread-decide                 POST  login 404   403   403   302   403   302   403   404   404
trace-discussion              GET   login 404   403   200   200   403   200   403   404   404
trace-proposals               GET   login 404   200   200   200   403   200   200   404   404
api-root                      GET   401   200   200   200   200   200   200   200   200   200
api-root.fmt                  GET   401   200   200   200   200   200   200   200   200   200
"""


def _table() -> dict[str, tuple[str, dict[str, str]]]:
    rows = {}
    for line in ROUTES.strip().splitlines():
        if line.startswith("#"):
            continue
        name, method, *cells = line.split()
        assert len(cells) == len(PERSONAS), f"row {name!r} needs one cell per persona"
        rows[name] = (method, dict(zip(PERSONAS, cells, strict=True)))
    return rows


TABLE = _table()


def routes() -> dict[str, tuple[str, frozenset[str]]]:
    """Every URL pattern of the site by table key (its name, plus ".fmt" for DRF's format-suffix twins):
    (URL name, the names of its arguments). Django's admin (its own code, superusers only) is one key, checked
    at its index."""
    found: dict[str, tuple[str, frozenset[str]]] = {}

    def walk(patterns, prefix: str, groups: frozenset[str]) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            here = groups | set(pattern.pattern.regex.groupindex)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route, here)
                continue
            if route.startswith("admin/"):
                found.setdefault("admin/*", ("", frozenset()))
                continue
            assert pattern.name, f"the route {route!r} has no name: name it and give it a row"
            key = pattern.name + (".fmt" if "format" in here else "")
            assert key not in found, f"two routes share the table key {key!r}"
            found[key] = (pattern.name, here)

    walk(get_resolver().url_patterns, "", frozenset())
    return found


def test_every_route_has_a_row():
    missing = sorted(set(routes()) - set(TABLE))
    stale = sorted(set(TABLE) - set(routes()))
    assert not missing, f"routes without a row in tests/test_route_matrix.py ROUTES: {missing}"
    assert not stale, f"rows for routes that no longer exist: {stale}"


def _url(key: str, name: str, groups: frozenset[str], kwargs: dict) -> str:
    if key == "admin/*":
        return "/admin/"
    wanted = {group: kwargs[group] for group in groups}
    if name in ("api-taxonomy-detail", "taxonomy-detail"):
        wanted["slug"] = "mast"
    if name == "api-trace-search":  # `q` is required (400 without it)
        return reverse(name, kwargs=wanted) + "?q=step"
    return reverse(name, kwargs=wanted)


def _outcome(response) -> str:
    if response.status_code in (301, 302) and "/accounts/login/" in response.get("Location", ""):
        return "login"
    return str(response.status_code)


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _request(client: Client, method: str, url: str):
    """One request, in a savepoint rolled back afterwards (a POST changes nothing for the next one)."""
    with transaction.atomic():
        response = client.generic(method, url)
        body = _body(response)
        transaction.set_rollback(True)
    return response, body


def _client(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_every_route_answers_every_persona_as_the_table_says(world, caplog):  # noqa: F811
    cache.clear()  # rate limits (login, token creation) count per address: start from none
    caplog.set_level(logging.CRITICAL, logger="django.request")  # 900 expected 403/404 warnings
    users, kwargs = world
    clients = {persona: _client(user) for persona, user in users.items()}
    mismatches: list[str] = []
    leaks: list[str] = []
    owner_saw_t1 = False
    observed_rows: list[str] = []
    for key, (name, groups) in sorted(routes().items()):
        method, expected = TABLE.get(key, ("GET", dict.fromkeys(PERSONAS, "no row")))
        url = _url(key, name, groups, kwargs)
        observed = {}
        for persona in PERSONAS:
            response, body = _request(clients[persona], method, url)
            if key == "logout":  # the session is gone: sign in again for the next routes
                clients[persona] = _client(users[persona])
            observed[persona] = _outcome(response)
            if observed[persona] != expected[persona]:
                mismatches.append(
                    f"{method} {url} as {persona}: {observed[persona]}, table says {expected[persona]}"
                )
            if persona in ("A", "view") and re.search(f"{MARK_T1}|{MARK_T2}", body):
                leaks.append(f"{method} {url} showed {persona} another rater's labels or the answer key")
            if persona == "OA" and MARK_T1 in body:
                leaks.append(f"{method} {url} showed an owner still annotating T1 the labels of T1")
            owner_saw_t1 |= persona == "own" and MARK_T1 in body
        observed_rows.append(f"{key:<30}{method:<6}" + " ".join(f"{observed[p]:<4}" for p in PERSONAS))
    assert not leaks, "\n".join(leaks)
    assert owner_saw_t1, "the planted marks never reached the owner: the blind check would prove nothing"
    assert not mismatches, "\n".join(mismatches) + "\n\nobserved:\n" + "\n".join(observed_rows)
