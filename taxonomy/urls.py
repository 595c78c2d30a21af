from django.urls import path

from taxonomy import views

urlpatterns = [
    path("", views.taxonomy_list, name="taxonomy-list"),
    path("<slug:slug>/", views.taxonomy_detail, name="taxonomy-detail"),
]
