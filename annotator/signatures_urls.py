"""Failure signatures pages, included under p/<slug>/ by annotator/urls.py."""

from django.urls import path

from annotator.views import signatures

urlpatterns = [
    path("", signatures.signatures_page, name="project-signatures"),
    path("<str:figure>.csv", signatures.signatures_csv, name="project-signatures-csv"),
]
