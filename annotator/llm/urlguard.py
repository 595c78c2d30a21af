"""Which base URLs the LLM rater may call: public hosts only, unless the administrator allows a prefix.

A project owner types the base URL, and the worker POSTs to it (with the API key, and with trace text). Left
open, that lets an owner make the worker call any internal address (the database's admin port, a cloud
metadata service, another container). So a URL is refused when any address its host resolves to is not a
global one (private, loopback, link-local, shared, reserved, multicast, ...), unless it starts with one of the
prefixes in the administrator's `LLM_ALLOWED_BASE_URLS` (how a local vLLM or Ollama is allowed).

The check runs when the settings are saved and again before every request (DNS can change between the two),
and `pinned_target` connects to the very address it checked, so a name that answers a public address to the
check and a private one to the connection (DNS rebinding) gains nothing. No Django here: the allowed prefixes
are passed in.

An address is judged by what it means, not how it is spelt: an IPv6 address that carries an IPv4 one (an
IPv4-mapped or IPv4-compatible address, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4 ``2002::/16``,
Teredo ``2001::/32``) is judged by the IPv4 address it reaches, so ``http://[64:ff9b::a9fe:a9fe]/`` is the
metadata service it translates to. Port 0 is refused (no server listens there; a client may treat it as
"any"). An allowed prefix is compared with the URL's path after its dot segments are resolved, spelt
plainly or percent-encoded, so ``https://allowed.example/v1/../admin`` does not pass for ``.../v1/``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

Resolver = Callable[[str, int], Sequence[str]]


class UnsafeBaseURL(ValueError):
    """The base URL is refused; the message is safe to show (it names no resolved address)."""


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (IPv4 and IPv6), as text."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _parts(url: str):
    try:
        parts = urlsplit(url)
    except ValueError:  # "http://[": an unclosed IPv6 bracket, among others
        raise UnsafeBaseURL("Use an http:// or https:// URL with a host name.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeBaseURL("Use an http:// or https:// URL with a host name.")
    if parts.username is not None or parts.password is not None:
        raise UnsafeBaseURL("A base URL cannot carry a user name or password; store the API key instead.")
    try:
        port = parts.port
    except ValueError:
        raise UnsafeBaseURL("The port of the base URL is not a number from 1 to 65535.") from None
    if port == 0:
        raise UnsafeBaseURL("The port of the base URL is not a number from 1 to 65535.")
    return parts, port or (443 if parts.scheme == "https" else 80)


def is_allowed_prefix(url: str, prefixes: Iterable[str]) -> bool:
    """`url` starts with an allowed prefix at a boundary: "http://vllm:8000" allows "http://vllm:8000/v1"
    but not "http://vllm:80001/v1" nor "http://vllm:8000.example.org/v1". The path is compared with its dot
    segments resolved, as it is written and as a lenient server reads it (``%2e``, ``%2f`` and backslashes
    decoded, repeated slashes merged): both readings must stay within the prefix."""
    readings = _readings(url)
    for prefix in prefixes:
        allowed = _readings(prefix.strip())[0]
        if readings and allowed and all(_starts_at_boundary(reading, allowed) for reading in readings):
            return True
    return False


def _starts_at_boundary(url: str, prefix: str) -> bool:
    if not url.startswith(prefix):
        return False
    rest = url[len(prefix) :]
    return not rest or prefix.endswith("/") or rest[0] in "/?#"


_ENCODED_DOT = re.compile(r"%2e", re.IGNORECASE)
_ENCODED_SLASH = re.compile(r"%2f|%5c|\\", re.IGNORECASE)


def _readings(url: str) -> tuple[str, ...]:
    """`url` with its path's dot segments removed, as written and with encoded dots and slashes decoded;
    none for what is not a URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    # A lenient server also merges repeated slashes (nginx does by default): "/v1//.." is "/".
    decoded = re.sub("/{2,}", "/", _ENCODED_SLASH.sub("/", _ENCODED_DOT.sub(".", parts.path)))
    return tuple(parts._replace(path=_remove_dot_segments(path)).geturl() for path in (parts.path, decoded))


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: "/v1/./a/../b" -> "/v1/b", "/v1/.." -> "/", never above the root."""
    segments = path.split("/")
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment in (".", ".."):
            if segment == ".." and len(out) > 1:
                out.pop()
            if last:
                out.append("")
            continue
        out.append(segment)
    return "/".join(out)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_LOW32 = 0xFFFFFFFF


def carried_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 transition form reaches (None when it carries none): IPv4-mapped,
    IPv4-compatible (``::a.b.c.d``, which also covers ``::`` and ``::1``), NAT64, 6to4, and Teredo's server
    and client (the client's bits are inverted in the address; ``ipaddress`` undoes that)."""
    value = int(ip)
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if value >> 32 == 0:
        return [ipaddress.IPv4Address(value)]
    if ip in _NAT64:
        return [ipaddress.IPv4Address(value & _LOW32)]
    if ip in _NAT64_LOCAL:
        # A local-use NAT64 prefix may be /48 to /96 (RFC 6052 places the IPv4 differently for each): only the
        # /96 form (zeros between) is unambiguous; any other is judged as 0.0.0.0, i.e. refused.
        middle = (value >> 32) & ((1 << 48) - 1)
        return [ipaddress.IPv4Address(value & _LOW32 if middle == 0 else 0)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return None


def _is_public(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        carried = carried_ipv4(ip)
        if carried is not None:
            return all(_is_public(str(v4)) for v4 in carried)
    return ip.is_global and not ip.is_multicast


def public_addresses(host: str, port: int, *, resolver: Resolver | None = None) -> list[str]:
    """The addresses of `host`, all of them global; else UnsafeBaseURL (one private answer is enough to
    refuse: the connection might use it)."""
    try:
        addresses = list((resolver or resolve)(host, port))
    except (OSError, UnicodeError):
        raise UnsafeBaseURL(f"The host {host!r} of the base URL cannot be resolved.") from None
    if not addresses:
        raise UnsafeBaseURL(f"The host {host!r} of the base URL cannot be resolved.")
    if not all(_is_public(address) for address in addresses):  # an answer that is no address is not public
        raise UnsafeBaseURL(
            f"The host {host!r} of the base URL is a private, loopback or link-local address. "
            "An administrator can allow it by adding the URL to LLM_ALLOWED_BASE_URLS."
        )
    return addresses


def check_base_url(url: str, allowed_prefixes: Iterable[str], *, resolver: Resolver | None = None) -> None:
    """Raise UnsafeBaseURL unless `url` is allowed by prefix or its host resolves to public addresses only."""
    parts, port = _parts(url)
    if is_allowed_prefix(url, allowed_prefixes):
        return
    public_addresses(parts.hostname, port, resolver=resolver)


@dataclass(frozen=True)
class Target:
    """Where one request goes: the URL (its host replaced by the checked address unless allowed by prefix),
    the Host header and TLS server name that keep virtual hosting and certificate checks right."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


def pinned_target(url: str, allowed_prefixes: Iterable[str], *, resolver: Resolver | None = None) -> Target:
    """Check `url` now and return the request target bound to the address that passed the check."""
    parts, port = _parts(url)
    if is_allowed_prefix(url, allowed_prefixes):
        return Target(url)
    host = parts.hostname
    address = public_addresses(host, port, resolver=resolver)[0]
    shown = f"[{address}]" if ":" in address else address
    netloc = f"{shown}:{parts.port}" if parts.port else shown
    host_header = parts.netloc  # no userinfo (refused above): host[:port] as the user typed it
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    return Target(parts._replace(netloc=netloc).geturl(), {"Host": host_header}, extensions)
