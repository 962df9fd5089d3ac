"""Whether the store answers, and whether this configuration can read what it holds."""

from __future__ import annotations

from typing import Any

from service import store
from service.errors import StoreUnreadable

# How many of the newest events the start-up checks look at: whether they read, and whether in clear.
CHECKED_EVENTS = 5


def newest_notifications(recorder: Any) -> list[Any]:
    """The store's newest few stored events (none for an empty store), as its notification log holds them."""
    newest = recorder.max_notification_id()
    if not newest:
        return []
    return list(recorder.select_notifications(max(1, newest - CHECKED_EVENTS + 1), CHECKED_EVENTS))


class Health:
    """The health checks of TablesService (service/application.py)."""

    def check_store(self) -> None:
        """Raises StoreUnreadable unless this configuration reads what is stored. A wrong CIPHER_KEY would
        otherwise start a service whose old tables fail and whose new ones are written under another key.
        Any of the newest few events will do (one damaged event is the audit's business, not a reason to
        stop); an empty store is readable with any key."""
        failures = []
        for note in newest_notifications(self.recorder):
            try:
                self.mapper.to_domain_event(note)
                return
            except Exception as exc:  # noqa: BLE001 - whatever stops reading is what the operator must hear of
                failures.append(exc)
        if failures:
            cause = failures[-1].__cause__ or failures[-1]
            at_rest = getattr(self, "at_rest", None)
            if at_rest is not None and at_rest.how == "key file":
                key = f"with the cipher key {at_rest.key_file}"
            else:
                key = "with this CIPHER_KEY" if self.mapper.cipher is not None else "without a CIPHER_KEY"
            raise StoreUnreadable(
                f"The stored events cannot be read {key} ({type(cause).__name__}: {cause}); start with the "
                "key (CIPHER_KEY or the cipher key file) and COMPRESSOR_TOPIC they were written with."
            )

    def ping(self) -> None:
        """Raises StoreUnavailable unless the event store answers within a couple of seconds."""
        store.ping(self)
