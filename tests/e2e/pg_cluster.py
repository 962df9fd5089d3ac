"""A throwaway PostgreSQL cluster of a test's own, so a test may stop and start it (never the shared one).

initdb into a fresh temporary folder, pg_ctl on a free port, its socket in that folder. As root the
binaries run as the ``postgres`` OS user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or one on PATH; None when there is no initdb."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


class Cluster:
    def __init__(self, bin_dir: Path, port: int) -> None:
        self.bin_dir, self.port = bin_dir, port
        # Not pytest's tmp_path: as root, that folder is closed to the postgres user.
        self.root = Path(tempfile.mkdtemp(prefix="zametano-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *args: str, timeout: float = 60) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout}{done.stderr}{self.server_log()}")

    def server_log(self) -> str:
        try:
            return self.log.read_text()
        except OSError:
            return ""

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "start", "-w", "-t", "30", "-D", str(self.data), "-l", str(self.log), "-o", options)

    def stop(self) -> None:
        self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "fast", "-D", str(self.data))

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        """Stops the server if it runs (immediately: nothing in it is kept) and removes every file."""
        try:
            if self.running():
                self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "immediate", "-D", str(self.data))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def env(self, dbname: str = "postgres") -> dict[str, str]:
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_HOST": "127.0.0.1",
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "",
            "POSTGRES_DBNAME": dbname,
        }
