"""URL canonicalization and site membership: pure functions, no I/O, one small function per rule."""

from __future__ import annotations

import functools
import ipaddress
import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

from w3lib.url import safe_url_string

if TYPE_CHECKING:
    import tldextract

__all__ = [
    "TRACKING_PARAMS", "UrlError", "UrlOptions", "canonicalize", "host_of", "is_internal", "link_kind",
    "registered_domain", "resolve",
]  # fmt: skip

DEFAULT_PORTS = {"http": 80, "https": 443}
WEB_SCHEMES = frozenset(DEFAULT_PORTS)

TRACKING_PARAMS: frozenset[str] = frozenset({
    "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id", "utm_name",
    "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "twclid", "ttclid",
    "mc_cid", "mc_eid", "yclid", "_ga", "_gl", "igshid", "mkt_tok", "_hsenc", "_hsmi",
    "oly_anon_id", "oly_enc_id", "vero_id", "wickedid", "li_fat_id",
})  # fmt: skip

_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_ESCAPE_OR_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})?")
_HOST_CHARS = re.compile(r"[a-z0-9_.-]+")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_SKIPPED_SCHEMES = {"javascript": "javascript", "mailto": "mailto", "tel": "tel", "data": "data"}


class UrlError(ValueError):
    """A URL that cannot be canonicalized; the message is a short reason."""


@dataclass(frozen=True)
class UrlOptions:
    """Optional canonicalization rules, off by default because they can change what a URL points to."""

    sort_query: bool = False
    strip_params: frozenset[str] = frozenset()


def strip_whitespace(url: str) -> str:
    """Strip C0 controls and spaces around a URL and drop tabs and newlines inside it, as browsers do."""
    return url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)


def backslashes_to_slashes(url: str) -> str:
    """Read '\\' as '/' before the query and fragment, as browsers do for http(s) URLs."""
    end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return url[:end].replace("\\", "/") + url[end:]


def normalize_scheme(scheme: str) -> str:
    """Lowercase the scheme and accept only http and https, the only schemes a web crawl fetches."""
    scheme = scheme.lower()
    if scheme not in WEB_SCHEMES:
        raise UrlError(f"unsupported scheme {scheme!r}" if scheme else "missing scheme")
    return scheme


def normalize_host(host: str) -> str:
    """Lowercase, punycode and validate a host and drop its trailing dots, so equal hosts compare equal."""
    if host.startswith("[") and host.endswith("]"):
        return normalize_ipv6(host[1:-1])
    host = idna_to_ascii(host.rstrip(".")).rstrip(".")
    if not host:
        raise UrlError("missing host")
    if not _HOST_CHARS.fullmatch(host):
        raise UrlError(f"invalid host {host!r}")
    return host


def normalize_ipv6(host: str) -> str:
    """Write an IPv6 host in its compressed lowercase form, in brackets as it appears in a URL."""
    try:
        return f"[{ipaddress.IPv6Address(host).compressed}]"
    except ValueError as exc:
        raise UrlError("invalid IPv6 host") from exc


def idna_to_ascii(host: str) -> str:
    """Lowercase a host and punycode its non-ASCII labels the way browsers do (UTS #46, non-transitional)."""
    if host.isascii():
        return host.lower()
    import idna  # only non-ASCII hosts need it

    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except UnicodeError:
        pass
    try:  # IDNA 2003 still accepts what IDNA 2008 forbids and browsers allow, e.g. symbols like U+2603
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise UrlError(f"invalid international host {host!r}") from exc


def normalize_port(port: int | None, scheme: str) -> str:
    """Return the ':port' suffix of the netloc, empty when the port is absent or the scheme's default."""
    return "" if port is None or port == DEFAULT_PORTS[scheme] else f":{port}"


def normalize_percent_escapes(text: str) -> str:
    """Decode escaped unreserved characters, uppercase other escapes and escape a stray '%' as '%25'."""
    return _ESCAPE_OR_PERCENT.sub(_normalize_escape, text)


def _normalize_escape(match: re.Match[str]) -> str:
    """Replacement for one '%XX' escape or one stray '%' in normalize_percent_escapes."""
    hex_digits = match.group(1)
    if hex_digits is None:
        return "%25"
    char = chr(int(hex_digits, 16))
    return char if char in _UNRESERVED else "%" + hex_digits.upper()


def collapse_slashes(path: str) -> str:
    """Collapse runs of '/' in a path into one, since crawled links often double them by mistake."""
    return re.sub(r"/{2,}", "/", path)


def remove_dot_segments(path: str) -> str:
    """Resolve '.' and '..' segments of an absolute path (RFC 3986 section 5.2.4)."""
    segments = path.split("/")
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if len(kept) > 1:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")
    return "/".join(kept)


def empty_path_to_slash(path: str) -> str:
    """Give a URL with no path the path '/', which is what an HTTP client requests for it."""
    return path or "/"


def strip_query_params(query: str, names: frozenset[str]) -> str:
    """Remove the parameters whose names are in names (case-insensitive), e.g. tracking parameters."""
    lowered = {name.lower() for name in names}
    return "&".join(p for p in query.split("&") if p and p.partition("=")[0].lower() not in lowered)


def sort_query_params(query: str) -> str:
    """Sort query parameters by name, keeping the order of repeated names and parameters without values."""
    return "&".join(sorted((p for p in query.split("&") if p), key=lambda p: p.partition("=")[0]))


def canonicalize(url: str, options: UrlOptions = UrlOptions()) -> str:
    """Return the canonical form of an absolute http(s) URL, so that equivalent URLs compare equal."""
    parts = _split(backslashes_to_slashes(strip_whitespace(url)))
    scheme = normalize_scheme(parts.scheme)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (
        (f"{userinfo}@" if userinfo.strip(":") else "")
        + normalize_host(_host(parts))
        + normalize_port(_port(parts), scheme)
    )
    try:
        quoted = _split(safe_url_string(urlunsplit((scheme, netloc, parts.path, parts.query, ""))))
    except ValueError as exc:
        raise UrlError("cannot percent-encode URL") from exc
    path = empty_path_to_slash(remove_dot_segments(collapse_slashes(normalize_percent_escapes(quoted.path))))
    query = normalize_percent_escapes(quoted.query)
    if options.strip_params:
        query = strip_query_params(query, options.strip_params)
    if options.sort_query:
        query = sort_query_params(query)
    return urlunsplit((scheme, quoted.netloc, path, query, ""))


def _split(url: str) -> SplitResult:
    """urlsplit that raises UrlError instead of ValueError."""
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise UrlError(f"malformed URL ({exc})") from exc


def _host(parts: SplitResult) -> str:
    """The host of a split URL as written in it: an IPv6 literal keeps its brackets."""
    bracketed = parts.netloc.rpartition("@")[2].startswith("[")
    return f"[{parts.hostname}]" if bracketed else parts.hostname or ""


def _port(parts: SplitResult) -> int | None:
    """The port of a split URL, raising UrlError when it is not a number in 0..65535."""
    try:
        return parts.port
    except ValueError as exc:
        raise UrlError("invalid port") from exc


def _scheme_of(url: str) -> str:
    """The lowercased scheme of a URL or href, '' for a relative reference."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else ""


def link_kind(href: str) -> str:
    """Classify a raw href as 'web' or as the reason to skip it, before resolving it."""
    href = strip_whitespace(href)
    if not href:
        return "empty"
    if href.startswith("#"):
        return "fragment_only"
    scheme = _scheme_of(href)
    if not scheme or scheme in WEB_SCHEMES:
        return "web"
    return _SKIPPED_SCHEMES.get(scheme, "other_scheme")


def resolve(href: str, base: str, options: UrlOptions = UrlOptions()) -> str | None:
    """Join an href against its page's URL and canonicalize the result; None when it is not a web link."""
    folder = _join_folder(href, base)
    if folder is None:
        return _resolve(href, base, options)
    key = (folder, href, options)
    found = _resolved.get(key, _MISSING)
    if found is _MISSING:
        found = _resolve(href, base, options)
        if len(_resolved) >= _RESOLVED_SIZE:
            _resolved.clear()
        _resolved[key] = found
    return found


def _resolve(href: str, base: str, options: UrlOptions) -> str | None:
    if link_kind(href) != "web":
        return None
    try:
        joined = urljoin(*(backslashes_to_slashes(strip_whitespace(u)) for u in (base, href)))
    except ValueError as exc:
        raise UrlError(f"malformed link ({exc})") from exc
    if _scheme_of(joined) not in WEB_SCHEMES | {""}:  # a relative href on an ftp: or file: page
        return None
    return _canonicalize_cached(joined, options)


def _join_folder(href: str, base: str) -> str | None:
    """The part of `base` that resolving `href` against it reads (scheme, host and the folder of its path),
    when that is all it reads: an href with no scheme, host, whitespace or backslash whose path is not
    empty (a path or relative path; urljoin then takes neither the base's last segment nor its query).
    None for any other href or base. Every page of a folder shares its links' resolutions this way."""
    if _FOLDER_HREF.fullmatch(href) is None:
        return None
    return _base_folder(base)


@functools.lru_cache(maxsize=2**10)
def _base_folder(base: str) -> str | None:
    """`scheme://host/folder/` of an absolute base URL with no whitespace or backslash, else None."""
    found = _BASE_FOLDER.fullmatch(base)
    return found[1] if found else None


_FOLDER_HREF = re.compile(r"(?!//)[^\x00-\x20\x7f:?#;\\][^\x00-\x20\x7f:\\]*")
_BASE_FOLDER = re.compile(
    r"([A-Za-z][A-Za-z0-9+.-]*://[^/?#\x00-\x20\x7f\\]*/(?:[^?#\x00-\x20\x7f\\]*/)?)[^\x00-\x20\x7f\\]*"
)
_MISSING = object()
_RESOLVED_SIZE = 2**16  # resolutions remembered; emptied when full
_resolved: dict[tuple[str, str, UrlOptions], str | None] = {}
# Links repeat across a site's pages (navigation, footers): each is canonicalized once, then cached.
_canonicalize_cached = functools.lru_cache(maxsize=2**16)(canonicalize)


def host_of(url: str) -> str:
    """Return the canonical host of a URL of any scheme (lowercase, punycode, no port or userinfo)."""
    return normalize_host(_host(_split(backslashes_to_slashes(strip_whitespace(url)))))


@functools.cache
def _psl_extractor() -> tldextract.TLDExtract:
    """Build the Public Suffix List extractor once per process from the bundled list: no download or cache."""
    import tldextract  # imports requests; kept out of module import for extraction workers

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.lru_cache(maxsize=2**16)
def registered_domain(url_or_host: str) -> str:
    """Return the registrable domain (eTLD+1) of a URL or host, so that a site's subdomains group together."""
    text = strip_whitespace(url_or_host)
    return _domain_of_host(host_of(text if "://" in text or text.startswith("//") else f"//{text}"))


@functools.lru_cache(maxsize=2**14)
def _domain_of_host(host: str) -> str:
    """registered_domain of a canonical host; cached, since a crawl has far fewer hosts than links."""
    if host.startswith("[") or host.rpartition(".")[2].isdigit():  # IPv6, or IPv4 as browsers tell it
        return host
    extracted = _psl_extractor()(host)
    if extracted.suffix:  # a host that is itself a public suffix (co.uk) is its own site
        return f"{extracted.domain}.{extracted.suffix}" if extracted.domain else host
    # tldextract finds no suffix for TLDs missing from the list (example, test, localhost, internal, ...);
    # the list's default rule '*' makes the last label the suffix: docs.python.example -> python.example.
    return ".".join(host.split(".")[-2:])


def is_internal(source_url: str, target_url: str) -> bool:
    """Tell whether a link stays on its page's site: both URLs have the same registered domain."""
    return registered_domain(source_url) == registered_domain(target_url)
