"""Kill a ``python -m parvec`` run with SIGKILL at a random moment after its first mid-epoch checkpoint (the
resume tests of word2vec and of node2vec/DeepWalk)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kill_after_first_mid_epoch_checkpoint(argv: list, interval: float) -> float:
    """Run ``parvec *argv`` (it must checkpoint mid-epoch), wait for its first mid-epoch checkpoint, sleep a
    random 0 to 1.6 ``interval`` seconds and SIGKILL it; returns when it was killed (``time.time()``).

    Example:
        >>> killed_at = kill_after_first_mid_epoch_checkpoint(["train", "c.txt", "-o", "v.txt",
        ...     "--checkpoint-dir", "ck", "--checkpoint-every", "40k"], 0.25)  # doctest: +SKIP
    """
    env = os.environ | {"PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "parvec", *map(str, argv)], stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None  # stderr=PIPE
    try:
        printed = []
        for line in proc.stderr:  # wait for the first mid-epoch checkpoint, then kill at a random moment
            if line.startswith("checkpoint: ") and "/mid-e" in line:
                printed.append(line)
                break
        assert printed, "the run ended before its first mid-epoch checkpoint"
        time.sleep(random.uniform(0.0, 1.6 * interval))
        assert proc.poll() is None, "the run finished before it could be killed: make it longer"
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return killed_at
