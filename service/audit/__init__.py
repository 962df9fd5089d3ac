"""Audit: a round's record with its checks, and a whole table verified (docs/design.md "Replay and audit").

Checks, each naming the offending event when it fails:
- chain: the stored log whole and in order (no version missing, none unreadable, timestamps rising, nothing
  cut off behind a snapshot or the read model) and every digest recomputed from the one before;
- cards: every revealed seed against the commitment recorded at its shuffle, and every dealt card equal to
  the shoe recomputed from that seed and cut (null until revealed), all read from the log itself;
- rules: every command of the round run again through the game's own rules, from the state before it,
  must give exactly the recorded events (outcome, draws, payments, the bank, the shoe);
- money: every payment positive and between two different parties, balances moved by exactly the payments,
  and all balances and accounts together summing to zero.
"""

from service.audit.one_round import round_audit
from service.audit.whole_table import verify

__all__ = ["round_audit", "verify"]
