"""gunicorn settings for `gunicorn -c python:api.gunicorn_conf 'api.app:create_app()'` (docker-compose).

The hooks are api/server.py's: the master checks the addresses it really binds (BIND, or -b on the command
line, which wins) and creates the tables; each worker dies with its master. There is no access log: the app
writes one line per request itself (api/logs.py).
"""

import os

from api.server import child_exit, on_exit, on_starting, post_fork, post_worker_init, when_ready  # noqa: F401 - gunicorn finds its hooks here by name
from api.edge import max_connections, read_timeout
from api.server import check_bind, refuse, web_threads, worker_count, worker_settings
from service.config import ConfigError, max_streams

bind = os.environ.get("BIND", "127.0.0.1:8000")
try:
    check_bind(bind)
    workers = worker_count(os.environ.get("WEB_CONCURRENCY"), "WEB_CONCURRENCY")
    # WEB_THREADS requests at once per worker (threaded workers, with keep-alive), plus one for each of its
    # ZAMETANO_MAX_STREAMS live streams, each connection read by a thread of its own within ZAMETANO_READ_TIMEOUT
    # (api/edge.py), read as api/server.py reads them
    _workers = worker_settings(web_threads(), max_streams(), max_connections())
    read_timeout()
except ConfigError as exc:
    refuse(str(exc))  # one line, where gunicorn would print "Failed to read config file" and a traceback
worker_class = _workers["worker_class"]
threads = _workers["threads"]
worker_connections = _workers.get("worker_connections", 1000)  # 1000: gunicorn's default, unused by its sync worker
keepalive = _workers.get("keepalive", 2)  # 2: gunicorn's default, unused by its sync worker
# Every wait for the event store is bounded at a few seconds (docs/operations.md, "Outages"), far below this.
timeout = 60
control_socket_disable = True
