"""A tried-and-left-out cascade (docs/coordination.md, "A cheaper scorer for GSM8K"): the first
model's answer is scored from features of its text (response length, question length, whether the
answer is an integer, its magnitude, how many numbers the question has; logistic regression on the
train split); a high score stops there, otherwise the second model answers and agreement (equal
extracted answers) stops, otherwise the third answers and the majority of the three is submitted
(the third's answer when all differ). Prints, per threshold, train accuracy and $ as a share of the
third model's: the train split is what a selection may read. Also the scorer's 5-fold
cross-validated AUC on train, with and without the question's MiniLM embedding (its first 32
principal components, fitted on each fold's training part): does the question's text add to it?

    python scripts/answer_text_scorer.py --records records/gsm8k \\
        --first gpt-4o-mini-2024-07-18 --second gemini-1.5-pro --third gpt-4o
"""

from __future__ import annotations

import argparse
from pathlib import Path

from consortium.reports.answer_text_scorer import AnswerTextRequest, answer_text_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--first", required=True)
    parser.add_argument("--second", required=True)
    parser.add_argument("--third", required=True)
    parser.add_argument(
        "--cache", type=Path, default=Path(".cache/coordination"), help="question embeddings"
    )
    args = parser.parse_args()
    for line in answer_text_lines(AnswerTextRequest(**vars(args))):
        print(line)


if __name__ == "__main__":
    main()
