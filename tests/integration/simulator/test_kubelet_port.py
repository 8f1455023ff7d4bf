"""The node agent starts when the kubelet port `vcjob local up` chose for it was taken meanwhile:
it serves the kubelet API on another port, which the nodes then advertise. Before, the agent
exited and was restarted on the same port forever, and no gang was admitted."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

from localcluster.simulator.__main__ import _serve_kubelet_api
from localcluster.simulator.kubeletapi import KubeletServer
from localcluster.simulator.kubeletpods import NodePods


def test_a_taken_kubelet_port_moves_the_kubelet_api(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        server = KubeletServer(NodePods(lambda ns, name: None, None), "127.0.0.1", taken, tmp_path)
        port = _serve_kubelet_api(server)
        try:
            assert port not in (0, taken)
            context = ssl.create_default_context(cafile=str(server.ca_file))
            with (
                socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                assert tls.version() is not None
        finally:
            server.stop()
