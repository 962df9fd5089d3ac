"""The reference wallet (scripts/wallet) as the tests run it: a process of its own on a journal file of the test's,
told through its admin endpoints to take deposits and to fail (docs/scripts.md "The reference wallet")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import requests

from tests.helpers import SCRIPTS


class Wallet:
    """scripts/wallet on ``folder``/wallet.jsonl; ``start()`` again after ``kill()`` serves the same accounts."""

    def __init__(self, folder: Path) -> None:
        self.file = folder / "wallet.jsonl"
        self.process: subprocess.Popen[str] | None = None
        self.port = 0
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, str(SCRIPTS / "wallet.py"), "--file", str(self.file),
                                         "--port", str(self.port)], stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])

    def post(self, path: str, body: dict[str, Any]) -> Any:
        answer = requests.post(self.url + path, json=body, timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def deposit(self, player: str, amount: int) -> None:
        self.post(f"/accounts/{player}/deposit", {"amount": amount})

    def faults(self, **setting: Any) -> None:
        self.post("/faults", setting)

    def balance(self, player: str) -> int:
        return requests.get(f"{self.url}/accounts/{player}", timeout=10).json()["balance"]  # type: ignore[no-any-return]

    def report(self) -> str:
        return requests.get(f"{self.url}/report", timeout=30).text

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait(10)
            if self.process.stdout is not None:
                self.process.stdout.close()
