"""A TCP proxy between the service and PostgreSQL that loses the replies to COMMITs the server received.

Every byte goes through unchanged (in the clear: the test servers run without TLS). While ``dropping`` is
set, when the server answers that a transaction which inserted rows has committed (its ReadyForQuery,
idle, after a COMMIT or after a writing statement in autocommit), the proxy loses that answer and closes the client's connection: the transaction
is committed, and the client sees its connection die before it heard so, as when the network or the
primary dies between the commit and its answer.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable

# ReadyForQuery, idle: the transaction is over. After a write it committed, by a COMMIT or, for a statement
# sent outside a transaction block (the service's one-statement save), by the statement itself.
COMMITTED = b"Z\x00\x00\x00\x05I"
INSERT = b"INSERT INTO"
# The service's save on PostgreSQL is one prepared statement calling a function of the database
# (service/onetrip.py): its text passes once, in the Parse that names it; later saves only Bind that name.
WRITING_PARSE = re.compile(rb"P.{4}(_pg3_\d+)\x00[^\x00]*(?:INSERT INTO|zametano_save_)", re.S)
CHUNK = 65536


class _Link:
    """One client's connection and the server's, as the two directions see them."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.wrote = False  # an INSERT since the last COMMIT: the connections' own set-up commits too
        self.writing: set[bytes] = set()  # the names of its prepared statements that write
        self.lost = False  # the client was cut off at a COMMIT's answer


class CommitDropper:
    """Listens on 127.0.0.1 (a free port) and forwards to ``target``; ``should_drop()`` is asked at each
    writing transaction's COMMIT answered while ``dropping`` is set (every one by default)."""

    def __init__(self, target: tuple[str, int], should_drop: Callable[[], bool] = lambda: True) -> None:
        self.target = target
        self.should_drop = should_drop
        self.dropping = False
        self.commits = 0  # writing transactions committed
        self.dropped = 0  # of which the reply was lost
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, server]
            link = _Link(client, server)
            threading.Thread(target=self._upstream, args=(link,), daemon=True).start()
            threading.Thread(target=self._downstream, args=(link,), daemon=True).start()

    def _upstream(self, link: _Link) -> None:
        """Client to server, noting whether the transaction in progress inserted rows."""
        tail = b""
        try:
            while data := link.client.recv(CHUNK):
                link.server.sendall(data)
                seen = tail + data
                link.writing.update(m.group(1) for m in WRITING_PARSE.finditer(seen))
                # only what ends in the new data counts: a match kept whole in the tail was counted already
                fresh = [seen.find(b"\x00" + name + b"\x00", max(0, len(tail) - len(name) - 1)) for name in link.writing]
                link.wrote = link.wrote or INSERT in seen[max(0, len(tail) - len(INSERT) + 1):] or any(
                    i >= 0 for i in fresh)
                tail = seen[-32:]  # a word or a name split between two reads is seen once
        except OSError:
            pass
        _close(link.client)
        _close_write(link.server)

    def _downstream(self, link: _Link) -> None:
        """Server to client; the chunk that says a writing transaction committed is lost, with the client's
        connection, while the server goes on to its end."""
        tail = b""
        try:
            while data := link.server.recv(CHUNK):
                committed = COMMITTED in tail + data
                tail = (tail + data)[1 - len(COMMITTED):]
                if committed and not link.lost:
                    with self._lock:
                        self.commits += 1
                        drop = link.wrote and self.dropping and self.should_drop()
                        self.dropped += drop
                    link.wrote = False
                    if drop:
                        link.lost = True
                        _close(link.client)
                        _close_write(link.server)  # the server reads the end and closes its side
                if not link.lost:
                    link.client.sendall(data)
        except OSError:
            pass
        _close(link.client)
        _close(link.server)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                _close(s)


def _close(s: socket.socket) -> None:
    """Shut down first: a socket closed while another thread reads it would stay open underneath."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


def _close_write(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
