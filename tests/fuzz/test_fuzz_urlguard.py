"""Generated URLs over the LLM base-URL guard (annotator.llm.urlguard).

Properties: every IPv6 transition form (IPv4-mapped and -compatible, NAT64 and local-use NAT64, 6to4,
Teredo) of a private, loopback, link-local, shared or metadata IPv4 address is refused, however it is
spelt; the same forms of a public address are allowed; an allowed prefix never admits a URL whose path,
once its dot segments are resolved (plain or percent-encoded), leaves the prefix; and no input makes the
guard raise anything but its own UnsafeBaseURL. Profiles and replay: tests/fuzz/conftest.py and
docs/security.md.
"""

from __future__ import annotations

import contextlib
import ipaddress
import posixpath
import re

from hypothesis import given
from hypothesis import strategies as st

from annotator.llm.urlguard import UnsafeBaseURL, check_base_url, is_allowed_prefix, pinned_target

PRIVATE_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",  # link-local, the cloud metadata service
        "100.64.0.0/10",  # shared (carrier-grade NAT)
        "0.0.0.0/8",
    )
]


@st.composite
def private_v4(draw) -> ipaddress.IPv4Address:
    network = draw(st.sampled_from(PRIVATE_V4))
    offset = draw(st.integers(0, network.num_addresses - 1))
    return network.network_address + offset


PUBLIC_V4 = st.ip_addresses(v=4).filter(lambda ip: ip.is_global and not ip.is_multicast)
BITS = st.integers(0, 2**80 - 1)


@st.composite
def carried(draw, v4: ipaddress.IPv4Address) -> ipaddress.IPv6Address:
    """An IPv6 address that reaches `v4`, in one of the transition forms."""
    value = int(v4)
    form = draw(st.sampled_from(["mapped", "compatible", "nat64", "nat64-local", "6to4", "teredo"]))
    if form == "mapped":
        return ipaddress.IPv6Address((0xFFFF << 32) | value)
    if form == "compatible":
        return ipaddress.IPv6Address(value)
    if form == "nat64":
        return ipaddress.IPv6Address((0x64FF9B << 96) | value)
    if form == "nat64-local":
        return ipaddress.IPv6Address((0x64FF9B0001 << 80) | value)
    if form == "6to4":
        return ipaddress.IPv6Address((0x2002 << 112) | (value << 80) | draw(BITS))
    server = draw(PUBLIC_V4)  # Teredo: a public server, and the client's address with its bits inverted
    flags_and_port = draw(st.integers(0, 2**32 - 1))
    return ipaddress.IPv6Address(
        (0x20010000 << 96) | (int(server) << 64) | (flags_and_port << 32) | (~value & 0xFFFFFFFF)
    )


@st.composite
def spelt(draw, ip: ipaddress.IPv6Address) -> str:
    """`ip` as a URL host: compressed, exploded, upper case, or with the IPv4 part dotted."""
    text = draw(st.sampled_from([ip.compressed, ip.exploded, ip.compressed.upper()]))
    if draw(st.booleans()) and int(ip) >> 32 in (0, 0xFFFF):
        text = ("::ffff:" if int(ip) >> 32 else "::") + str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return text


@st.composite
def url_to(draw, host: str) -> str:
    scheme = draw(st.sampled_from(["http", "https"]))
    port = draw(st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")))
    path = draw(st.sampled_from(["", "/", "/v1", "/v1/chat"]))
    return f"{scheme}://[{host}]{port}{path}"


def as_written(host: str, port: int) -> list[str]:
    """What the system's resolver answers for an address written as the host."""
    return [host]


@st.composite
def private_urls(draw) -> str:
    return draw(url_to(draw(spelt(draw(carried(draw(private_v4())))))))


@st.composite
def public_urls(draw) -> str:
    return draw(url_to(draw(spelt(draw(carried(draw(PUBLIC_V4)))))))


@given(url=private_urls())
def test_every_transition_form_of_a_private_address_is_refused(url):
    for check in (check_base_url, pinned_target):
        try:
            check(url, [], resolver=as_written)
        except UnsafeBaseURL:
            continue
        raise AssertionError(f"{url} was allowed by {check.__name__}")


@given(url=public_urls())
def test_the_same_forms_of_a_public_address_are_allowed(url):
    check_base_url(url, [], resolver=as_written)
    assert pinned_target(url, [], resolver=as_written).url


@given(
    url=st.one_of(
        st.text(max_size=60),
        st.builds(
            lambda s, rest: f"{s}://{rest}",
            st.sampled_from(["http", "https", "ftp", ""]),
            st.text(max_size=40),
        ),
    ),
    answers=st.one_of(
        st.lists(st.ip_addresses().map(str), max_size=3),
        st.lists(st.text(max_size=12), max_size=2),
        st.none(),
    ),
    prefixes=st.lists(st.text(max_size=30), max_size=2),
)
def test_no_input_raises_anything_but_the_guards_own_error(url, answers, prefixes):
    def resolver(host, port):
        if answers is None:
            raise OSError("no such host")
        return answers

    for check in (check_base_url, pinned_target):
        with contextlib.suppress(UnsafeBaseURL):
            check(url, prefixes, resolver=resolver)
    is_allowed_prefix(url, prefixes)


SEGMENT = st.sampled_from(
    ["..", ".", "%2e%2e", "%2E.", ".%2e", "%2e", "a", "chat", "", "..%2f", "..%5c", "..\\"]
)


def _resolved(path: str) -> str:
    """An independent reading of a path as a lenient server might: encoded dots and slashes and backslashes
    decoded, then dot segments resolved."""
    decoded = re.sub("%2f|%5c", "/", re.sub("%2e", ".", path, flags=re.I), flags=re.I).replace("\\", "/")
    return posixpath.normpath("/" + decoded.lstrip("/"))


@given(segments=st.lists(SEGMENT, max_size=6), query=st.sampled_from(["", "?x=/../", "#../"]))
def test_an_allowed_prefix_never_admits_a_path_that_leaves_it(segments, query):
    prefix = "https://allowed.example/v1/"
    url = prefix + "/".join(segments) + query
    if is_allowed_prefix(url, [prefix]):
        path = url[len("https://allowed.example") :].split("?")[0].split("#")[0]
        resolved = _resolved(path)
        assert resolved == "/v1" or resolved.startswith("/v1/"), (url, resolved)
