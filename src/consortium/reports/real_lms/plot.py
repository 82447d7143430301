"""`make real`'s figure: accuracy per policy and task set, with Wilson 95 % intervals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consortium.reports.real_lms.request import POOL_NAME, Row


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r.tasks for r in rows))
    policies = list(dict.fromkeys(r.policy for r in rows))
    figure, axis = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(sets)
    for index, label in enumerate(sets):
        chosen = {r.policy: r for r in rows if r.tasks == label}
        values = [100 * chosen[p].accuracy for p in policies]
        low = [100 * (chosen[p].accuracy - chosen[p].interval()[0]) for p in policies]
        high = [100 * (chosen[p].interval()[1] - chosen[p].accuracy) for p in policies]
        axis.bar(
            [i + index * width for i in range(len(policies))],
            values,
            width,
            yerr=[low, high],
            capsize=2,
            label=label,
        )
    axis.set_xticks([i + width * (len(sets) - 1) / 2 for i in range(len(policies))])
    axis.set_xticklabels([p[:28] for p in policies], rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("accuracy (%), Wilson 95 % interval")
    axis.set_title(POOL_NAME, fontsize=8)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
