"""The pure part: TF-IDF + SVD vectors and the numpy nearest-neighbour index (no database)."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.similar.vectors import NeighbourIndex, TfidfModel, fit_tfidf, pack, trace_text, unpack

DOCS = [
    "kubectl delete namespace prod after the rollout failed",
    "kubectl delete namespace prod after the rollout broke",
    "select the rows of the orders table with a join on customers",
    "the proof of the lemma uses the eigenvalue of the matrix",
    "reply to the sender with the attachment from the inbox",
    "helm upgrade the chart and watch the pods restart",
]


def test_the_closest_text_is_the_near_duplicate():
    model = fit_tfidf(DOCS, dimensions=4)
    index = NeighbourIndex.build(enumerate(model.transform(DOCS)), model.dimensions)
    ids, scores = index.ranked(0, limit=2)
    assert ids[0] == 1 and scores[0] > scores[1]
    assert 0 not in ids  # a trace is not its own neighbour


def test_a_stored_model_projects_new_text_exactly_as_before():
    model = fit_tfidf(DOCS, dimensions=4)
    again = TfidfModel.from_bytes(model.to_bytes())
    assert np.allclose(again.transform(DOCS), model.transform(DOCS), atol=1e-6)
    assert again.terms == model.terms


def test_vectors_are_unit_length_and_survive_storage():
    vectors = fit_tfidf(DOCS, dimensions=4).transform([*DOCS, "words never seen"])
    assert np.allclose(np.linalg.norm(vectors[:-1], axis=1), 1.0, atol=1e-5)
    assert not vectors[-1].any()  # no known word: similar to nothing
    assert np.array_equal(unpack(pack(vectors[0]), vectors.shape[1]), vectors[0])
    with pytest.raises(ValueError):
        unpack(pack(vectors[0]), vectors.shape[1] + 1)


def test_text_without_any_word_cannot_be_fitted():
    with pytest.raises(ValueError, match="no words"):
        fit_tfidf(["!", "?"])


def test_a_traces_text_is_bounded():
    text = trace_text("task", [("bash", "x" * 5_000)] * 100)
    assert len(text) <= 20_100 and text.startswith("task\nbash x")


def test_the_ranking_is_a_full_order_by_similarity_then_id():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(300, 8)).astype(np.float32)
    index = NeighbourIndex.build(((pk * 3, row) for pk, row in enumerate(matrix)), 8)
    full_ids, full_scores = index.ranked(30)
    top_ids, _ = index.ranked(30, limit=10)
    assert list(top_ids) == list(full_ids[:10])
    assert np.all(np.diff(full_scores) <= 1e-7)
    expected = index.matrix @ index.matrix[index.row_of(30)]
    assert np.isclose(full_scores[0], np.sort(expected)[-2])
