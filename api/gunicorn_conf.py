"""gunicorn settings for `gunicorn -c python:api.gunicorn_conf 'api.app:create_app()'` (docker-compose).

The hooks are api/server.py's: the master checks the addresses it really binds (BIND, or -b on the command
line, which wins) and creates the tables; each worker dies with its master.
"""

import os

from api.server import on_starting, post_fork  # noqa: F401 - gunicorn finds its hooks here by name

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
accesslog = "-"
# Every wait for the event store is bounded at a few seconds (README "Outages"), far below this.
timeout = 60
control_socket_disable = True
