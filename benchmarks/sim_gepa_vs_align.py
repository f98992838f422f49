"""Loopback simulation (run with gepa on PYTHONPATH; see docs/alignment.md): gepa.optimize vs gradercal's own guidance candidate (#34 item 6).

Dev set: 94 tasks x 25 criteria (criterion kinds k00..k24 shared by tasks); the judge errs
w.p. 0.26 on 8 confused kinds and 0.10 elsewhere; its error on a confused kind falls to
0.10 when the prompt's text names the kind (known truth). Ours: one optimizer call sees
every dev disagreement and names the 8 most-disagreed kinds. GEPA: one example = one task
(score = agreement over its 25 criteria); its reflection LM sees the minibatch's
reflective dataset and, like our loopback optimizer, names the kinds it saw erring there
(appended to the instruction). Same judge calls counted. Judge randomness: fixed per
(task, kind, prompt-addresses-kind) so evaluations are reproducible.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.environ.get("GEPA_PATH", "/tmp/gepa"))
import gepa
from gepa.core.adapter import EvaluationBatch

K, CONF = 25, set(range(8))


def run(seed, budget):
    rng = np.random.default_rng(seed)
    n_dev, n_held = 94, 40
    truth = rng.random((n_dev + n_held, K)) < 0.5
    u = rng.random((n_dev + n_held, K))

    def judge(task, kind, prompt):
        named = f"k{kind:02d}" in prompt
        p = 0.26 if (kind in CONF and not named) else 0.10
        wrong = u[task, kind] < p
        return truth[task, kind] ^ wrong

    calls = {"n": 0}

    def acc(tasks, prompt):
        calls["n"] += len(tasks) * K
        return np.mean([judge(t, k, prompt) == truth[t, k] for t in tasks for k in range(K)])

    dev, held = list(range(n_dev)), list(range(n_dev, n_dev + n_held))
    base = "Judge the criterion."
    # ours: every dev disagreement -> name the 8 most-disagreed kinds
    calls["n"] = 0
    errs = np.zeros(K)
    for t in dev:
        for k in range(K):
            errs[k] += judge(t, k, base) != truth[t, k]
    top = np.argsort(-errs, kind="stable")[:8]
    ours = base + " Guidance: " + " ".join(f"k{k:02d}" for k in sorted(top))
    ours_calls = 2 * n_dev * K  # the baseline and the candidate on every dev criterion

    # gepa
    class Adapter:
        propose_new_texts = None

        def evaluate(self, batch, candidate, capture_traces=False):
            p = candidate["instruction"]
            outs, scores, traj = [], [], []
            for t in batch:
                calls["n"] += K
                v = [judge(t, k, p) for k in range(K)]
                scores.append(float(np.mean([v[k] == truth[t, k] for k in range(K)])))
                outs.append(v)
                traj.append([(k, v[k], truth[t, k]) for k in range(K)])
            return EvaluationBatch(outs, scores, traj if capture_traces else None)

        def make_reflective_dataset(self, candidate, eval_batch, comps):
            recs = []
            for tr in eval_batch.trajectories:
                for k, got, want in tr:
                    if got != want:
                        recs.append(
                            {
                                "Inputs": {"criterion": f"k{k:02d}"},
                                "Generated Outputs": str(got),
                                "Feedback": f"wrong: experts said {want}",
                            }
                        )
            return {"instruction": recs}

    def reflection_lm(prompt):
        seen = {}
        for k in range(K):
            seen[k] = (
                prompt.count(f'"criterion": "k{k:02d}"')
                + prompt.count(f"criterion: k{k:02d}")
                + prompt.count(f"k{k:02d}")
            )
        cur = prompt.split("```")[1] if "```" in prompt else base
        named = [k for k in range(K) if f"k{k:02d}" in cur]
        new = sorted(set(named) | {k for k in sorted(seen, key=lambda k: -seen[k])[:3] if seen[k]})
        return "```\n" + base + " Guidance: " + " ".join(f"k{k:02d}" for k in new) + "\n```"

    calls["n"] = 0
    res = gepa.optimize(
        seed_candidate={"instruction": base},
        trainset=dev,
        valset=dev,
        adapter=Adapter(),
        reflection_lm=reflection_lm,
        max_metric_calls=budget,
        seed=seed,
        display_progress_bar=False,
    )
    g = res.best_candidate["instruction"]
    g_calls = calls["n"]
    calls["n"] = 0
    return {
        "ours_dev": acc(dev, ours),
        "gepa_dev": acc(dev, g),
        "ours_held": acc(held, ours),
        "gepa_held": acc(held, g),
        "base_held": acc(held, base),
        "ours_calls": ours_calls,
        "gepa_calls": g_calls,
        "gepa_named_confused": sum(f"k{k:02d}" in g for k in CONF),
        "ours_named_confused": sum(f"k{k:02d}" in ours for k in CONF),
    }


budget = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rows = [run(s, budget) for s in range(int(sys.argv[2]) if len(sys.argv) > 2 else 10)]
print(json.dumps({k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}))
