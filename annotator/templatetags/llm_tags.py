"""{% llm_opinion assignment %}: the LLM raters' labels on the annotate page, for an annotator who may see them.

A template tag (rather than view context) so the annotate page needs one line and the blindness rule stays in
annotator.services.llm.opinion: for an unsubmitted assignment it renders nothing and costs no query.
"""

from __future__ import annotations

from django import template

from annotator.services.llm.opinion import llm_opinions_for

register = template.Library()


@register.inclusion_tag("annotator/partials/_llm_opinion.html")
def llm_opinion(assignment) -> dict:
    return {"opinions": llm_opinions_for(assignment) if assignment is not None else None}
