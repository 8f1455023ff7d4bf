"""The ASGI application: routing, encoding, discovery, OpenAPI, watches and fault injection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from localcluster.apiserver import (
    discovery,
    errors,
    podlogs,
    portforward,
    portforward_io,
    protobuf,
    tables,
)
from localcluster.apiserver.faults import FaultInjector
from localcluster.apiserver.registry import UNSUPPORTED_SUBRESOURCES, Registry, ResourceType
from localcluster.apiserver.rest import Api, ApiRequest, Response
from localcluster.apiserver.security import RequestContext, Security
from localcluster.apiserver.watch import WatchOptions, WatchStream
from shared import jsoncodec

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")]
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
NOT_FOUND_MESSAGE = "the server could not find the requested resource"


@dataclass
class Route:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    legacy_watch: bool


def _encode(body: Any) -> bytes:
    # Go's json.Encoder, which kube-apiserver writes with, ends every document with a newline.
    return jsoncodec.dumps(body) + b"\n"


def _warning_headers(warnings: list[str]) -> list[tuple[bytes, bytes]]:
    out = []
    for warning in warnings:
        text = warning.replace("\\", "\\\\").replace('"', '\\"')
        out.append((b"warning", f'299 - "{text}"'.encode()))
    return out


class Application:
    def __init__(
        self,
        api: Api,
        faults: FaultInjector | None = None,
        watch_options: WatchOptions | None = None,
        security: Security | None = None,
    ) -> None:
        self.api = api
        self.security = security
        self.pod_logs: podlogs.PodLogs | None = None
        self.registry: Registry = api.registry
        self.faults = faults or FaultInjector()
        self.watch_options = watch_options or WatchOptions()
        self._openapi_cache: dict[str, bytes] = {}
        self._cache_stamp: object = None
        self.shutting_down = False

    # -- ASGI --------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        raw_headers = [
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]
        ]
        headers = dict(raw_headers)
        path: str = scope["path"]
        query = dict(
            parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        )
        method: str = scope["method"]
        context = Security.context(method, path, query)
        send = self._audited(context, send)
        try:
            if self.security is not None:
                self.security.admit(context, raw_headers)
            await self._dispatch(method, path, query, headers, body, receive, send, context)
        except errors.StatusError as exc:
            await self._send_json(send, exc.code, exc.to_status())
        except Exception as exc:
            log.exception("request failed", extra={"method": method, "path": path})
            await self._send_json(
                send, 500, errors.internal(f"Internal error occurred: {exc}").to_status()
            )

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket upgrade: `pods/portforward` tunnelling SPDY/3.1, the way kubectl 1.31
        asks first. Authorized as `create`, as kube-apiserver does for these upgrades."""
        if (await receive())["type"] != "websocket.connect":
            return
        path: str = scope["path"]
        query = dict(
            parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        )
        raw_headers = [
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]
        ]
        context = Security.context("POST", path, query)
        attrs = context.attrs
        try:
            if not portforward.is_portforward_request(attrs):
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            if self.security is not None:
                self.security.admit(context, raw_headers)
            pod = self.api.store.get(("", "pods"), attrs.namespace, attrs.name)
            address = portforward.pod_address(pod, attrs.name)
            if portforward.TUNNEL_PROTOCOL not in scope.get("subprotocols", []):
                raise errors.bad_request(
                    f"port-forward needs the WebSocket subprotocol {portforward.TUNNEL_PROTOCOL}"
                )
        except errors.StatusError as exc:
            if self.security is not None:
                self.security.record(context, exc.code)
            await self._deny_websocket(scope, send, exc)
            return
        if self.security is not None:
            self.security.record(context, 101)
        await send({"type": "websocket.accept", "subprotocol": portforward.TUNNEL_PROTOCOL})
        uid = str(((pod or {}).get("metadata") or {}).get("uid", ""))
        await portforward_io.Session(address, attrs.name, uid, receive, send).run()
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": 1000})

    async def _deny_websocket(self, scope: Scope, send: Send, exc: errors.StatusError) -> None:
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        payload = _encode(exc.to_status())
        headers = [*JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
        await send(
            {"type": "websocket.http.response.start", "status": exc.code, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": payload})

    def _audited(self, context: RequestContext, send: Send) -> Send:
        security = self.security
        if security is None or security.audit is None:
            return send

        async def audited(message: Message) -> None:
            if message["type"] == "http.response.start":
                security.record(context, int(message["status"]))
            await send(message)

        return audited

    async def _send_json(
        self,
        send: Send,
        code: int,
        body: Any,
        extra: list[tuple[bytes, bytes]] | None = None,
        raw: bytes | None = None,
    ) -> None:
        payload = raw if raw is not None else _encode(body)
        headers = [*JSON_HEADERS, (b"content-length", str(len(payload)).encode()), *(extra or [])]
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _send_text(self, send: Send, code: int, text: str) -> None:
        payload = text.encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    # -- routing -----------------------------------------------------------------------------

    async def _dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        receive: Receive,
        send: Send,
        context: RequestContext,
    ) -> None:
        if path.startswith(HEALTH_PATHS):
            await self._send_text(send, 200, "ok")
            return
        if path == "/version" or path == "/version/":
            await self._send_json(send, 200, discovery.KUBE_VERSION)
            return
        segments = [s for s in path.split("/") if s]
        if not segments or segments[0] not in ("api", "apis", "openapi"):
            raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
        if segments[0] == "openapi":
            if segments == ["openapi", "v2"] and "protobuf" in headers.get("accept", ""):
                await self._openapi_v2_protobuf(send)
                return
            await self._openapi(segments, send)
            return
        discovery_doc = self._discovery(segments)
        if discovery_doc is not None:
            if method != "GET":
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            await self._send_json(send, 200, discovery_doc)
            return
        if self.pod_logs is not None and podlogs.is_log_request(context.attrs):
            await self.pod_logs.serve(context.attrs, query, receive, send)
            return
        answered = self.security.answer(context, body) if self.security is not None else None
        if answered is not None:
            await self._send_json(send, 201, answered)
            return
        if portforward.is_portforward_request(context.attrs):
            # SPDY/3.1 over a plain HTTP upgrade needs the raw connection, which ASGI does not
            # hand over; kubectl 1.31 tunnels it in a WebSocket (see _websocket) unless told not to.
            pod = self.api.store.get(("", "pods"), context.attrs.namespace, context.attrs.name)
            portforward.pod_address(pod, context.attrs.name)
            raise errors.bad_request(
                "port-forward is served over a WebSocket with subprotocol "
                f"{portforward.TUNNEL_PROTOCOL} only; unset KUBECTL_PORT_FORWARD_WEBSOCKETS"
            )
        route = self._route(segments)
        write = method in ("POST", "PUT", "PATCH", "DELETE")
        fault = self.faults.pick(write)
        watching = (
            method == "GET"
            and route.subresource is None
            and (route.legacy_watch or query.get("watch", "").lower() in ("true", "1"))
        )
        if fault is not None and not watching:
            await self._inject(fault.kind, route, send)
            return
        request = ApiRequest(
            method,
            route.resource,
            route.namespace,
            route.name,
            route.subresource,
            query,
            body,
            headers.get("content-type", "application/json"),
        )
        if context.user.name:
            request.username = context.user.name
        accept = headers.get("accept", "")
        if watching:
            if route.name is not None:
                selector = query.get("fieldSelector", "")
                extra = f"metadata.name={route.name}"
                query["fieldSelector"] = f"{selector},{extra}" if selector else extra
                request.name = None
            await self._watch(request, accept, receive, send)
            return
        response = await self._handle(method, request, route)
        await self._respond(request, response, accept, send)

    def _discovery(self, segments: list[str]) -> dict[str, Any] | None:
        if segments == ["api"]:
            return discovery.api_versions()
        if segments == ["apis"]:
            return discovery.api_group_list(self.registry)
        if len(segments) == 2 and segments[0] == "api":
            if not self.registry.has_group_version("", segments[1]):
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            return discovery.api_resource_list(self.registry, "", segments[1])
        if len(segments) == 2 and segments[0] == "apis":
            group = discovery.api_group(self.registry, segments[1])
            if group is None:
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            return group
        if len(segments) == 3 and segments[0] == "apis":
            if not self.registry.has_group_version(segments[1], segments[2]):
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            return discovery.api_resource_list(self.registry, segments[1], segments[2])
        return None

    def _route(self, segments: list[str]) -> Route:
        if segments[0] == "api":
            group, version, rest = "", segments[1], segments[2:]
        else:
            if len(segments) < 4:
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            group, version, rest = segments[1], segments[2], segments[3:]
        legacy_watch = False
        if rest and rest[0] == "watch":
            legacy_watch = True
            rest = rest[1:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and not (len(rest) == 3 and group == "" and rest[2] in ("status", "finalize"))
        ):
            namespace = rest[1]
            rest = rest[2:]
        if not rest or len(rest) > 3:
            raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
        resource = self.registry.lookup(group, version, rest[0])
        if resource is None:
            raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
        if namespace is not None and not resource.namespaced:
            raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        if subresource is not None and subresource not in resource.subresources:
            if subresource in UNSUPPORTED_SUBRESOURCES:
                raise errors.StatusError(
                    404,
                    "NotFound",
                    f"{resource.plural}/{subresource} is not supported by the vcjob local API "
                    "server; a pod that really runs is reached from this machine at its pod IP",
                )
            raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
        return Route(resource, namespace, name, subresource, legacy_watch)

    async def _handle(self, method: str, request: ApiRequest, route: Route) -> Response:
        api = self.api
        sub = route.subresource
        if sub == "scale" and route.name is not None and method in ("GET", "PUT", "PATCH"):
            return await api.scale(request)
        if method == "GET":
            return api.list_response(request) if route.name is None else api.get(request)
        if method == "POST":
            if route.name is None:
                return await api.create(request)
            if sub == "binding":
                return await api.bind(request)
        elif method == "PUT" and route.name is not None:
            if sub == "finalize":
                return await api.finalize_namespace(request)
            return await api.update(request)
        elif method == "PATCH" and route.name is not None and sub in (None, "status"):
            return await api.patch(request)
        elif method == "DELETE" and sub is None:
            if route.name is None:
                return await api.delete_collection(request)
            return await api.delete(request)
        raise errors.method_not_allowed(
            "the server does not allow this method on the requested resource"
        )

    async def _respond(
        self, request: ApiRequest, response: Response, accept: str, send: Send
    ) -> None:
        body = response.body
        if response.code < 300 and body.get("kind") != "Status":
            body = self._transform(request, body, accept)
        await self._send_json(send, response.code, body, _warning_headers(response.warnings))

    def _transform(self, request: ApiRequest, body: dict[str, Any], accept: str) -> dict[str, Any]:
        if "as=Table" in accept:
            include = request.query.get("includeObject", "Metadata")
            if "items" in body and body.get("kind", "").endswith("List"):
                return tables.build_table(
                    request.resource, body["items"], body["metadata"], include
                )
            rv = body.get("metadata", {}).get("resourceVersion", "")
            return tables.build_table(request.resource, [body], {"resourceVersion": rv}, include)
        if "as=PartialObjectMetadataList" in accept and "items" in body:
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": body["metadata"],
                "items": [tables.partial_metadata(i) for i in body["items"]],
            }
        if "as=PartialObjectMetadata" in accept and "items" not in body:
            return tables.partial_metadata(body)
        return body

    # -- watch -------------------------------------------------------------------------------

    async def _watch(self, request: ApiRequest, accept: str, receive: Receive, send: Send) -> None:
        include = request.query.get("includeObject", "Metadata")
        stream = WatchStream(self.api, request, "as=Table" in accept, include)
        options = WatchOptions(self.watch_options.bookmark_interval, self.faults.watch_cut_after())
        disconnected = asyncio.Event()

        async def wait_for_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected.set()
                    return

        watcher_task = asyncio.create_task(wait_for_disconnect())
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        events = stream.events(options, lambda: disconnected.is_set() or self.shutting_down)
        try:
            async with contextlib.aclosing(events):
                async for chunk in events:
                    if disconnected.is_set():
                        break
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except Exception:
            # The response has started: end the stream, the client will watch again.
            log.exception("watch stream failed", extra={"resource": request.resource.qualified})
        finally:
            watcher_task.cancel()
        if not disconnected.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    # -- faults ------------------------------------------------------------------------------

    async def _inject(self, kind: str, route: Route, send: Send) -> None:
        resource = route.resource
        if kind == "hang":
            await asyncio.sleep(self.faults.hang_seconds)
            error = errors.StatusError(
                504,
                "Timeout",
                "Timeout: request did not complete within requested timeout - "
                "context deadline exceeded",
            )
        elif kind == "conflict":
            error = errors.conflict(resource.plural, route.name or "", resource.group)
        else:
            error = errors.internal("Internal error occurred: injected fault")
        await self._send_json(send, error.code, error.to_status())

    # -- discovery-adjacent ------------------------------------------------------------------

    async def _openapi_v2_protobuf(self, send: Send) -> None:
        version = str(discovery.KUBE_VERSION["gitVersion"])
        payload = protobuf.openapi_v2_document("Kubernetes", version)
        headers = [
            (b"content-type", protobuf.OPENAPI_V2_MEDIA_TYPE.encode()),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _openapi(self, segments: list[str], send: Send) -> None:
        stamp = tuple((t.group, t.version, t.plural, id(t)) for t in self.registry.types())
        if stamp != self._cache_stamp:
            self._openapi_cache.clear()
            self._cache_stamp = stamp
        key = "/".join(segments)
        cached = self._openapi_cache.get(key)
        if cached is None:
            doc: dict[str, Any] | None
            if segments == ["openapi", "v2"]:
                doc = discovery.openapi_v2(self.registry)
            elif segments == ["openapi", "v3"]:
                doc = discovery.openapi_v3_root(self.registry)
            elif len(segments) == 4 and segments[:3] == ["openapi", "v3", "api"]:
                doc = discovery.openapi_v3_group_version(self.registry, "", segments[3])
            elif len(segments) == 5 and segments[:3] == ["openapi", "v3", "apis"]:
                doc = discovery.openapi_v3_group_version(self.registry, segments[3], segments[4])
            else:
                doc = None
            if doc is None:
                raise errors.StatusError(404, "NotFound", NOT_FOUND_MESSAGE)
            cached = _encode(doc)
            self._openapi_cache[key] = cached
        await self._send_json(send, 200, None, raw=cached)
