"""gunicorn settings for `gunicorn -c python:api.gunicorn_conf 'api.app:create_app()'` (docker-compose)."""

import os

from api.server import check_exposure, prepare_store
from service.config import ConfigError

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
accesslog = "-"
timeout = 60
control_socket_disable = True


def on_starting(server):  # noqa: ANN001, ANN201 - gunicorn's hook signature
    host = bind.rsplit(":", 1)[0].strip("[]")
    try:
        warning = check_exposure(host)
        store = prepare_store()
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None  # one line, not a traceback
    if warning:
        server.log.warning(warning)
    server.log.info("events in %s", store)
