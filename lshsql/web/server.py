"""The HTTP server of `lshsql serve`: the standard library's ThreadingHTTPServer, one route per page kind,
and the one place a request's errors become a page with a status (400, 404, 500), never a traceback.

The standard library is enough here: five GET routes with query strings, HTML built as escaped strings, no
sessions and no assets; a web framework would add a dependency and little else.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, LshsqlError, ParamError, one_line
from lshsql.web import cluster, front, layout, pair, url
from lshsql.web.layout import BadRequest, NotFound, esc
from lshsql.web.site import Site, open_site

Query = dict[str, list[str]]
ROUTES: dict[str, Callable[[Site, Query], tuple[str, str]]] = {
    "/": front.render,
    "/url": url.render,
    "/capture": url.capture,
    "/pair": pair.render,
}
MAX_FIELDS = 50
# The browser runs nothing and loads nothing: a title that slipped through escaping could not act.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def make_server(
    work: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    resources: db.Resources | None = None,
    log: Callable[[str], None] | None = None,
) -> ThreadingHTTPServer:
    """A server for the finished work folder `work`, bound to host:port (port 0: a free one, see
    `server.server_address`) but not yet serving: call `serve_forever()`, then `stop_queries()` (its
    requests' DuckDB queries stopped and waited for) and `server_close()`.
    A missing or unfinished work folder, or an address that cannot be bound, is a one-line InputError.
    `log` receives one line per request (none by default)."""
    site = open_site(work, resources)

    class Handler(_Handler):
        pass

    Handler.site, Handler.log_line = site, staticmethod(log or (lambda line: None))
    try:
        server = _Server((host, port), Handler)
    except OSError as e:
        raise InputError(f"cannot listen on {host}:{port}: {e.strerror or one_line(e)}") from None
    Handler.hosts = _hosts(host, server.server_address[1])
    return server


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _hosts(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a request may carry: the address served, by any loopback name when it is one (a
    page of another site that a browser is led to send here by a rebound DNS name carries its own name);
    None, any, when serving on every interface."""
    if host in ("", "0.0.0.0", "::"):
        return None
    names = LOOPBACK if host in LOOPBACK else (host,)
    return frozenset(f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names)


def address(server: ThreadingHTTPServer) -> str:
    """The URL a server answers at."""
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    return f"http://{shown}:{port}/"


class _Server(ThreadingHTTPServer):
    """Threads that do not hold up stopping, and a dropped connection said in one line, not a traceback.
    Its requests' queries can be stopped and waited for (stop_queries): a thread still inside DuckDB when
    Python exits aborts the process."""

    daemon_threads = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.stopping = False
        self._in_queries = 0
        self._idle = threading.Condition()

    @contextmanager
    def answering(self) -> Iterator[bool]:
        """Around a request's queries: yields False once the server is stopping (answer without them)."""
        with self._idle:
            open_ = not self.stopping
            self._in_queries += open_
        if not open_:
            yield False
            return
        try:
            yield True
        finally:
            with self._idle:
                self._in_queries -= 1
                self._idle.notify_all()

    def stop_queries(self, timeout: float = 10.0) -> bool:
        """Start no more queries, stop the running ones and wait, at most `timeout` seconds, until no
        request is inside one; False when some still were."""
        deadline = time.monotonic() + timeout
        with self._idle:
            self.stopping = True
            while self._in_queries:
                db.interrupt_all()  # again each round: a request may have opened a connection since
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(min(0.1, remaining))
        return True

    def handle_error(self, request: object, client_address: tuple) -> None:
        if self.stopping:  # a client's connection closed as the server stops: expected, nothing to say
            return
        error = sys.exc_info()[1]
        print(
            f"lshsql serve: {client_address[0]}: {type(error).__name__}: {one_line(error or '')}",
            file=sys.stderr,
        )


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    site: Site
    log_line: Callable[[str], None]
    hosts: frozenset[str] | None = None
    server_version = "lshsql-serve"
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        status, html = self._answer()
        data = html.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_HEAD = do_GET  # noqa: N815

    def _answer(self) -> tuple[int, str]:
        with self.server.answering() as open_:
            if not open_:
                return _error(HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping", str(self.site.work))
            return self._answer_open()

    def _answer_open(self) -> tuple[int, str]:
        parts = urlsplit(self.path)
        work_name = str(self.site.work)
        try:
            if self.hosts is not None and self.headers.get("Host", "").lower() not in self.hosts:
                raise BadRequest("this server answers requests for its own address only (Host header)")
            query = _query(parts.query)
            if parts.path.startswith("/cluster/"):
                title, body = cluster.render(self.site, parts.path.removeprefix("/cluster/"), query)
            elif parts.path in ROUTES:
                title, body = ROUTES[parts.path](self.site, query)
            else:
                raise NotFound(f"no page {parts.path}")
            return HTTPStatus.OK, layout.page(title, body, work_name)
        except (BadRequest, ParamError) as e:
            return _error(HTTPStatus.BAD_REQUEST, str(e), work_name)
        except NotFound as e:
            return _error(HTTPStatus.NOT_FOUND, str(e), work_name)
        except LshsqlError as e:
            return _error(HTTPStatus.INTERNAL_SERVER_ERROR, str(e), work_name)
        except db.duckdb.InterruptException:  # Ctrl-C stops the server and the queries it runs
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping", work_name)
        except Exception as e:  # noqa: BLE001 - the boundary of a request: one line, no traceback
            print(f"lshsql serve: error: {type(e).__name__}: {one_line(e, 300)}", file=sys.stderr)
            return _error(
                HTTPStatus.INTERNAL_SERVER_ERROR, "the query failed; see the server's output", work_name
            )

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        self.log_line(f"{self.address_string()} {format % args}")


def _query(text: str) -> dict[str, list[str]]:
    """The parameters of a query string; BadRequest for one with too many fields."""
    try:
        return parse_qs(text, keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except ValueError as e:
        raise BadRequest(one_line(e)) from None


def _error(status: HTTPStatus, message: str, work_name: str) -> tuple[int, str]:
    body = (
        f'<h1>{status.value} {esc(status.phrase)}</h1><p class="error">{esc(one_line(message, 500))}</p>'
        '<p><a href="/">the clusters</a></p>'
    )
    return status.value, layout.page(f"{status.value} {status.phrase}", body, work_name)
