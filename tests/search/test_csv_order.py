"""A search downloaded as CSV lists its traces in the order of its pages: best match first."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from traces.models import Step


def test_a_search_downloads_in_rank_order_as_its_pages_show_it(client, world, owner):
    # web-2 (the last id) says "kubectl" most: it ranks first, the two others tie and keep id order.
    Step.objects.filter(trace=world.started, index__in=[0, 1]).update(content="kubectl kubectl kubectl apply")
    client.force_login(owner)
    page = client.get("/api/projects/demo-project/traces/?q=kubectl").json()["results"]
    assert [row["external_id"] for row in page] == ["web-2", "sre-1", "sre-2"]

    response = client.get("/p/demo-project/traces/csv/?q=kubectl")
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [line.split(",")[1] for line in lines[1:]] == ["web-2", "sre-1", "sre-2"]
    reversed_csv = b"".join(
        client.get("/p/demo-project/traces/csv/?q=kubectl&ordering=rank").streaming_content
    )
    assert [line.split(",")[1] for line in reversed_csv.decode().splitlines()[1:]] == [
        "sre-1",
        "sre-2",
        "web-2",
    ]

    out = StringIO()
    call_command("traces", "demo-project", "--q", "kubectl", "--csv", stdout=out)
    assert out.getvalue().splitlines() == lines
