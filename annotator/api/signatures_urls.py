"""Failure signatures API, included under projects/<slug>/ by annotator/api/urls.py."""

from django.urls import path

from annotator.api import signatures

urlpatterns = [
    path("signatures/", signatures.project_signatures, name="api-signatures"),
]
