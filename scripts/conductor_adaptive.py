"""A Conductor that learns how big a team each task needs: `make conductor-adaptive`.

    python scripts/conductor_adaptive.py --work .consortium/conductor-adaptive

SmolLM2-135M-Instruct conducts the recorded answers of real models on a mixed pool: the train
splits of GSM8K, MATH, HumanEval and DATE over one records replay server serving all four folders,
each question showing a random subset of its own data set's models
(`train.conductor.mixed_pool`). Stages (`train.conductor.adaptive`), each kept in WORK and
skipped when already there (the command resumes):

1. warm start: SFT on example workflows of 1 to 5 steps, with and without tool steps;
2. shapes: workflows sampled at temperature 1 after the warm start (steps, workers, tool steps);
3. GRPO and rejection-sampling fine-tuning (RFT) from the warm start, the same rollout budget,
   at λ = 0 and λ > 0 (reward = gate x (right - λ x cost / best single model's mean $)); or
   `distil`: SFT of the warm start on the workflow picked on train for each set (`distil`);
4. evaluation on each data set's test subset (greedy; `train.conductor.adaptive.evaluate`):
   accuracy, $ and calls per question of the base, warm-started and trained conductors beside
   the best single model, the vote over all of the set's models, the fixed workflows, one fixed
   workflow per set picked on train and the served team; the shape table per set with a
   chi-square test; examples.

Writes reports/conductor-adaptive.md and .json. A step's answer on replay is its model's recorded
sample whatever the step is told or shown (declared simulation), so only the last step's model
and the tool steps decide a workflow's answer.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from consortium.core.errors import ConfigError, ConsortiumError
from consortium.demo.served_team import ReplayedRecords, served_team_scores
from consortium.records.errors import RecordsError
from consortium.reports.conductor_adaptive.markdown import markdown
from consortium.reports.conductor_adaptive.summary import summary_of
from consortium.train.conductor.adaptive.request import FOLDERS, AdaptiveRequest
from consortium.train.conductor.adaptive.run import run_adaptive
from made_by import made_by

KEPT = "RFT keeps a prompt's best right workflow; contrastive: only if another sample was wrong"
DEFAULT = AdaptiveRequest(work="")


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    add = found.add_argument
    add("--work", required=True, help="training folder (kept; resumes)")
    add("--out", default=DEFAULT.out)
    add("--policies", default=DEFAULT.policies, help="the served teams' folders")
    add("--report-name", default=DEFAULT.report_name, help="OUT/NAME.md and OUT/NAME.json")
    add("--stages", default=DEFAULT.stages)
    add("--train-per-set", type=int, default=DEFAULT.train_per_set)
    add("--test-per-set", type=int, default=DEFAULT.test_per_set)
    add("--sft-steps", type=int, default=DEFAULT.sft_steps)
    add("--sft-batch", type=int, default=DEFAULT.sft_batch)
    add("--sft-lr", type=float, default=DEFAULT.sft_lr)
    add("--shape-questions", type=int, default=DEFAULT.shape_questions, help="per data set")
    add("--shape-samples", type=int, default=DEFAULT.shape_samples)
    add(
        "--methods",
        default=DEFAULT.methods,
        help="grpo, rft and distil (SFT of the warm start on the workflow picked on train per set)",
    )
    add("--distil-steps", type=int, default=DEFAULT.distil_steps, help="SFT steps of distil")
    add(
        "--distil-ids",
        choices=("numbers", "names"),
        default=DEFAULT.distil_ids,
        help="how distil's workflows write a step's model: its number in the prompt's roster "
        "(as the prompt asks) or its name (which the parser reads alike)",
    )
    add("--lambdas", default=DEFAULT.lambdas, help="λ values of the trained conductors")
    add("--rollouts", type=int, default=DEFAULT.rollouts, help="per training run")
    add("--questions-per-step", type=int, default=DEFAULT.questions_per_step)
    add("--group-size", type=int, default=DEFAULT.group_size)
    add("--grpo-lr", type=float, default=DEFAULT.grpo_lr)
    add("--rft-lr", type=float, default=DEFAULT.rft_lr)
    add("--rft-kept", choices=("best", "contrastive"), default=DEFAULT.rft_kept, help=KEPT)
    add("--max-completion", type=int, default=DEFAULT.max_completion)
    add(
        "--temperature",
        type=float,
        default=DEFAULT.temperature,
        help="sampling temperature of GRPO and RFT",
    )
    add(
        "--min-p",
        type=float,
        default=DEFAULT.min_p,
        help="GRPO and RFT sample only tokens at least this share of the likeliest one's "
        "probability (0: every token)",
    )
    add("--seed", type=int, default=DEFAULT.seed)
    add(
        "--evaluate",
        default=DEFAULT.evaluate,
        help="the conductors evaluated: all, or labels such as 'base,warm start,RFT λ=0.2'",
    )
    add(
        "--worker-notes",
        choices=("none", "names"),
        default=DEFAULT.worker_notes,
        help="what a prompt says of each worker beside its number: nothing, or its model's name",
    )
    add(
        "--base-model",
        default=DEFAULT.base_model,
        help="the conductor's base ('tiny': a smoke run)",
    )
    return found


def main() -> None:
    arguments = parser()
    try:
        request = AdaptiveRequest(**vars(arguments.parse_args()))
    except ConfigError as error:
        arguments.error(str(error))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        work = run_adaptive(
            request, ReplayedRecords(FOLDERS, request.worker_notes), served_team_scores
        )
        if "report" in request.stages.split(","):
            summary = summary_of(work)
            text = markdown(summary, made_by("conductor_adaptive.py", sys.argv[1:]))
            out = Path(request.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{request.report_name}.md").write_text(text)
            (out / f"{request.report_name}.json").write_text(
                json.dumps(summary, indent=2, default=str).replace(str(work.root.resolve()), "WORK")
            )
            print(text)
    except RecordsError as error:
        sys.exit(f"conductor_adaptive: {error} (`make records` imports the four folders)")
    except ConsortiumError as error:
        sys.exit(f"conductor_adaptive: {error}")


if __name__ == "__main__":
    main()
