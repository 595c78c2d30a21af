"""A deterministic stand-in model for discovery, served on 127.0.0.1 by the chat-completions stand-in
(tests/chat_standin.py): it reads each request (the model name, the system and user messages) and answers as
a careful, rule-bound model would, from what the synthetic traces (annotator.discovery.synthetic) plant.

- An analysis request: for each step showing a known phrase, a failure with its description (one of the
  pattern's wordings, chosen by the trace), the step, the phrase as a quote, and `covered_by` (FM-1.3 for the
  repetition; nothing otherwise, the restatement included, which a real model might also miss); a noise line
  becomes a failure of its own.
- A naming request: the pattern the analyses speak of, its code, name and definition, three examples taken
  from the analyses shown (`bad_quote`: the first example of that pattern's code gets a quote its step does
  not hold).
- `unavailable`: every request answered 503, as by a server that is down.
- A gate request (the LLM rater's format): each mode present when its trace shows the phrase its definition
  names; a candidate whose definition says "unclear" is applied by a coin each rater tosses differently.
"""

from __future__ import annotations

import hashlib
import json
import re

from annotator.discovery.synthetic import COVERED, PLANTED, RESTATED
from tests.chat_standin import ChatStandIn

PATTERNS = (*PLANTED, RESTATED)
STEP = re.compile(r"^### Step (\d+) .*?\n(.*?)(?=\n\n### Step |\n\n\[\.\.\.|\n\nNow answer|\Z)", re.S | re.M)
TRACE = re.compile(r"^Trace (\S+)", re.M)
MODE = re.compile(r"^- (\S+): (.*)\n  Definition: (.*)$", re.M)
ANALYSIS = re.compile(r"^- trace (\S+), steps \[(\d+)[^\]]*\]: (.*)\n  quotes: step (\d+): \"(.*)\"$", re.M)


def _coin(*parts: str) -> bool:
    return hashlib.sha256("|".join(parts).encode()).digest()[0] % 2 == 0


def _steps(user: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in STEP.finditer(user)]


class DiscoveryModel:
    usage = {"prompt_tokens": 500, "completion_tokens": 50, "total_tokens": 550}

    def __init__(self, *, bad_quote: str = "", latency: float = 0.0) -> None:
        self.bad_quote, self.latency = bad_quote, latency
        self.unavailable = False  # True: every request is answered 503 (the server is down)
        self.models_seen: list[str] = []
        self.embedded = 0  # texts embedded
        self.embed_requests = 0  # /embeddings requests answered
        self.prompts: list[str] = []  # the start of each request's system message

    def reply(self, body: dict) -> str:
        self.models_seen.append(str(body.get("model")))
        system = body["messages"][0]["content"]
        self.prompts.append(system[:60])
        user = body["messages"][1]["content"]
        if system.startswith("You are an expert reader"):
            return json.dumps(self._analyse(user))
        if system.startswith("Below are analyses"):
            return json.dumps(self._name(user))
        return json.dumps(self._gate(system, user, str(body.get("model"))))

    def embed(self, body: dict) -> dict:
        """Vectors as an embedding model gives them: texts that mean the same land close. Here a hashed bag
        of the words of the text's pattern, so the three wordings of one pattern share one direction."""
        self.embedded += len(body["input"])
        self.embed_requests += 1
        self.models_seen.append(str(body.get("model")))
        rows = []
        for i, text in enumerate(body["input"]):
            pattern = next((p for p in PATTERNS if any(d in text for d in p.descriptions)), None)
            words = (pattern.definition if pattern else text).lower().split()
            vector = [0.0] * 64
            for word in words:
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            rows.append({"index": i, "embedding": vector})
        return {"data": rows, "usage": {"prompt_tokens": 10 * len(rows), "total_tokens": 10 * len(rows)}}

    def _analyse(self, user: str) -> dict:
        external = TRACE.search(user).group(1)
        failures = []
        for index, text in _steps(user):
            for p in PATTERNS:
                if p.phrase in text:
                    what = p.descriptions[
                        int(hashlib.md5(external.encode()).hexdigest(), 16) % len(p.descriptions)
                    ]
                    failures.append(
                        {
                            "what": what,
                            "steps": [index],
                            "quotes": [{"step": index, "text": p.phrase}],
                            "covered_by": [],
                        }
                    )
            if COVERED.phrase in text:
                failures.append(
                    {
                        "what": COVERED.descriptions[0],
                        "steps": [index],
                        "quotes": [{"step": index, "text": COVERED.phrase}],
                        "covered_by": [COVERED.code],
                    }
                )
            if text.startswith("Odd event:"):
                failures.append(
                    {
                        "what": text,
                        "steps": [index],
                        "quotes": [{"step": index, "text": text}],
                        "covered_by": [],
                    }
                )
        return {"failures": failures}

    def _name(self, user: str) -> dict:
        rows = ANALYSIS.findall(user)
        text = " ".join(r[2] for r in rows)
        pattern = max(PATTERNS, key=lambda p: sum(d in text for d in p.descriptions))
        examples = [{"trace": r[0], "step": int(r[3]), "quote": r[4]} for r in rows[:3]]
        if pattern.code == self.bad_quote and examples:
            examples[0]["quote"] = "The agent said something it never said."
        return {
            "code": pattern.code,
            "name": pattern.name,
            "definition": pattern.definition,
            "when_to_use": "When a step shows it.",
            "when_not_to_use": "When another mode explains the failure better.",
            "examples": examples,
        }

    def _gate(self, system: str, user: str, model: str) -> dict:
        external = TRACE.search(user).group(1)
        steps = _steps(user)
        modes = {}
        for code, _name, definition in MODE.findall(system):
            phrase = next((p.phrase for p in (*PATTERNS, COVERED) if p.code == code), None)
            if code == "FM-3.2":
                phrase = RESTATED.phrase
            found = [i for i, text in steps if phrase and phrase in text]
            present = bool(found)
            if "unclear" in definition.lower():
                present, found = _coin(model, external, code), steps[:1] and [steps[0][0]]
            modes[code] = {
                "present": present,
                "steps": found if present else [],
                "reason": "seen" if present else "",
            }
        return {"modes": modes, "summary": "judged by the stand-in"}


class DiscoveryStandIn(ChatStandIn):
    """The server (tests/chat_standin.py): every request answered by `DiscoveryModel`."""

    def __init__(self, model: DiscoveryModel | None = None) -> None:
        super().__init__(model or DiscoveryModel())
