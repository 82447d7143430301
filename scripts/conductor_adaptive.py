"""A Conductor that learns how big a team each task needs: `make conductor-adaptive`.

    python scripts/conductor_adaptive.py --work .consortium/conductor-adaptive

SmolLM2-135M-Instruct conducts the recorded answers of real models on a mixed pool: the train
splits of GSM8K, MATH, HumanEval and DATE over one records replay server serving all four folders,
each question showing a random subset of its own data set's models
(`train.conductor.mixed_pool`). Stages, each kept in WORK and skipped when already there (the
command resumes):

1. warm start: SFT on example workflows of 1 to 5 steps, with and without tool steps;
2. shapes: workflows sampled at temperature 1 after the warm start (steps, workers, tool steps);
3. GRPO and rejection-sampling fine-tuning (RFT) from the warm start, the same rollout budget,
   at λ = 0 and λ > 0 (reward = gate x (right - λ x cost / best single model's mean $)); or
   `distil`: SFT of the warm start on the workflow picked on train for each set (`distil`);
4. evaluation on each data set's test subset (greedy; `adaptive_eval.py`): accuracy, $ and calls
   per question of the base, warm-started and trained conductors beside the best single model,
   the vote over all of the set's models, the fixed workflows, one fixed workflow per set picked
   on train and the served team; the shape table per set with a chi-square test; examples.

Writes reports/conductor-adaptive.md and .json. A step's answer on replay is its model's recorded
sample whatever the step is told or shown (declared simulation), so only the last step's model
and the tool steps decide a workflow's answer.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from adaptive_eval import (
    exit_on_error,
    lambda_values,
    lambdas,
    reward_of,
    say,
    stage_eval,
    train_picks,
)
from adaptive_reachable import distil_examples
from adaptive_report import markdown, summary_of
from consortium.pool.config import PoolConfig
from consortium.replay.launch import ReplayServerProcess
from consortium.replay.pool import replay_pool
from consortium.replay.records import load_records_replay
from consortium.smallmodels.files import SMOLLM2
from consortium.train.conductor.base_models import load_tokenizer, resolve_base
from consortium.train.conductor.grpo import (
    GRPOSettings,
    train_conductor,
    training_rows,
)
from consortium.train.conductor.measure import parsed_shape
from consortium.train.conductor.mixed_pool import MixedTasks, mixed_tasks
from consortium.train.conductor.rejection_sft import RejectionSettings, rejection_sft
from consortium.train.conductor.workflow_sampling import Sampler
from consortium.train.conductor.workflow_sft import WarmStartSettings, fine_tune, warm_start
from made_by import made_by

FOLDERS = ("records/gsm8k", "records/math", "records/humaneval", "records/date")
METHODS = ("grpo", "rft", "distil")
KEPT = "RFT keeps a prompt's best right workflow; contrastive: only if another sample was wrong"


def mixed_pool(folders: tuple[str, ...], base_url: str, notes: str = "none") -> PoolConfig:
    """Every recorded model of the folders behind one replay server. `notes`: "none" (the prompt
    shows "Model k" and nothing else) or "names" ("Model k: gpt-4o"): each prompt lists a random
    subset in a random order, so only a name tells the conductor which model a number is."""
    config = replay_pool(load_records_replay(list(folders)), base_url, max_retries=0)
    return PoolConfig(
        models=[
            m.model_copy(update={"strengths": m.name if notes == "names" else None})
            for m in config.models
        ]
    )


class Work:
    """The work folder: what each stage wrote, and the rows every stage shares."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(args.work)
        self.train = mixed_tasks(FOLDERS, "train", per_set=args.train_per_set, seed=args.seed)
        self.test = mixed_tasks(
            FOLDERS, "test", per_set=args.test_per_set, seed=args.seed + 1, infos=self.train.sets
        )
        self.root.mkdir(parents=True, exist_ok=True)  # once the records are there
        self.base = resolve_base(args.base_model, self.root, args.seed)
        self.tokenizer = load_tokenizer(self.base)

    def rows(
        self, tasks: MixedTasks, pool: PoolConfig, seed: int, *, every_worker: bool = False
    ) -> list[dict[str, Any]]:
        """Prompt rows: a random subset of each task's roster, or (`every_worker`) all of it."""
        return training_rows(
            tasks.tasks,
            pool,
            min_workers=99 if every_worker else 2,
            max_steps=5,
            seed=seed,
            chat=False,
            tokenizer=self.tokenizer,
            examples=False,
        )

    @property
    def warm_dir(self) -> Path:
        return self.root / "warm-start"


def stage_warm(work: Work, pool: PoolConfig) -> None:
    if (work.warm_dir / "config.json").is_file():
        return
    args = work.args
    settings = WarmStartSettings(
        steps=args.sft_steps, batch_size=args.sft_batch, learning_rate=args.sft_lr, seed=args.seed
    )
    say(f"warm start: {settings.steps} steps x {settings.batch_size} examples")
    started = time.perf_counter()
    warm_start(
        work.base,
        work.rows(work.train, pool, args.seed),
        work.warm_dir,
        settings,
        on_log=lambda row: say(f"SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
    )
    (work.warm_dir / "seconds.json").write_text(
        json.dumps({"seconds": round(time.perf_counter() - started, 1)})
    )


def stage_shapes(work: Work, pool: PoolConfig) -> None:
    """Workflows sampled at temperature 1 after the warm start, on training questions: their
    shapes as parsed (no worker is called)."""
    path = work.root / "shapes-warm.json"
    if path.exists():
        return
    args = work.args
    per_set = mixed_tasks(FOLDERS, "train", per_set=args.shape_questions, seed=args.seed + 7)
    rows = work.rows(per_set, pool, args.seed + 7)
    say(f"shapes after the warm start: {len(rows)} questions x {args.shape_samples} samples")
    started = time.perf_counter()
    texts = Sampler.load(work.warm_dir).complete(
        rows,
        samples=args.shape_samples,
        temperature=1.0,
        max_new_tokens=args.max_completion,
        on_row=lambda index: say(f"sampled row {index + 1}"),
    )
    shapes = [
        parsed_shape(text, json.loads(row["workers"]))
        for row, found in zip(rows, texts, strict=True)
        for text in found
    ]
    path.write_text(
        json.dumps(
            {
                "questions": len(rows),
                "samples": args.shape_samples,
                "datasets": [
                    r["task_id"].split("/")[0] for r in rows for _ in range(args.shape_samples)
                ],
                "scores": [{"valid": s is not None, "shape": s} for s in shapes],
                "texts": [t for found in texts for t in found],
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


def stage_train(work: Work, pool: PoolConfig) -> None:
    args = work.args
    rows = work.rows(work.train, pool, args.seed)
    groups = args.rollouts // args.group_size
    for cost_weight in lambdas(args):
        for method in args.methods.split(","):
            out = work.root / f"{method}-l{cost_weight:g}"
            if (out / "model" / "config.json").is_file():
                continue
            spent = (
                f"{args.distil_steps} SFT steps"
                if method == "distil"
                else f"{args.rollouts} rollouts"
            )
            say(f"{method} at λ={cost_weight:g}: {spent}")
            started = time.perf_counter()
            common = {
                "max_completion_length": args.max_completion,
                "seed": args.seed,
                "temperature": args.temperature,
                "min_p": args.min_p,
            }
            if method == "distil":
                distil(work, pool, cost_weight, out)
            elif method == "grpo":
                train_conductor(
                    str(work.warm_dir),
                    pool,
                    work.train.tasks,
                    work.train.grader,
                    out,
                    GRPOSettings(
                        steps=groups // args.questions_per_step,
                        questions_per_step=args.questions_per_step,
                        group_size=args.group_size,
                        learning_rate=args.grpo_lr,
                        save_steps=1,
                        cost_weight=cost_weight,
                        examples=False,
                        **common,
                    ),
                    resume=True,
                    on_log=lambda row: say(f"GRPO {json.dumps(row)}"),
                )
            else:
                reward = reward_of(pool, work.train, cost_weight)
                try:
                    rejection_sft(
                        str(work.warm_dir),
                        rows,
                        reward,
                        out,
                        RejectionSettings(
                            rounds=groups // args.questions_per_step,
                            questions_per_round=args.questions_per_step,
                            samples=args.group_size,
                            learning_rate=args.rft_lr,
                            contrastive=args.rft_kept == "contrastive",
                            **common,
                        ),
                        resume=True,
                        on_log=lambda row: say(f"RFT {json.dumps(row)}"),
                    )
                finally:
                    reward.close()
            (out / "seconds.json").write_text(
                json.dumps({"seconds": round(time.perf_counter() - started, 1)})
            )


def distil(work: Work, pool: PoolConfig, cost_weight: float, out: Path) -> None:
    """SFT of the warm start into OUT/model on the workflow picked on train for each prompt's
    set at `cost_weight` (`adaptive_eval.train_picks`), every worker of the set shown as in the
    test prompts. It learns from a search over fixed workflows, not from its own samples: which
    set a question comes from and where the pick's models stand in a shuffled roster."""
    args = work.args
    picks = train_picks(work, pool, cost_weight)
    say(f"distil at λ={cost_weight:g}: the picks {json.dumps(picks)}")
    rows = work.rows(work.train, pool, args.seed, every_worker=True)
    settings = WarmStartSettings(
        steps=args.distil_steps,
        batch_size=args.sft_batch,
        learning_rate=args.sft_lr,
        seed=args.seed,
    )
    examples = distil_examples(
        rows,
        work.train,
        picks,
        settings.steps * settings.batch_size,
        args.seed,
        by_name=args.distil_ids == "names",
    )
    fine_tune(
        str(work.warm_dir),
        examples,
        out / "model",
        settings,
        on_log=lambda row: say(f"distil SFT step {int(row['step'])}: loss {row['loss']:.3f}"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--work", required=True, help="training folder (kept; resumes)")
    parser.add_argument("--out", default="reports")
    parser.add_argument("--policies", default="policies", help="the served teams' folders")
    parser.add_argument(
        "--report-name", default="conductor-adaptive", help="OUT/NAME.md and OUT/NAME.json"
    )
    parser.add_argument("--stages", default="warm,shapes,train,eval,report")
    parser.add_argument("--train-per-set", type=int, default=50)
    parser.add_argument("--test-per-set", type=int, default=5)
    parser.add_argument("--sft-steps", type=int, default=24)
    parser.add_argument("--sft-batch", type=int, default=2)
    parser.add_argument("--sft-lr", type=float, default=1e-4)
    parser.add_argument("--shape-questions", type=int, default=2, help="per data set")
    parser.add_argument("--shape-samples", type=int, default=4)
    parser.add_argument(
        "--methods",
        default="grpo,rft",
        help="grpo, rft and distil (SFT of the warm start on the workflow picked on train per set)",
    )
    parser.add_argument("--distil-steps", type=int, default=40, help="SFT steps of distil")
    parser.add_argument(
        "--distil-ids",
        choices=("numbers", "names"),
        default="numbers",
        help="how distil's workflows write a step's model: its number in the prompt's roster "
        "(as the prompt asks) or its name (which the parser reads alike)",
    )
    parser.add_argument("--lambdas", default="0.2", help="λ values of the trained conductors")
    parser.add_argument("--rollouts", type=int, default=24, help="per training run")
    parser.add_argument("--questions-per-step", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--grpo-lr", type=float, default=5e-6)
    parser.add_argument("--rft-lr", type=float, default=5e-5)
    parser.add_argument("--rft-kept", choices=("best", "contrastive"), default="best", help=KEPT)
    parser.add_argument("--max-completion", type=int, default=160)
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="sampling temperature of GRPO and RFT"
    )
    parser.add_argument(
        "--min-p",
        type=float,
        default=0.0,
        help="GRPO and RFT sample only tokens at least this share of the likeliest one's "
        "probability (0: every token)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--evaluate",
        default="all",
        help="the conductors evaluated: all, or labels such as 'base,warm start,RFT λ=0.2'",
    )
    parser.add_argument(
        "--worker-notes",
        choices=("none", "names"),
        default="none",
        help="what a prompt says of each worker beside its number: nothing, or its model's name",
    )
    parser.add_argument(
        "--base-model", default=SMOLLM2.name, help="the conductor's base ('tiny': a smoke run)"
    )
    args = parser.parse_args()
    try:
        lambda_values(args.lambdas)
    except argparse.ArgumentTypeError as error:
        parser.error(f"--lambdas: {error}")
    unknown = set(args.methods.split(",")) - set(METHODS)
    if unknown:
        parser.error(
            f"--methods: unknown {', '.join(sorted(unknown))}; known: {', '.join(METHODS)}"
        )
    if not 0 <= args.min_p < 1:
        parser.error(f"--min-p: expected a share in [0, 1), got {args.min_p:g}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    exit_on_error("conductor_adaptive", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    stages = set(args.stages.split(","))
    work = Work(args)
    if "warm" in stages:
        stage_warm(work, mixed_pool(FOLDERS, "http://unused", args.worker_notes))
    if "shapes" in stages:
        stage_shapes(work, mixed_pool(FOLDERS, "http://unused", args.worker_notes))
    if stages & {"train", "eval"}:
        with ReplayServerProcess(None, records=list(FOLDERS)) as server:
            pool = mixed_pool(FOLDERS, server.base_url, args.worker_notes)
            if "train" in stages:
                stage_train(work, pool)
            if "eval" in stages:
                stage_eval(work, pool)
    if "report" in stages:
        summary = summary_of(work)
        command = made_by("conductor_adaptive.py", sys.argv[1:])
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        text = markdown(summary, command)
        (out / f"{args.report_name}.md").write_text(text)
        (out / f"{args.report_name}.json").write_text(
            json.dumps(summary, indent=2, default=str).replace(str(work.root.resolve()), "WORK")
        )
        print(text)


if __name__ == "__main__":
    main()
