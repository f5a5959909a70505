"""The targets a bench checks: each printed with its figure and a verdict, and the exit status.

    targets = Targets()
    targets.check("warm build < 100 ms", met=ms < 100, figure=f"{ms:.0f} ms")
    sys.exit(targets.exit_status())

Exit status: 0 when every target was met, 1 when one was missed, 2 when none
was missed but one could not be measured (a peer that would not install, a
missing GPU): a bench that could not tell is not a pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["Targets", "machine_load"]


def machine_load() -> str:
    """The machine's load averages and core count, to print with the figures."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


@dataclass
class Targets:
    """The verdicts of one bench run, in the order they were checked."""

    verdicts: list[tuple[str, bool | None]] = field(default_factory=list)

    def check(self, name: str, met: bool | None, figure: str) -> None:
        """Print ``name``'s verdict with ``figure`` (ratio and peer); ``met`` None: not measured."""
        verdict = {True: "met", False: "MISSED", None: "not measured"}[met]
        print(f"target {name}: {verdict} ({figure})", flush=True)
        self.verdicts.append((name, met))

    def exit_status(self) -> int:
        """0 all met, 1 one missed, 2 one not measured (and none missed)."""
        missed = [name for name, met in self.verdicts if met is False]
        unknown = [name for name, met in self.verdicts if met is None]
        if missed:
            print(f"missed {len(missed)} of {len(self.verdicts)}: " + "; ".join(missed), flush=True)
            return 1
        if unknown:
            print("not measured: " + "; ".join(unknown), flush=True)
            return 2
        print(f"all {len(self.verdicts)} targets met", flush=True)
        return 0
