"""A Ray cluster of several nodes on this machine, bound to 127.0.0.1: the tests' stand-in for a real
cluster, and a way to try a multi-node setup before renting one.

Ray rewrites a loopback node address to the machine's network address
(``ray._private.services.resolve_ip_for_localhost``, Ray 2.x), so ``ray start --node-ip-address
127.0.0.1`` still registers, and a driver still dials, the host's interface address. ``keep_loopback``
turns that rewrite off in this process; ``python -m bgtrain.distributed.local_cluster ARGS`` is
``ray ARGS`` with it off, and then the GCS, the raylets and the object stores listen on 127.0.0.1 only
(checked with ``ss -ltnp``). A driver joining such a cluster must keep loopback too:
``bgtrain.distributed.ray_executor.connect`` does, for an address whose host is a loopback address.

``LocalCluster`` starts a head node and worker nodes, each ``ray start`` run in its own directory (a
node's workers start in the directory of its ``ray start``, as on machines that share no disk), and
stops them by the process ids of its own session: never ``ray stop``, which would stop every Ray
cluster of this user on the machine.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def keep_loopback() -> None:
    """Keep 127.0.0.1 as this process's Ray node address instead of the host's network address."""
    from ray._private import services

    services.resolve_ip_for_localhost = lambda host: host


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalCluster:
    """A head node and ``len(node_dirs) - 1`` worker nodes of ``cpus`` CPUs each on 127.0.0.1; node k's
    ``ray start`` runs in ``node_dirs[k]`` with ``environment``. ``address`` is the head's HOST:PORT; a
    driver joins with ``token_environment`` (the cluster's authentication token) in its environment."""

    def __init__(self, temp_dir: Path, node_dirs: list[Path], cpus: int = 1, environment: dict | None = None,
                 timeout: float = 120.0) -> None:
        self.temp_dir = Path(temp_dir)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # Its own authentication token, as a real cluster would share one (docs/distributed.md): set
        # explicitly, because a worker node's `ray start` does not turn token mode on by itself from
        # ~/.ray/auth_token as the head's does, and then cannot join.
        self.token_environment = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self.environment = {**os.environ, **(environment or {}), **self.token_environment}
        self.environment.pop("RAY_ADDRESS", None)
        self.environment.pop("RAY_AUTH_TOKEN_PATH", None)
        common = ["--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus), "--disable-usage-stats"]
        head = ["start", "--head", "--port", str(self.port), "--temp-dir", str(self.temp_dir),
                "--include-dashboard", "false", *common]
        self.node_dirs = [Path(directory) for directory in node_dirs]
        self.node_raylets: list[int] = []  # node k's raylet process id
        try:
            for index, directory in enumerate(self.node_dirs):
                directory.mkdir(parents=True, exist_ok=True)
                arguments = head if index == 0 else ["start", "--address", self.address, *common]
                done = subprocess.run([sys.executable, "-m", __name__, *arguments], check=False, cwd=directory,
                                      env=self.environment, capture_output=True, text=True, timeout=timeout)
                if done.returncode != 0:
                    raise RuntimeError(f"ray start of node {index} failed: {done.stderr.strip()[-500:]}")
                self.node_raylets += [pid for pid in self.raylets() if pid not in self.node_raylets]
        except BaseException:
            self.stop()
            raise

    def processes(self, name: str = "") -> list[int]:
        """Ids of this cluster's processes whose command line contains ``name``: those that name its
        session directory, and their descendants (agents and workers rename themselves ``ray::...``)."""
        commands, parents = _process_table()
        members = _with_descendants({pid for pid, command in commands.items() if str(self.temp_dir) in command},
                                    parents)
        return sorted(pid for pid in members if name in commands.get(pid, ""))

    def kill_node(self, index: int) -> None:
        """SIGKILL node ``index``'s raylet and every process under it (its workers and agents) at once,
        as a machine that loses power does. The raylet alone is not that: its workers answer the
        driver directly and keep finishing tasks for seconds after it is gone."""
        _, parents = _process_table()
        for pid in _with_descendants({self.node_raylets[index]}, parents):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def raylets(self) -> list[int]:
        """The raylet processes alive now (the raylet binary; not the Python helpers that name it)."""
        found = []
        for pid in self.processes("raylet"):
            try:
                program = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if program.endswith(b"/raylet"):
                found.append(pid)
        return found

    def stop(self) -> None:
        """SIGTERM then SIGKILL to every process of this cluster (its workers exit with their raylet)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.processes():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while self.processes() and time.monotonic() < deadline:
                time.sleep(0.2)


def _process_table() -> tuple[dict[int, str], dict[int, int]]:
    """Every process's command line and parent id, from /proc."""
    commands, parents = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return commands, parents


def _with_descendants(roots: set[int], parents: dict[int, int]) -> set[int]:
    members = set(roots)
    grown = True
    while grown:
        children = {pid for pid, parent in parents.items() if parent in members} - members
        members |= children
        grown = bool(children)
    return members


def main() -> int:
    keep_loopback()
    from ray.scripts.scripts import main as ray_main

    sys.argv[0] = "ray"
    return ray_main()


if __name__ == "__main__":
    sys.exit(main())
