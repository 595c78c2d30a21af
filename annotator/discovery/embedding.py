"""A discovery run's embedding step: the uncovered analyses' texts to unit vectors from the endpoint's
/embeddings, EMBED_BATCH texts a request, each batch kept as it arrives.

Each batch's vectors are a DiscoveryAnswer row (phase "embed", rater = the embeddings model, key = the batch's
number), stored with the batch's tokens in the same transaction that counts them on the run and advances its
progress (`done` of `total` batches). A run stopped or capped between batches, or whose worker died, keeps
what it embedded: a resumed run reads those rows back and sends only the batches that have none. A row
remembers a digest of its batch's texts, so a batch whose texts differ (they never should: the analyses are
final once the embedding starts) is embedded again rather than read back wrong.

Vectors are kept as little-endian float32 (base64 in the row's JSON), and the vectors used for grouping are
always read through that form, so a run embedded in one go and one resumed group the very same vectors.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator.llm.client import ChatClient, LLMError, estimate_tokens
from annotator.models import DiscoveryAnswer, DiscoveryRun

EMBED_BATCH = 64  # analyses per /embeddings request
EMBED_CHARS = 8_000  # of an analysis's text sent to the embeddings model


def batches(texts: Sequence[str]) -> list[list[str]]:
    """The texts as sent: EMBED_BATCH a request, each cut to EMBED_CHARS (an empty one as a space)."""
    return [
        [text[:EMBED_CHARS] or " " for text in texts[start : start + EMBED_BATCH]]
        for start in range(0, len(texts), EMBED_BATCH)
    ]


def digest(batch: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(batch).encode()).hexdigest()


def pack_vectors(rows: Sequence[Sequence[float]]) -> dict:
    lengths = {len(row) for row in rows}
    if len(lengths) != 1:
        raise LLMError("the embeddings model answered vectors of different lengths")
    matrix = np.asarray(rows, dtype="<f4")
    return {
        "rows": matrix.shape[0],
        "dimensions": matrix.shape[1],
        "vectors": base64.b64encode(matrix.tobytes()).decode(),
    }


def unpack_vectors(answer: dict) -> np.ndarray:
    flat = np.frombuffer(base64.b64decode(answer["vectors"]), dtype="<f4")
    return flat.reshape(int(answer["rows"]), int(answer["dimensions"])).astype(float)


def stored_batches(run: DiscoveryRun, model: str, wanted: list[list[str]]) -> dict[int, np.ndarray]:
    """The batches already embedded for these texts: number -> vectors."""
    out = {}
    rows = run.answers.filter(phase=DiscoveryAnswer.Phase.EMBED, rater=model, ok=True)
    for key, answer in rows.values_list("key", "answer"):
        n = int(key) if key.isdigit() else -1
        if 0 <= n < len(wanted) and answer.get("digest") == digest(wanted[n]):
            vectors = unpack_vectors(answer)
            if vectors.shape[0] == len(wanted[n]):
                out[n] = vectors
    return out


def embed_missing(
    run: DiscoveryRun,
    texts: Sequence[str],
    model: str,
    client: ChatClient,
    *,
    may_go_on: Callable[[], bool],
    touch: Callable[[], None],
) -> np.ndarray | None:
    """Unit vectors for `texts`, in order: the batches kept from before, and the others asked now, each
    stored as it arrives. Before every request `may_go_on()` is asked (the owner's stop, the token cap, as
    before any other request of the run): None when it says no (what was embedded is kept). The run's
    progress counts batches: `total` all of them, `done` those embedded."""
    wanted = batches(texts)
    kept = stored_batches(run, model, wanted)
    DiscoveryRun.objects.filter(pk=run.pk).update(total=len(wanted), done=len(kept), failed=0)
    for n, batch in enumerate(wanted):
        if n in kept:
            continue
        if not may_go_on():
            return None
        found = client.embed(batch, model)
        tokens = found.total_tokens or sum(estimate_tokens(len(text)) for text in batch)
        packed = pack_vectors(found.vectors)
        kept[n] = unpack_vectors(packed)
        _store(run, model, n, {"digest": digest(batch), **packed}, tokens)
        touch()
    if not wanted:
        return np.zeros((0, 0))
    if len({kept[n].shape[1] for n in kept}) > 1:
        raise LLMError("the embeddings model answered vectors of different lengths across batches")
    vectors = np.concatenate([kept[n] for n in range(len(wanted))])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _store(run: DiscoveryRun, model: str, n: int, answer: dict, tokens: int) -> None:
    """The batch's row, its tokens on the run and one more batch done, together (a worker dying between
    them would count tokens for vectors it lost, or keep vectors whose tokens were never counted)."""
    with transaction.atomic():
        DiscoveryAnswer.objects.update_or_create(
            run_id=run.pk,
            phase=DiscoveryAnswer.Phase.EMBED,
            rater=model,
            key=str(n),
            defaults={"ok": True, "answer": answer, "error": "", "tokens": tokens, "trace_id": None},
        )
        DiscoveryRun.objects.filter(pk=run.pk).update(
            done=F("done") + 1, tokens_used=F("tokens_used") + tokens, heartbeat_at=timezone.now()
        )


def forget(run: DiscoveryRun) -> None:
    """Once the run's groups are kept, the vectors have served: they go (they are the run's largest rows)."""
    run.answers.filter(phase=DiscoveryAnswer.Phase.EMBED).delete()
