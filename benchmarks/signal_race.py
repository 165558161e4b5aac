"""The signal race of issue 42: `fedtheory check --profile quick` ended by a signal at a uniformly random moment of
its first seconds; every run must exit 128 + N (or be ended by the signal itself, which a shell shows as 128 + N too)
with no traceback on stderr.

    python benchmarks/signal_race.py [RUNS] [SIGTERM|SIGINT|SIGHUP] [SECONDS]   # default: 60 SIGTERM 2.0

Prints each bad run (moment, status, the end of stderr) and the count of exit statuses; exits 1 if any run was bad.
Moments are drawn with a fixed seed, so a rerun sends the signals at the same moments.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 60
    sig = getattr(signal, argv[1]) if len(argv) > 1 else signal.SIGTERM
    horizon = float(argv[2]) if len(argv) > 2 else 2.0
    rng = random.Random(0)
    codes: dict[int, int] = {}
    bad = 0
    for _ in range(runs):
        moment = rng.uniform(0.0, horizon)
        proc = subprocess.Popen([sys.executable, "-m", "fedtheory.cli", "check", "--profile", "quick", "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(moment)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=300)
        codes[proc.returncode] = codes.get(proc.returncode, 0) + 1
        if proc.returncode not in (128 + sig, -sig) or "Traceback" in err:
            bad += 1
            print(f"t={moment:.2f} s: exit {proc.returncode}, stderr ends {err[-400:]!r}")
    print(f"{signal.Signals(sig).name}: exit statuses {dict(sorted(codes.items()))}; bad {bad} of {runs}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
