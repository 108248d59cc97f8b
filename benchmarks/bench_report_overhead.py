"""What recording a report's time series costs: training with and without ``--report``'s RunLog.

Two measures, in one run on the same corpus and settings:

1. **Time inside the recorder.**  Every call the trainer makes to ``on_progress`` is timed and summed;
   the sum over the training seconds is the recorder's share.  This holds even on a busy machine.
2. **Wall time with and without**, interleaved round by round (median words/s of each).  Noisier: on a
   shared 2-core machine the difference is within the rounds' spread.

    python benchmarks/bench_report_overhead.py --epochs 1 --threads 2 --rounds 3

Reading and encoding are excluded (the corpus is encoded once, before any clock).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import harness
from harness import DEFAULT_CORPUS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--algo", default="hogbatch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interval", type=float, default=2.0, help="RunLog sampling interval, seconds (2)")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/parvec-bench/cache"))
    ap.add_argument("--out", type=Path, default=None)
    ns = ap.parse_args()

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.runlog import RunLog
    from parvec.trainer import Trainer

    enc = EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=5), cache_dir=ns.cache_dir)
    cfg = TrainConfig(algo=ns.algo, threads=ns.threads, epochs=ns.epochs, sample=1e-4, progress=False)
    Trainer(cfg, enc.vocab.counts).warm_up((enc.tokens, enc.offsets))
    rows = []
    for r in range(ns.rounds):
        for recording in (False, True):
            trainer = Trainer(cfg, enc.vocab.counts)
            inside = [0.0, 0]
            log = RunLog(interval_s=ns.interval)
            if recording:
                def timed(totals, force=False, _log=log, _inside=inside):
                    t0 = time.perf_counter()
                    _log.progress(totals, force=force)
                    _inside[0] += time.perf_counter() - t0
                    _inside[1] += 1

                trainer.on_progress = timed
            stats = trainer.train(enc)
            rows.append({"round": r, "recording": recording, "seconds": stats.seconds,
                         "words_per_sec": stats.words_per_sec, "recorder_seconds": inside[0],
                         "recorder_calls": inside[1], "samples_kept": len(log.timeline)})
            print(f"round {r} recording={recording!s:5} {stats.words_per_sec / 1e6:.3f}M words/s "
                  f"({stats.seconds:.2f} s; recorder {inside[0] * 1e3:.2f} ms in {inside[1]} calls, "
                  f"{len(log.timeline)} samples kept)", file=sys.stderr, flush=True)
    on = [x for x in rows if x["recording"]]
    off = [x for x in rows if not x["recording"]]
    share = statistics.median(x["recorder_seconds"] / x["seconds"] for x in on)
    wps_on = statistics.median(x["words_per_sec"] for x in on)
    wps_off = statistics.median(x["words_per_sec"] for x in off)
    print(f"\nMachine: {harness.machine_line(harness.machine())}")
    print(f"{ns.algo}, {ns.threads} threads, {ns.epochs} epoch(s), {enc.n_tokens:,} tokens, {ns.rounds} rounds")
    print(f"time inside the recorder: {share:.5%} of training (median over rounds)")
    print(f"words/s with the recorder {wps_on / 1e6:.3f}M, without {wps_off / 1e6:.3f}M "
          f"(ratio {wps_on / wps_off:.3f}; spread of rounds: "
          f"{min(x['words_per_sec'] for x in rows) / 1e6:.3f}-{max(x['words_per_sec'] for x in rows) / 1e6:.3f}M)")
    if ns.out:
        harness.write_json(ns.out, "bench_report_overhead", {"args": {k: str(v) for k, v in vars(ns).items()},
                                                             "runs": rows, "recorder_share": share})


if __name__ == "__main__":
    main()
