"""Each label source on the annotation world of tests/signatures/world.py: gold, union, agreed, one
annotator, and gold with a fallback. Drafts never count; evidence follows the labels that count."""

from __future__ import annotations

import pytest

from annotator.services.signatures import (
    SignatureQuery,
    SignatureQueryError,
    parse_signature_query,
    project_signatures,
)
from tests.signatures.world import R, T, V

pytestmark = pytest.mark.django_db


def summary(people, source):
    s = project_signatures(people.project, SignatureQuery(source))
    overall = s.prevalence_by("all").groups[0]
    return s.n_traces, {p.key: p.count for p in overall.modes if p.count}, s.positions.n_points


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # (traces, mode counts, evidence points)
        ("gold", (1, {V: 1}, 1)),  # t1 resolved; t2's item is open
        ("union", (4, {R: 3, T: 1, V: 1}, 5)),  # t1 R@1 V@3,4 (3 once); t2 T@2; t3 R@0
        ("agreed", (3, {T: 1, V: 1}, 3)),  # t4 has one submission; t1's R is not agreed, nor its evidence
        ("annotator:ana-annotator", (4, {R: 2, T: 1, V: 1}, 3)),  # t3 "no failure" still counts as a trace
        ("annotator:ben-annotator", (3, {R: 1, T: 1, V: 1}, 4)),  # t4 is a draft
        ("gold+union", (4, {R: 2, T: 1, V: 1}, 3)),  # t1 from gold only (V@3), the rest from the union
        ("gold+agreed", (3, {T: 1, V: 1}, 2)),
        ("gold+annotator:ben-annotator", (3, {R: 1, T: 1, V: 1}, 3)),
    ],
)
def test_each_source(annotation_people, source, expected):
    assert summary(annotation_people, source) == expected


def test_an_annotator_without_annotations_gives_nothing(annotation_people):
    assert project_signatures(annotation_people.project, SignatureQuery("annotator:nobody")) is None


@pytest.mark.parametrize("source", ["", "silver", "annotator:", "gold+", "union+gold", "gold+gold"])
def test_unknown_sources_are_refused_with_a_reason(source):
    with pytest.raises(SignatureQueryError, match="source"):
        SignatureQuery(source or "bogus")


def test_query_parameters_are_parsed_from_a_querydict():
    from django.http import QueryDict

    query = parse_signature_query(
        QueryDict("source=agreed&model=a&model=b&model=a&batch=&compare_a=x&compare_b=y")
    )
    assert (query.source, query.model, query.batch, query.compare) == ("agreed", ("a", "b"), (), ("x", "y"))
    assert query.filters() == {"model": ("a", "b")}
    with pytest.raises(SignatureQueryError, match="two batches"):
        parse_signature_query(QueryDict("compare_a=x"))
