"""The base-URL guard judges an address by what it reaches, whatever the spelling: every IPv6 form that
carries an IPv4 address is judged by that address, port 0 is refused, and an allowed prefix is compared
after the path's dot segments are resolved (issues 27 and 32)."""

from __future__ import annotations

import pytest

from annotator.llm.urlguard import UnsafeBaseURL, check_base_url, is_allowed_prefix, pinned_target


def as_written(host, port):
    """What the system's resolver answers for an address written as the host: that address."""
    return [host]


@pytest.mark.parametrize(
    "url",
    [
        "http://[::127.0.0.1]/",  # IPv4-compatible loopback
        "http://[::a9fe:a9fe]/v1",  # IPv4-compatible metadata service
        "http://[::ffff:169.254.169.254]/",  # IPv4-mapped
        "http://[::ffff:a00:7]/",  # IPv4-mapped 10.0.0.7, in hex
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
        "http://[64:ff9b::127.0.0.1]/",  # NAT64 of loopback, dotted
        "http://[64:ff9b:1::c0a8:10a]/",  # local-use NAT64 of 192.168.1.10
        "http://[64:ff9b:1:ff::808:808]/",  # local-use NAT64, not the /96 form: ambiguous, refused
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[2002:a9fe:a9fe::1]/",  # 6to4 of the metadata service
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1 (bits inverted)
        "http://[2001:0:808:808:8000:63bf:5601:56fe]/",  # Teredo, client 169.254.169.1 via public server
        "http://[::]/",
        "http://[::1]:8000/",
        "http://127.0.0.1/",
        "http://0.0.0.0/",
    ],
)
def test_every_spelling_of_a_private_address_is_refused(url):
    with pytest.raises(UnsafeBaseURL, match="private, loopback or link-local"):
        check_base_url(url, [], resolver=as_written)


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::808:808]/v1",  # NAT64 of 8.8.8.8
        "http://[64:ff9b:1::808:808]/v1",
        "http://[2002:808:808::1]/v1",  # 6to4 of 8.8.8.8
        "http://[::ffff:8.8.8.8]/v1",
        "http://[2606:4700::1111]/v1",  # a native public IPv6 address
        "https://8.8.8.8/v1",
    ],
)
def test_the_same_forms_of_a_public_address_are_allowed(url):
    check_base_url(url, [], resolver=as_written)


def test_a_name_resolving_to_a_transition_form_of_a_private_address_is_refused():
    with pytest.raises(UnsafeBaseURL):
        check_base_url("https://api.example.org/v1", [], resolver=lambda h, p: ["64:ff9b::a9fe:a9fe"])
    with pytest.raises(UnsafeBaseURL):
        pinned_target("https://api.example.org/v1", [], resolver=lambda h, p: ["2002:7f00:1::"])


@pytest.mark.parametrize(
    "url", ["http://api.example.org:0/v1", "http://[64:ff9b::808:808]:0/", "http://8.8.8.8:00/"]
)
def test_port_zero_is_refused(url):
    with pytest.raises(UnsafeBaseURL, match="port"):
        check_base_url(url, [], resolver=lambda h, p: ["93.184.215.14"])


@pytest.mark.parametrize(
    "url",
    [
        "https://allowed.example/v1/../admin",
        "https://allowed.example/v1/./../admin",
        "https://allowed.example/v1/%2e%2e/admin",
        "https://allowed.example/v1/%2E%2E/admin",
        "https://allowed.example/v1/.%2e/admin",
        "https://allowed.example/v1/..%2fadmin",
        "https://allowed.example/v1/..%5cadmin",
        "https://allowed.example/v1/..\\admin",
        "https://allowed.example/v1/chat/../../admin",
        "https://allowed.example/v1/..",
    ],
)
def test_dot_segments_cannot_climb_out_of_an_allowed_prefix(url):
    allowed = ["https://allowed.example/v1/"]
    assert not is_allowed_prefix(url, allowed)
    with pytest.raises(UnsafeBaseURL):
        check_base_url(url, allowed, resolver=lambda h, p: ["10.0.0.7"])


def test_dot_segments_that_stay_inside_the_prefix_are_fine():
    allowed = ["https://allowed.example/v1/", "http://vllm:8000"]
    assert is_allowed_prefix("https://allowed.example/v1/./chat", allowed)
    assert is_allowed_prefix("https://allowed.example/v1/a/../chat", allowed)
    assert is_allowed_prefix("https://allowed.example/v1/%2e/chat?x=/../", allowed)
    assert is_allowed_prefix("http://vllm:8000/v1/../v2", allowed)  # the whole host is allowed


ISSUE_32_URLS = [
    "http://[::127.0.0.1]/v1",
    "http://[64:ff9b::a9fe:a9fe]/v1",
    "http://[2002:7f00:1::]/v1",
    "http://api.openai.com:0/v1",
]


@pytest.mark.parametrize("url", ISSUE_32_URLS)
def test_the_settings_page_and_the_api_refuse_the_issues_addresses_and_store_nothing(
    client, project, owner, llm_config, url
):
    """Issue 32's table: these were accepted and stored as a project's LLM endpoint."""
    from annotator.models import LLMConfig

    client.force_login(owner)
    form = {"base_url": url, "model": "m", "api_key_env": "", "temperature": "0", "max_tokens": "512",
            "requests_per_minute": "30", "token_cap": "1000", "timeout_seconds": "30",
            "max_trace_chars": "50000", "long_traces": "windows", "window_overlap_steps": "2"}  # fmt: skip
    page = client.post(f"/p/{project.slug}/llm/config/", form, HTTP_HX_REQUEST="true")
    assert page.status_code == 422 and "of the base URL" in page.content.decode()
    api = client.patch(
        f"/api/projects/{project.slug}/llm-settings/", {"base_url": url}, content_type="application/json"
    )
    assert api.status_code == 400 and "base_url" in api.json()["fields"]
    assert LLMConfig.objects.get(project=project).base_url == llm_config.base_url
