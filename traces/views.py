"""Staff pages for batches. The step viewer's partials are composed by the annotation pages."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render

from traces.access import require_importer
from traces.models import Batch


def batch_list(request):
    require_importer(request.user)
    page = Paginator(Batch.objects.select_related("imported_by").order_by("-created_at"), 50).get_page(
        request.GET.get("page")
    )
    return render(request, "traces/batch_list.html", {"page": page})
