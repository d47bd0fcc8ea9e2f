"""Readiness probes: one short HTTP GET on loopback, true only for a 200 answer."""

from __future__ import annotations

import http.client

PROBE_TIMEOUT = 0.5
# Sent with every probe, so a server can tell a readiness poll from a client's mistake (the
# trajectory API logs a probe's refusal, "env 0 is not registered" while the environment starts,
# below its warnings).
PROBE_HEADER = "X-Hermes-Readiness-Probe"


def http_ok(url: str, timeout: float = PROBE_TIMEOUT) -> bool:
    rest = url.split("://", 1)[-1]
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    connection = http.client.HTTPConnection(host, int(port or 80), timeout=timeout)
    try:
        connection.request("GET", "/" + path, headers={PROBE_HEADER: "1"})
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException, ValueError):
        return False
    finally:
        connection.close()
