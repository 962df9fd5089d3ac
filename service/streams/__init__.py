"""Live streams of the event log: a table's events as they are recorded, and every table's head.

Each process (each service) has one Hub, which learns of new events once for all the streams it serves:

- from the service's own commits, at once (``TablesService._notify``): the events recorded;
- from the read model's follower (service/readmodel/follower.py), which follows the whole notification log (polled on
  PostgreSQL and SQLite, in-process on memory) and so hears every process's commits, a moment later (its
  POLL, and in memory its GATHER): which tables moved, the events of the followed tables that the
  process did not record itself, and each table's new head, decoded here once for every stream and kept,
  with its position in the log, for the streams of heads.

A stream waits on the hub (its table's condition variable, with its heartbeat as the timeout: a change wakes
only the streams of its table) and does nothing while its table does not move: a quiet stream costs one
sleeping thread. When its table moves it sends the events after the last one it sent as the hub keeps them
(``Hub.kept``: the latest of each followed table, as recorded), or, where the hub lacks one, reads them
through the service's ordinary reads; the streams of one table woken by one change share that read
(``SharedReads``), and the streams of one viewer what one made of an event (``Recorded``). A stream
subscribes before it reads its backlog, so an event recorded between the two is not missed, and it only ever
sends after the last version it sent, so no event comes twice or out of order, whatever woke it. When the
follower subscribes again after a failure from further on than the hub heard, every stream reads again from
its last event (``resyncs``).

A process holds at most ``max_streams`` streams at once (ZAMETANO_MAX_STREAMS); the server gives each worker
that many threads on top of those for ordinary requests, so streams never take a thread a command needs.
"""

from service.streams.feeds import HeadFeed, TableFeed
from service.streams.hub import Hub, stop_all
from service.streams.log import HeadChange, Publisher, heads_of

# What the service (service/application.py, service/readmodel/follower.py) and the server (api/server.py) use.
__all__ = ["HeadChange", "HeadFeed", "Hub", "Publisher", "TableFeed", "heads_of", "stop_all"]
