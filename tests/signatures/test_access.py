"""Who may see the signatures (page, CSV and API alike): outsiders 404, annotators of a blind project 403,
one annotator's labels only for owners, adjudicators or that annotator."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PAGE = "/p/demo-project/signatures/"
CSV = "/p/demo-project/signatures/prevalence.csv"
API = "/api/projects/demo-project/signatures/"
ALL = (PAGE, CSV, API)


def statuses(client, user, query=""):
    client.force_login(user)
    return [client.get(f"{path}{query}").status_code for path in ALL]


def test_an_outsider_gets_404_everywhere_even_with_a_bad_query(client, annotation_people):
    assert statuses(client, annotation_people.outsider) == [404, 404, 404]
    assert statuses(client, annotation_people.outsider, "?source=bogus") == [404, 404, 404]


def test_anonymous_visitors_are_sent_to_sign_in(client, annotation_people):
    assert client.get(PAGE).status_code == 302
    assert client.get(CSV).status_code == 302
    assert client.get(API).status_code in {401, 403}


@pytest.mark.parametrize("persona", ["owner", "adjudicator", "viewer"])
def test_owners_adjudicators_and_viewers_see_the_figures(client, annotation_people, persona):
    assert statuses(client, getattr(annotation_people, persona)) == [200, 200, 200]


def test_annotators_of_a_blind_project_do_not(client, annotation_people):
    assert annotation_people.project.blind
    assert statuses(client, annotation_people.annotator_a) == [403, 403, 403]


def test_annotators_of_a_project_that_is_not_blind_see_aggregates_and_only_their_own_labels(
    client, annotation_people
):
    project = annotation_people.project
    project.blind = False
    project.save(update_fields=["blind"])
    ana = annotation_people.annotator_a
    assert statuses(client, ana) == [200, 200, 200]
    assert statuses(client, ana, "?source=union") == [200, 200, 200]
    assert statuses(client, ana, "?source=annotator:ana-annotator") == [200, 200, 200]
    assert statuses(client, ana, "?source=annotator:ben-annotator") == [403, 403, 403]
    assert statuses(client, ana, "?source=gold%2Bannotator:ben-annotator") == [403, 403, 403]
    page = client.get(PAGE).content.decode()
    assert "annotator:ana-annotator" in page and "annotator:ben-annotator" not in page


def test_one_annotators_labels_are_for_owners_and_adjudicators(client, annotation_people):
    query = "?source=annotator:ben-annotator"
    assert statuses(client, annotation_people.owner, query) == [200, 200, 200]
    assert statuses(client, annotation_people.adjudicator, query) == [200, 200, 200]
    assert statuses(client, annotation_people.viewer, query) == [403, 403, 403]


def test_a_bad_query_is_a_400_that_says_why(client, annotation_people):
    assert statuses(client, annotation_people.owner, "?source=silver") == [400, 400, 400]
    assert "Unknown source" in client.get(f"{API}?source=silver").json()["detail"]
    assert "Unknown source" in client.get(f"{PAGE}?source=silver").content.decode()


def test_an_unknown_figure_is_404(client, annotation_people):
    client.force_login(annotation_people.owner)
    assert client.get("/p/demo-project/signatures/nonsense.csv").status_code == 404
