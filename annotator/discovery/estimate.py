"""What a discovery run would cost before it spends anything: its requests and tokens, and with the
endpoint's prices, money.

The analyses' and the gate's prompts are built exactly as the run builds them (a long trace as one request
per window, with the LLM rater's settings) and counted as the client counts an answer without `usage`
(annotator.llm.client.estimate_tokens); the gate is counted with the current modes only (the candidates are
not known yet: each adds a few lines to its prompt). The naming requests are bounded by a third of the
induction sample (a group needs three traces), each counted at the size of its largest prompt. Completion
tokens are an upper bound: every request answered with `max_tokens`.

With an embeddings model set, the analyses' texts are embedded before naming. Those texts are drawn from
the analyses' answers, so their tokens are bounded by the analyses' completion tokens (`max_tokens` a
request), and their requests by MAX_FAILURES analyses a request in batches of EMBED_BATCH. They are priced
at the prompt price (an upper bound for the embedding models we know) and count against the run's token
cap like any other tokens.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from decimal import Decimal

from annotator.access import ProjectAccess
from annotator.discovery import induce
from annotator.discovery.embedding import EMBED_BATCH
from annotator.discovery.service import check_raters, check_size, parse_scope, scope_ids, split_sample
from annotator.llm.client import estimate_tokens, message_chars
from annotator.llm.windows import window_messages
from annotator.services.llm.config import current_prompt
from annotator.services.llm.estimate import CENT, MILLION, traces_with_steps
from annotator.services.llm.labeller import long_trace_options, project_taxonomy, prompt_trace_of
from annotator.services.llm.runs import LLMRunError, check_run_settings, endpoint_snapshot

NAMING_PROMPT_TOKENS = 3_000  # twelve analyses with their quotes, the taxonomy and the contract


@dataclass(frozen=True)
class DiscoveryEstimate:
    scope_traces: int
    induction_traces: int
    gate_traces: int
    raters: int
    analysis_requests: int
    max_naming_requests: int
    gate_requests: int
    prompt_tokens: int
    max_completion_tokens: int
    max_cost: Decimal | None
    max_embedding_requests: int = 0  # with an embeddings model only
    max_embedding_tokens: int = 0

    @property
    def requests(self) -> int:
        return (
            self.analysis_requests
            + self.max_naming_requests
            + self.gate_requests
            + self.max_embedding_requests
        )

    def as_dict(self) -> dict:
        return {
            **asdict(self),
            "requests": self.requests,
            "max_cost": None if self.max_cost is None else str(self.max_cost),
        }


def estimate_discovery(
    access: ProjectAccess,
    *,
    scope: str,
    raters,
    sample: int,
    gate_sample: int,
    model: str | None = None,
    kappa_min: float = 0.75,
    coverage_min: float = 0.70,
) -> DiscoveryEstimate:
    """The estimate of the run `do_start_discovery` would start with these arguments; DiscoveryError as it
    would. Calls nothing and writes nothing."""
    from annotator.discovery.service import DiscoveryError

    project = access.project
    try:
        config, model = check_run_settings(project, limit=None, model=model, check_url=False)
    except LLMRunError as error:
        raise DiscoveryError(str(error)) from None
    raters = check_raters(raters)
    kind, value = parse_scope(scope)
    ids = scope_ids(access, kind, value)
    induce_ids, held = split_sample(
        ids,
        check_size(sample, "sample"),
        check_size(gate_sample, "gate sample"),
        seed=f"{project.pk}:{scope}",
    )
    taxonomy, _ = project_taxonomy(project)
    options = long_trace_options(endpoint_snapshot(config, model))
    instructions = current_prompt(project).instructions
    prompt = gate_requests = analysis_requests = 0
    for trace, steps in traces_with_steps(induce_ids):
        for request in induce.analysis_requests(taxonomy, prompt_trace_of(trace, steps), **options):
            analysis_requests += 1
            prompt += estimate_tokens(message_chars(request.messages))
    for trace, steps in traces_with_steps(held):
        windows = window_messages(taxonomy, prompt_trace_of(trace, steps), instructions, **options)
        gate_requests += len(windows) * len(raters)
        prompt += len(raters) * sum(estimate_tokens(message_chars(w.messages)) for w in windows)
    naming = len(induce_ids) // induce.MIN_EXAMPLES
    prompt += naming * NAMING_PROMPT_TOKENS
    requests = analysis_requests + naming + gate_requests
    completion = requests * config.max_tokens
    embedding_requests = embedding_tokens = 0
    if config.embeddings_model.strip():
        embedding_tokens = analysis_requests * config.max_tokens
        embedding_requests = math.ceil(analysis_requests * induce.MAX_FAILURES / EMBED_BATCH)
    cost = None
    if config.prompt_price_per_million is not None and config.completion_price_per_million is not None:
        cost = (
            (prompt + embedding_tokens) * config.prompt_price_per_million / MILLION
            + completion * config.completion_price_per_million / MILLION
        ).quantize(CENT)
    return DiscoveryEstimate(
        scope_traces=len(ids),
        induction_traces=len(induce_ids),
        gate_traces=len(held),
        raters=len(raters),
        analysis_requests=analysis_requests,
        max_naming_requests=naming,
        gate_requests=gate_requests,
        prompt_tokens=prompt,
        max_completion_tokens=completion,
        max_cost=cost,
        max_embedding_requests=embedding_requests,
        max_embedding_tokens=embedding_tokens,
    )
