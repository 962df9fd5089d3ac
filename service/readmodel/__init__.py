"""The read model: every table, every finished round and every shoe, kept up to date from the event log.

The rows and their sealing (rows.py), one store a backend (memory.py, sqlite.py and postgres.py, the last two
sharing sql.py, all offering view.py's interface), the round and shoe projection (projection.py), the indexer
that feeds it command-complete batches from the log's position (indexer.py), the thread that follows the
log in the background (follower.py), and the lease that lets one process at a time index (lease.py).
"""

from service.readmodel.indexer import Indexer

__all__ = ["Indexer"]
