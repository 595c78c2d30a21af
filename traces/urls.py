from django.urls import path

from traces import views

urlpatterns = [
    path("", views.batch_list, name="batch-list"),
]
