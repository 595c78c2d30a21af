"""The `sig_mode` / `sig_source` filter: the traces the failure signatures count a mode on, under a label
source. It asks the signatures' own loader (annotator.services.signatures.load_trace_rows) which traces
those are, so a cell of the signatures' tables and the list it opens count the same traces by construction:
one definition of "labelled with this mode" (gold, union, agreed, one annotator, and gold+ fallbacks).

Kept apart from annotator.search.service: it loads the project's label rows (the signatures' cost, a few
queries whatever the number of traces) and narrows the list to the ids it finds.
"""

from __future__ import annotations

import numpy as np
from django.core.exceptions import PermissionDenied
from django.db.models import Q

from annotator.access import ProjectAccess
from annotator.search.filters import FilterError


def signature_q(access: ProjectAccess, code: str, source: str) -> Q:
    """Traces of the project whose labels under `source` include the mode `code` (FilterError names a bad
    source or an unknown mode; one annotator's labels are for owners and adjudicators, or that annotator)."""
    from annotator.services.signatures import SignatureQuery, SignatureQueryError, load_trace_rows

    try:
        query = SignatureQuery(source=source)
    except SignatureQueryError as error:
        raise FilterError("sig_source", str(error)) from None
    if query.annotator and query.annotator != access.user.get_username() and not access.is_reviewer:
        raise PermissionDenied(
            "sig_source: only owners and adjudicators may filter by one annotator's labels"
        )
    rows = load_trace_rows(access.project, query)
    codes = [mode.code for mode in rows.data.modes]
    if code not in codes:
        raise FilterError("sig_mode", f"no failure mode '{code}' in this project's taxonomy")
    chosen = rows.ids[np.asarray(rows.data.labels[:, codes.index(code)], dtype=bool)]
    return Q(pk__in=[int(pk) for pk in np.asarray(chosen)])
