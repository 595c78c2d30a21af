"""Group proposals for new failure modes by the words they use, and describe each group.

Open coding produces many short descriptions of the same new failure in different words ("agent keeps
calling the same tool", "repeated identical tool calls"). An owner turning them into a mode wants them
side by side: proposals whose word sets overlap enough (Jaccard similarity of their content words) fall in
one group (single linkage, so a chain of close descriptions stays together), and each group shows its most
frequent words and the modes its proposals co-occurred with. Deterministic: the same input, the same groups.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

THRESHOLD = 0.25
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "did",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "not",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "then",
        "there",
        "this",
        "to",
        "too",
        "was",
        "were",
        "when",
        "which",
        "while",
        "with",
        "without",
        "after",
        "before",
        "again",
        "also",
        "any",
        "agent",
        "agents",
        "should",
        "would",
        "could",
        "than",
    ]
)


@dataclass(frozen=True)
class Proposal:
    id: int
    text: str
    suggested_name: str = ""
    cooccurring: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    ids: tuple[int, ...]
    terms: tuple[str, ...]
    cooccurring: tuple[tuple[str, int], ...]
    names: tuple[str, ...] = field(default=())


def words(text: str) -> frozenset[str]:
    """Content words: lower-cased, 3+ characters, no stop words, a trailing plural 's' dropped."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(out)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def group_proposals(proposals: Sequence[Proposal], threshold: float = THRESHOLD) -> list[Group]:
    """Groups, largest first (then by first id); each proposal in exactly one group."""
    bags = [words(f"{p.suggested_name} {p.text}") for p in proposals]
    parent = list(range(len(proposals)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(proposals)):
        for j in range(i + 1, len(proposals)):
            if similarity(bags[i], bags[j]) >= threshold:
                parent[root(j)] = root(i)
    members: dict[int, list[int]] = {}
    for i in range(len(proposals)):
        members.setdefault(root(i), []).append(i)
    groups = []
    for indices in members.values():
        terms = Counter(word for i in indices for word in bags[i])
        modes = Counter(code for i in indices for code in set(proposals[i].cooccurring))
        groups.append(
            Group(
                ids=tuple(sorted(proposals[i].id for i in indices)),
                terms=tuple(word for word, _ in sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))[:6]),
                cooccurring=tuple(sorted(modes.items(), key=lambda kv: (-kv[1], kv[0]))),
                names=tuple(
                    sorted({proposals[i].suggested_name for i in indices if proposals[i].suggested_name})
                ),
            )
        )
    return sorted(groups, key=lambda g: (-len(g.ids), g.ids[0]))
