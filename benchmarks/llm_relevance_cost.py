"""What the LLM relevance judge (`relevance="llm:MODEL"`) costs per answer: its one call's
prompt, the reply it reserves in a judge budget, and the reply it gets, counted by litellm's
tokenizer and priced from litellm's cost map, offline (no model is called).

The answers are built from WikiQA dev and TREC QA DEV as in `relevance_probes.py`: each
question with up to `--references` of its candidate sentences (answer-bearing ones first) as
the references, and its first answer sentence as the answer and its one claim. The reply is
the one the prompt asks for, every grade filled in.

    python benchmarks/llm_relevance_cost.py [--model gpt-4o-mini] [--references 5] [--limit 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict

from refcheck_callbacks.check.relevance.llm_prompt import relevance_messages
from refcheck_callbacks.check.relevance.llm_relevance import LLMRelevance
from refcheck_callbacks.llm.loading import load_litellm
from refcheck_callbacks.training.relevance_data import load_pairs
from refcheck_callbacks.types import Reference


def answers(references: int, limit: int) -> list[tuple[str, list[str], str]]:
    """(question, reference texts, answer) per question that has an answer sentence."""
    out = []
    for dataset, split in (("wikiqa", "dev"), ("trecqa", "DEV")):
        by_question: dict[str, list] = defaultdict(list)
        for pair in load_pairs(dataset, split):
            by_question[pair.question_id].append(pair)
        for pairs in list(by_question.values())[:limit]:
            ranked = sorted(pairs, key=lambda p: not p.relevant)
            if ranked[0].relevant:
                texts = [p.passage for p in ranked[:references]]
                out.append((pairs[0].question, texts, ranked[0].passage))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--limit", type=int, default=200, help="questions per split at most")
    args = parser.parse_args()
    litellm = load_litellm()
    judge = LLMRelevance(args.model)
    prompts, reserved, replies, usd = [], [], [], []
    for question, texts, answer in answers(args.references, args.limit):
        references = [Reference(text=t) for t in texts]
        messages, asked = relevance_messages(
            question, references, answer, [answer], "0" * 12, judge.max_reference_chars
        )
        prompt = int(litellm.token_counter(model=args.model, messages=messages))
        bound = 16 + judge.max_tokens_per_item * (asked.documents + asked.claims + 1)
        reply = "\n".join(line.replace("<grade>", "2") for line in asked.lines())
        written = int(litellm.token_counter(model=args.model, text=reply))
        prompts.append(prompt)
        reserved.append(prompt + bound)
        replies.append(written)
        usd.append(sum(litellm.cost_per_token(model=args.model, prompt_tokens=prompt,
                                              completion_tokens=written)))  # fmt: skip
    figures = {
        "model": args.model,
        "answers": len(prompts),
        "references_per_answer": args.references,
        "prompt_tokens_mean": round(statistics.mean(prompts), 1),
        "prompt_tokens_max": max(prompts),
        "reserved_tokens_mean": round(statistics.mean(reserved), 1),
        "reply_tokens_mean": round(statistics.mean(replies), 1),
        "usd_per_1000_answers": round(1000 * statistics.mean(usd), 4),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
