"""With three raters or more (Fleiss' kappa; MAST's human set has three annotators) the report's main table
still has a "Disagree" column, and each of its numbers opens the traces where the raters split on the mode:
the list's count is the cell's number."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.test import Client

from annotator.models import AgreementReport
from annotator.raters import get_llm_rater
from annotator.search.filters import MAX_RATERS
from annotator.services.label_import import IncomingAnnotation, do_import_annotations
from annotator.views import agreement_display as display
from tests.agreement.test_report_mast import import_mast
from tests.factories import UserFactory, add_member
from tests.labels import project_trace, submit
from traces.importers.records import AnnotationRecord, LabelRecord

pytestmark = pytest.mark.django_db
MODE_CELL = re.compile(r'<a data-drill="mode" href="([^"]+)"[^>]*>([\d,]+)</a>')


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _main_table(page: str) -> str:
    """The "Per failure mode" table (the pair tables below it have Disagree cells of their own)."""
    start = page.index("<h2>Per failure mode</h2>")
    return page[start : page.index("</table>", start)]


def _mode_cells(client: Client, project, query: str = "") -> dict[str, tuple[str, int]]:
    """Mode code -> (the main table's Disagree link, its number), from the report page."""
    response = client.get(f"/p/{project.slug}/agreement/{query}")
    assert response.status_code == 200
    cells = {}
    for href, shown in MODE_CELL.findall(_main_table(response.content.decode())):
        href = href.replace("&amp;", "&")
        code = re.search(r"disputed_mode=([^&]+)", href).group(1)
        cells[code] = (href, int(shown.replace(",", "")))
    return cells


def _api_count(client: Client, project, href: str) -> int:
    """The `count` of the list a cell opens, asked of the API with the link's own query."""
    response = client.get(f"/api/projects/{project.slug}/traces/?{urlsplit(href).query}")
    assert response.status_code == 200, (href, response.content)
    return response.json()["count"]


def _latest(project) -> dict:
    return AgreementReport.objects.filter(project=project).latest("pk").results


@pytest.fixture
def carol(project):
    carol = UserFactory(username="carol-annotator")
    add_member(project, carol, "annotator")
    return carol


@pytest.fixture
def three_raters(project, annotator_a, annotator_b, carol):
    """Three people and a model rater. FM-1.1: a alone on t1 (all three rated); everyone on t2 but the
    model. FM-3.1: carol alone on t3, which only a and carol rated. t4: b alone, compared with nobody."""
    t1, t2, t3, t4 = (project_trace(project) for _ in range(4))
    submit(project, t1, annotator_a, {"FM-1.1": [1]})
    submit(project, t1, annotator_b, {})
    submit(project, t1, carol, {})
    for user in (annotator_a, annotator_b, carol):
        submit(project, t2, user, {"FM-1.1": [2]})
    submit(project, t2, get_llm_rater("judge-model"), {})
    submit(project, t3, annotator_a, {})
    submit(project, t3, carol, {"FM-3.1": [0]})
    submit(project, t4, annotator_b, {"FM-1.1": [0], "FM-3.1": [1]})
    return project


def test_three_raters_get_a_disagree_column_whose_cells_count_their_lists(three_raters, owner):
    client = _client(owner)
    cells = _mode_cells(client, three_raters)
    results = _latest(three_raters)
    assert results["kappa_statistic"] == "fleiss_kappa" and len(results["raters"]) == 4
    # t1 and t2 (the model rated t2 without FM-1.1); t3 for FM-3.1; never t4, which nobody else rated.
    assert {code: n for code, (_, n) in cells.items()} == {"FM-1.1": 2, "FM-3.1": 1}
    for code, (href, shown) in cells.items():
        assert "raters=" in href and "pair=" not in href, href
        assert _api_count(client, three_raters, href) == shown, code
    # Every mode of the report, linked or not (a zero opens nothing), counts what its list would.
    for row in results["modes"]:
        href = f"?raters={','.join(r['username'] for r in results['raters'])}&disputed_mode={row['code']}"
        assert _api_count(client, three_raters, href) == row["n_disagree"], row["code"]


def test_the_cells_name_the_reports_raters_not_the_overlaps(three_raters, owner):
    """`disputed_mode` alone compares the raters that fill the overlap: it misses t2, where only the
    model left FM-1.1 out, so the cell could not open it and add up."""
    client = _client(owner)
    _, shown = _mode_cells(client, three_raters)["FM-1.1"]
    assert shown == 2
    assert _api_count(client, three_raters, "?disputed_mode=FM-1.1") == 1


def test_the_annotators_filter_names_only_the_raters_it_keeps(three_raters, owner, annotator_a, carol):
    client = _client(owner)
    cells = _mode_cells(
        client, three_raters, f"?annotators={annotator_a.username}&annotators={carol.username}"
    )
    assert {code: n for code, (_, n) in cells.items()} == {"FM-1.1": 1, "FM-3.1": 1}
    for href, shown in cells.values():
        assert "pair=" in href  # two raters left: the pair's own parameter
        assert _api_count(client, three_raters, href) == shown


def test_imported_raters_with_missing_votes_count_as_the_report_does(project, owner):
    """MAST's human set: three imported annotators, some votes left out (NaN). A vote left out is neither
    chosen nor not chosen, in the report and in the list it opens."""
    t1, t2, t3 = (project_trace(project) for _ in range(3))

    def vote(trace, who, chose, missing=()):
        record = AnnotationRecord(
            annotator=who,
            labels=[LabelRecord(mode=code) for code in chose],
            no_failure=not chose,
            missing=list(missing),
        )
        return IncomingAnnotation(trace, record, where=f"mast.json, {who}", source="mast")

    do_import_annotations(
        project,
        [
            # FM-1.1 on t1: x chose, y did not, z gave no vote: a split.
            vote(t1, "x", ["FM-1.1"]),
            vote(t1, "y", []),
            vote(t1, "z", [], missing=["FM-1.1"]),
            # FM-1.2 on t2: x and z chose, y gave no vote: agreed, though y's annotation lacks the label.
            vote(t2, "x", ["FM-1.2"]),
            vote(t2, "y", ["FM-2.1"], missing=["FM-1.2"]),
            vote(t2, "z", ["FM-1.2"]),
            # FM-2.1 on t3: y alone.
            vote(t3, "x", ["FM-1.1"]),
            vote(t3, "y", ["FM-1.1", "FM-2.1"]),
            vote(t3, "z", ["FM-1.1"]),
        ],
    )
    client = _client(owner)
    cells = _mode_cells(client, project)
    results = _latest(project)
    assert len(results["raters"]) == 3 and all(r["imported"] for r in results["raters"])
    assert {code: n for code, (_, n) in cells.items()} == {"FM-1.1": 1, "FM-2.1": 2}
    assert "FM-1.2" not in cells
    for code, (href, shown) in cells.items():
        assert _api_count(client, project, href) == shown, code
    names = ",".join(r["username"] for r in results["raters"])
    assert _api_count(client, project, f"?raters={names}&disputed_mode=FM-1.2") == 0


def test_a_viewer_sees_the_numbers_without_links(three_raters):
    viewer = UserFactory(username="vic-viewer")
    add_member(three_raters, viewer, "viewer")
    page = _client(viewer).get(f"/p/{three_raters.slug}/agreement/").content.decode()
    assert ">Disagree</th>" in page
    assert MODE_CELL.findall(page) == []


def test_a_report_filtered_by_dates_shows_its_numbers_unlinked(three_raters, owner):
    page = _client(owner).get(f"/p/{three_raters.slug}/agreement/?since=2000-01-01").content.decode()
    assert ">Disagree</th>" in page
    assert MODE_CELL.findall(page) == []


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_mast_human_set_every_disagree_cell_opens_as_many_traces_as_it_counts(project, owner):
    """The real MAST release (19 traces, three annotators, two NaN votes), imported as a user would."""
    import_mast(project)
    client = _client(owner)
    cells = _mode_cells(client, project)
    results = _latest(project)
    assert results["kappa_statistic"] == "fleiss_kappa"
    assert {code: n for code, (_, n) in cells.items()} == {
        row["code"]: row["n_disagree"] for row in results["modes"] if row["n_disagree"]
    }
    assert len(cells) >= 3  # the annotators split on several modes: the test compares something
    for code, (href, shown) in cells.items():
        assert _api_count(client, project, href) == shown, code


def test_the_link_names_two_raters_as_a_pair_more_as_raters_and_too_many_not_at_all():
    def named(*names):
        return display.disagree_raters({"raters": [{"username": name} for name in names]})

    assert named("ana", "ben") == ("pair=ana,ben", "")
    assert named("mast/x", "mast/y", "mast/z") == ("raters=mast%2Fx,mast%2Fy,mast%2Fz", "")
    link, why = named(*(f"r{k}" for k in range(MAX_RATERS + 1)))
    assert link is None and str(MAX_RATERS) in why
