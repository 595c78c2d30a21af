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
"""

from __future__ import annotations

import ipaddress
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
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeBaseURL("Use an http:// or https:// URL with a host name.")
    if parts.username is not None or parts.password is not None:
        raise UnsafeBaseURL("A base URL cannot carry a user name or password; store the API key instead.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeBaseURL("The port of the base URL is not a number from 0 to 65535.") from None
    return parts, port


def is_allowed_prefix(url: str, prefixes: Iterable[str]) -> bool:
    """`url` starts with an allowed prefix at a boundary: "http://vllm:8000" allows "http://vllm:8000/v1"
    but not "http://vllm:80001/v1" nor "http://vllm:8000.example.org/v1"."""
    for prefix in prefixes:
        prefix = prefix.strip()
        if not prefix or not url.startswith(prefix):
            continue
        rest = url[len(prefix) :]
        if not rest or prefix.endswith("/") or rest[0] in "/?#":
            return True
    return False


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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
    if not all(_is_public(address) for address in addresses):
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
