"""Trace representations for "similar traces": text in, unit-length float32 vectors out. Pure: no Django.

Two ways to a vector, both ending as one row of unit length, so cosine similarity is a dot product:

- TF-IDF reduced by truncated SVD (latent semantic analysis): the vocabulary, idf weights and SVD components
  are fitted once on a sample of the project's traces (`fit_tfidf`) and kept (`TfidfModel.to_bytes`), so a
  trace imported later is projected into the very same space (`TfidfModel.transform`). No model weights are
  downloaded: the "model" is fitted here, from the project's own text.
- Embeddings from the project's `/v1/embeddings` endpoint (annotator.similar.embeddings): normalised here.

`NeighbourIndex` holds one (project, version)'s vectors as one matrix: the similarity of every trace to one
is a single matrix-vector product, and the best k come out of `argpartition` (no per-trace Python).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

DIMENSIONS = 128  # of the SVD; 100,000 traces hold 51 MB as float32
MAX_TERMS = 20_000  # vocabulary kept by the TF-IDF (the SVD components are DIMENSIONS x MAX_TERMS)
STEP_CHARS = 1_000  # of each step's content read into a trace's text
TRACE_CHARS = 20_000  # of a trace's text in all
MAX_DIMENSIONS = 4_096  # an embedding longer than this is refused (memory: traces x dimensions x 4 bytes)


def trace_text(task: str, steps: Iterable[tuple[str, str]]) -> str:
    """The text a trace is represented by: its task, then each step's tool name and content, bounded (a
    step's first STEP_CHARS characters, TRACE_CHARS in all) so one enormous trace cannot dominate memory."""
    parts = [(task or "")[:STEP_CHARS]]
    size = len(parts[0])
    for tool, content in steps:
        piece = " ".join(p for p in ((tool or ""), (content or "")[:STEP_CHARS]) if p)
        if not piece:
            continue
        if size + len(piece) > TRACE_CHARS:
            parts.append(piece[: max(TRACE_CHARS - size, 0)])
            break
        parts.append(piece)
        size += len(piece) + 1
    return "\n".join(p for p in parts if p)


def normalised(rows: NDArray) -> NDArray[np.float32]:
    """Rows scaled to unit length (a row of zeros, a trace with no known word, stays zero: similar to none)."""
    rows = np.asarray(rows, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def pack(vector: NDArray) -> bytes:
    """A vector as stored: little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def unpack(data: bytes, dimensions: int) -> NDArray[np.float32]:
    vector = np.frombuffer(data, dtype="<f4")
    if vector.shape != (dimensions,):
        raise ValueError(f"a stored vector has {vector.size} values, the representation {dimensions}")
    return vector.astype(np.float32)


# TF-IDF + SVD ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TfidfModel:
    """A fitted TF-IDF + SVD: `terms` (the vocabulary, by column), their `idf` weights, and `components`
    (dimensions x terms) that project a TF-IDF row into the reduced space."""

    terms: tuple[str, ...]
    idf: NDArray[np.float32]
    components: NDArray[np.float32]

    @property
    def dimensions(self) -> int:
        return int(self.components.shape[0])

    def transform(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-length vectors (one row per text) in this model's space; words it never saw count for
        nothing. The same sublinear TF, idf and l2 norm as the fit, so a trace gets the vector it would have
        got had it been in the fitting sample."""
        from sklearn.feature_extraction.text import CountVectorizer

        if not len(texts):
            return np.zeros((0, self.dimensions), dtype=np.float32)
        counts = CountVectorizer(vocabulary={t: i for i, t in enumerate(self.terms)}, **_TOKENS).transform(
            texts
        )
        tfidf = counts.astype(np.float32)
        tfidf.data = 1.0 + np.log(tfidf.data)
        tfidf = tfidf.multiply(self.idf[None, :]).tocsr()
        norms = np.sqrt(np.asarray(tfidf.multiply(tfidf).sum(axis=1))).ravel()
        norms[norms == 0] = 1.0
        tfidf = tfidf.multiply((1.0 / norms)[:, None]).tocsr()
        return normalised(tfidf @ self.components.T)

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        np.savez_compressed(
            out, terms=np.array(self.terms, dtype=np.str_), idf=self.idf, components=self.components
        )
        return out.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> TfidfModel:
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            return cls(
                terms=tuple(str(t) for t in stored["terms"]),
                idf=stored["idf"].astype(np.float32),
                components=stored["components"].astype(np.float32),
            )


# Words of two or more letters or digits, lowercased: the same tokens for fit and transform.
_TOKENS = {"lowercase": True, "token_pattern": r"(?u)\b\w\w+\b", "dtype": np.float32}


def fit_tfidf(texts: Sequence[str], dimensions: int = DIMENSIONS, *, seed: int = 0) -> TfidfModel:
    """Fit the vocabulary (at most MAX_TERMS words, those in more than one text once there are enough
    texts), idf weights and an SVD of `dimensions` on `texts`. With fewer words than dimensions the TF-IDF
    itself is the vector (no reduction to make). Raises ValueError when the texts hold no word at all."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    min_df = 2 if len(texts) >= 50 else 1
    vectorizer = TfidfVectorizer(sublinear_tf=True, max_features=MAX_TERMS, min_df=min_df, **_TOKENS)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:
        if min_df == 1:
            raise ValueError("the traces hold no words to compare them by") from None
        vectorizer = TfidfVectorizer(sublinear_tf=True, max_features=MAX_TERMS, min_df=1, **_TOKENS)
        matrix = vectorizer.fit_transform(texts)
    terms = tuple(vectorizer.get_feature_names_out())
    idf = vectorizer.idf_.astype(np.float32)
    rank = min(dimensions, matrix.shape[0] - 1, len(terms) - 1)
    if len(terms) <= dimensions or rank < 2:
        components = np.eye(len(terms), dtype=np.float32)
    else:
        svd = TruncatedSVD(n_components=rank, algorithm="randomized", n_iter=5, random_state=seed)
        svd.fit(matrix)
        components = svd.components_.astype(np.float32)
    return TfidfModel(terms=terms, idf=idf, components=components)


# Nearest neighbours ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NeighbourIndex:
    """One representation's vectors: `ids` (trace ids, ascending) and `matrix` (one unit row per id)."""

    ids: NDArray[np.int64]
    matrix: NDArray[np.float32]

    @classmethod
    def build(cls, rows: Iterable[tuple[int, NDArray]], dimensions: int) -> NeighbourIndex:
        pairs = sorted(rows, key=lambda row: row[0])
        ids = np.fromiter((pk for pk, _ in pairs), dtype=np.int64, count=len(pairs))
        matrix = np.empty((len(pairs), dimensions), dtype=np.float32)
        for row, (_, vector) in enumerate(pairs):
            matrix[row] = vector
        return cls(ids=ids, matrix=normalised(matrix) if len(pairs) else matrix)

    def __len__(self) -> int:
        return int(self.ids.size)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.ids.nbytes)

    def row_of(self, trace_id: int) -> int | None:
        row = int(np.searchsorted(self.ids, trace_id))
        return row if row < self.ids.size and self.ids[row] == trace_id else None

    def has(self, trace_id: int) -> bool:
        return self.row_of(trace_id) is not None

    def similarities(self, trace_id: int) -> NDArray[np.float32]:
        """Cosine similarity of every indexed trace to `trace_id` (one matrix-vector product)."""
        row = self.row_of(trace_id)
        if row is None:
            raise KeyError(trace_id)
        return self.matrix @ self.matrix[row]

    def ranked(self, trace_id: int, *, limit: int | None = None) -> tuple[NDArray[np.int64], NDArray]:
        """(ids, similarities) of the indexed traces but `trace_id` itself, most similar first (equal
        similarity: lower id first), the best `limit` of them (all without one). The best k come from
        argpartition, so a first page costs one pass over the matrix, not a sort of it."""
        scores = self.similarities(trace_id)
        scores[self.row_of(trace_id)] = -np.inf
        count = scores.size - 1
        if limit is not None and limit < count:
            top = np.argpartition(-scores, limit)[:limit]
        else:
            top = np.arange(scores.size)
        order = np.lexsort((self.ids[top], -scores[top]))
        rows = top[order]
        rows = rows[np.isfinite(scores[rows])]
        return self.ids[rows], scores[rows]
