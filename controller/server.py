"""Health (`/healthz`, `/readyz`) and Prometheus metrics over stdlib HTTP servers."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], tuple[bool, str]]
# A route answers (code, content type, body) for the request's query parameters.
Route = Callable[[dict[str, list[str]]], tuple[int, str, bytes]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hung up before the answer (a probe that timed out, a scraper that gave
        # up) is no error of ours: socketserver would print a traceback to stderr for it.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def _handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            route = routes.get(path)
            if route is None:
                code, ctype, body = 404, "text/plain", b"not found\n"
            else:
                code, ctype, body = route(parse_qs(query))
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # probes every few seconds would drown the log

    return Handler


def _probe(check: Check) -> Route:
    def run(_query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        ok, detail = check()
        text = ("ok" if ok else f"not ok: {detail}") + "\n"
        return (200 if ok else 503), "text/plain; charset=utf-8", text.encode()

    return run


class HttpEndpoints:
    """Starts the health server and the metrics server (same port allowed: then one server)."""

    def __init__(
        self,
        bind: str,
        health_port: int | None,
        metrics_port: int | None,
        healthz: Check,
        readyz: Check,
        registry: CollectorRegistry,
    ) -> None:
        health_routes = {"/healthz": _probe(healthz), "/readyz": _probe(readyz)}

        def metrics(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
            # `name[]=...` selects metrics, as in prometheus_client's own handler: a tool
            # polling one counter many times a second does not pay for all of them.
            names = query.get("name[]")
            source = registry.restricted_registry(names) if names else registry
            return 200, CONTENT_TYPE_LATEST, generate_latest(source)

        self._servers: list[_Server] = []
        self.health_port: int | None = None
        self.metrics_port: int | None = None
        if health_port is not None:
            routes = dict(health_routes)
            if metrics_port is not None and metrics_port == health_port and health_port != 0:
                routes["/metrics"] = metrics
                metrics_port = None
            server = _Server((bind, health_port), _handler(routes))
            self._servers.append(server)
            self.health_port = int(server.server_address[1])
            if "/metrics" in routes:
                self.metrics_port = self.health_port
        if metrics_port is not None:
            server = _Server((bind, metrics_port), _handler({"/metrics": metrics}))
            self._servers.append(server)
            self.metrics_port = int(server.server_address[1])
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, name="http", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
