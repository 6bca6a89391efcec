"""The test peers listen on 127.0.0.1, which builtin:http refuses unless the operator allows
it: tests allow it exactly as an operator would (TRELLIS_HTTP_ALLOWED_NETWORKS)."""

from activities.executors.http_guard import HttpPolicy, parse_networks

LOOPBACK_ALLOWED = HttpPolicy(allowed_networks=parse_networks("127.0.0.0/8"))
