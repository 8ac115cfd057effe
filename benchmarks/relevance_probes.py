"""The relevance figures and the cause probes of issue 45: `refcheck bench --dataset relevance`.

Kept as a name to run: the work is `refcheck_callbacks/bench/relevance_bench.py` (docs/bench.md
says what each probe means; docs/diagnostics.md has the figures). Every option is
`refcheck bench`'s:

    python benchmarks/relevance_probes.py [--limit 250] [--output-dir DIR] [--checker SPEC]
"""

from __future__ import annotations

import sys

from refcheck_callbacks.cli.main import main as refcheck


def main(argv: list[str] | None = None) -> int:
    return refcheck(["bench", "--dataset", "relevance", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
