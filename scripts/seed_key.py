"""scripts/seed-key rotate: puts a new seed key first in the seed key file, keeping the others.

Restart the server afterwards: it seals new shuffles with the new key and opens older seeds with the
key that sealed them. Exit status: 0 rotated, 2 the file cannot be used (one line saying why).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser  # noqa: E402

from service.config import ConfigError, load  # noqa: E402
from service.seeds import KEY_FILE, rotate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="scripts/seed-key", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["rotate"])
    parser.parse_args(argv)
    try:
        settings = load()
        path = Path(settings.seed_key_file or Path(settings.data_dir) / KEY_FILE)
        key_id = rotate(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"seed key {key_id} now seals new shuffles ({path}); restart the server to use it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
