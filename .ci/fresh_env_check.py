"""Every ``simd-emu`` command works or says in one line which extra to install.

Run by ``.ci/run`` with the ``simd-emu`` of a fresh virtual environment holding
``pip install .`` only (the machine, no extras)::

    python .ci/fresh_env_check.py /path/to/venv/bin/simd-emu

Each command runs in an empty temporary folder. It passes when it exits with status 0, or
with a non-zero status after printing exactly one line that ends with
``pip install 'simd-emu[EXTRA]'`` (and nothing else); in either case no output may contain
"Traceback" and the command must finish within its time limit. Exits non-zero if any
command fails, after running them all.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time

#: The commands, as a user with the README would type them after ``pip install .``.
COMMANDS = (
    ["--help"],
    ["--version"],
    ["info"],
    ["warmup"],
    ["render"],
    ["render", "--table1"],
    ["diffuse"],
    ["bench", "mimd", "--quick"],
    # serves until stopped where its extra is installed; here it must name the extra
    ["view", "--no-browser"],
)

#: The one line of a command that needs an extra.
EXTRA_LINE = re.compile(r"^.+: pip install 'simd-emu\[[\w,-]+\]'$")

#: Seconds a command may take (``bench mimd --quick`` takes about 20 s with the data extra).
LIMIT = 300


def check(executable: str, args: list[str]) -> str | None:
    """Why ``executable args`` fails the check, or None."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            proc = subprocess.run(
                [executable, *args],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=LIMIT,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return f"did not finish in {LIMIT} s"
    output = proc.stdout + proc.stderr
    if "Traceback" in output:
        return f"printed a traceback (status {proc.returncode}):\n{output}"
    if proc.returncode == 0:
        return None
    lines = output.strip().splitlines()
    if len(lines) == 1 and EXTRA_LINE.match(lines[0]):
        return None
    return f"exited with status {proc.returncode} without the one-line extra message:\n{output}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: fresh_env_check.py PATH/TO/simd-emu", file=sys.stderr)
        return 2
    failures = 0
    for args in COMMANDS:
        start = time.perf_counter()
        problem = check(argv[0], args)
        seconds = time.perf_counter() - start
        shown = " ".join(["simd-emu", *args])
        if problem is None:
            print(f"ok    {shown} ({seconds:.1f} s)")
        else:
            failures += 1
            print(f"FAIL  {shown} ({seconds:.1f} s): {problem}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
