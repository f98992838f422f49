"""``gradercal judge align``: improve the judge from the experts' verdicts and prove the
gain on held-out tasks."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

import click

from gradercal.cli.common import (
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.db.judging import JudgeStore
    from gradercal.judge.prompts import PromptTemplate
    from gradercal.judge.runner import Verdict, WorkItem

from gradercal.cli.judge import judge
from gradercal.cli.judge.common import (
    Connection,
    check_server_reachable,
    checked_price,
    connection_options,
    launch_run,
    note_interrupted,
    open_judge_store,
    price_from_option,
    prompt_with_vision,
)


# -- align -------------------------------------------------------------------------------
@judge.command("align")
@db_option
@benchmark_option
@click.option("--judge", "judge_name", required=True, metavar="NAME", help="A judge already run.")
@click.option("--model", required=True, metavar="MODEL", help="Model name as the server knows it.")
@connection_options
@click.option(
    "--optimizer-model", metavar="MODEL", help="Model writing the guidance (default: --model)."
)
@click.option(
    "--holdout-share",
    default=0.3,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Share of the tasks held out (stratified by workflow and domain).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the split.")
@click.option(
    "--holdout-from-calibration",
    is_flag=True,
    help="Hold out the tasks the judge's active calibration held out (instead of a new split).",
)
@click.option(
    "--max-candidates",
    default=1,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Finalists evaluated on the held-out tasks (the correction covers all of them).",
)
@click.option("--n-boot", default=2000, show_default=True, type=click.IntRange(100))
@click.option(
    "--vision",
    is_flag=True,
    help="Candidates that see figures (as `judge run --vision`): each is derived from the "
    "judge's prompt with the vision option. Run the judge with --vision first so that the "
    "baseline sees them too.",
)
@click.option("--vision-dpi", type=click.IntRange(36, 600), metavar="N", help="As judge run.")
@click.option("--vision-pages", type=click.IntRange(0, 100), metavar="N", help="As judge run.")
@click.option("--vision-images", type=click.IntRange(0, 100), metavar="N", help="As judge run.")
@click.option("--dry-run", is_flag=True, help="Only estimate requests, tokens and cost.")
@json_option
@handle_errors
def align(
    db: str | None,
    benchmark: str | None,
    judge_name: str,
    model: str,
    conn: Connection,
    optimizer_model: str | None,
    holdout_share: float,
    seed: int,
    holdout_from_calibration: bool,
    max_candidates: int,
    n_boot: int,
    vision: bool,
    vision_dpi: int | None,
    vision_pages: int | None,
    vision_images: int | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Improve a judge's prompt from the experts' verdicts and prove it on held-out tasks.

    The tasks with an expert consensus are split into development and held-out tasks
    (--holdout-share, --seed). Candidates are built from the development tasks only: the
    judge's disagreements with the consensus, the experts' rationales and adjudication
    notes, sent to an optimizer model (guidance per criterion), contrastive few-shot
    examples, and both. They are judged on the development tasks; the best
    --max-candidates go to the held-out tasks, where each is compared with the judge's
    stored verdicts by the paired difference of Cohen's kappa (task-clustered bootstrap,
    the same resamples for both) with a Holm correction over the finalists. A candidate
    is proven better only when its corrected lower bound is above zero; otherwise the
    baseline is kept. Every candidate is stored as a prompt version; the judge's own
    prompt is not changed. With --vision the candidates send each task's figures (the
    prompt's vision option, as `judge run --vision`). --max-cost caps everything the
    command pays for: the optimizer's call (its completion limit is lowered, or the call
    not made, so that its worst case fits) and every candidate run. See docs/alignment.md.
    """
    from gradercal.analysis import alignment as al
    from gradercal.db.judging import Scope
    from gradercal.judge.client import JudgeParams
    from gradercal.judge.runner import estimate_run

    store = open_judge_store(db)
    info = store.judge(judge_name)
    if info is None or not info.prompt_hash:
        raise GradercalError(
            f"--judge: no judge {judge_name!r} has been run; "
            f"run `gradercal judge run --judge {judge_name}` first"
        )
    baseline = store.load_prompt(info.prompt_hash)
    # the candidates derive from this one: the judge's prompt, with --vision seeing figures
    source = prompt_with_vision(baseline, vision, vision_dpi, vision_pages, vision_images)
    frames = store.repo.load_frames(benchmark)
    units_all = al.consensus_units(frames)
    graded = frames.tasks.loc[frames.tasks["task_id"].isin(set(units_all["task_id"]))]
    if holdout_from_calibration:
        from gradercal.db.calibrations import load_calibration

        saved = load_calibration(store.repo, benchmark, judge_name)
        held = [] if saved is None else list(saved.split.get("held_out") or [])
        if saved is None or not held:
            raise GradercalError(
                f"--holdout-from-calibration: judge {judge_name!r} has no active calibration "
                "with held-out tasks (run `gradercal calibrate --holdout 0.3 --save` first)"
            )
        try:
            split = al.split_from_held_out(
                graded, held, int(saved.split.get("seed") or 0), source=f"calibration {saved.id}"
            )
        except ValueError as exc:
            raise GradercalError(f"--holdout-from-calibration: {exc}") from None
    else:
        try:
            split = al.split_tasks(graded, holdout_share, seed)
        except ValueError as exc:
            raise GradercalError(f"--holdout-share: {exc}") from None
    items = store.work_items(benchmark, None, Scope.parse("all"), source)
    by_key = {(it.response_id, it.criterion_id): it for it in items}
    dev_units = al.development_units(frames, judge_name, split.development)
    held_frame = al.consensus_units(frames, split.held_out)
    dev_items = [
        by_key[k]
        for k in zip(dev_units["response_id"], dev_units["criterion_id"], strict=True)
        if k in by_key
    ]
    held_items = [
        by_key[k]
        for k in zip(held_frame["response_id"], held_frame["criterion_id"], strict=True)
        if k in by_key
    ]
    params = JudgeParams(model=model)
    model_price = checked_price(model, conn)
    if dry_run:
        per_candidate = [
            estimate_run(dev_items, source, max_tokens=params.max_tokens, price=model_price),
            estimate_run(held_items, source, max_tokens=params.max_tokens, price=model_price),
        ]
        n_dev_runs, n_held_runs = 3, max_candidates  # guidance, examples, both
        est = {
            "split": split.as_json(),
            "requests": n_dev_runs * per_candidate[0].requests
            + n_held_runs * per_candidate[1].requests
            + 1,
            "prompt_tokens": n_dev_runs * per_candidate[0].prompt_tokens
            + n_held_runs * per_candidate[1].prompt_tokens,
            "cost_usd": None
            if model_price is None
            else n_dev_runs * (per_candidate[0].cost_usd or 0.0)
            + n_held_runs * (per_candidate[1].cost_usd or 0.0),
            "note": "the optimizer's call and cached replies are not counted",
        }
        if as_json:
            emit_json({"judge": judge_name, "dry_run": True, "estimate": est})
        else:
            click.echo(
                f"judge align {judge_name!r}: ≈ {est['requests']} requests, "
                f"≈ {est['prompt_tokens']:,} prompt tokens, cost "
                + ("unknown" if est["cost_usd"] is None else f"≈ ${est['cost_usd']:.4f}")
            )
        return
    check_server_reachable(conn)
    note_interrupted(store)
    spent = {"usd": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    if source is not baseline:
        store.save_prompt(source)
    candidates = _align_candidates(
        store, frames, judge_name, split, dev_units, by_key, source,
        optimizer_model or model, conn, spent, benchmark,
    )  # fmt: skip

    def judged(
        prompt: PromptTemplate, work: list[WorkItem], label: str
    ) -> dict[tuple[str, str], bool]:
        got: dict[tuple[str, str], bool] = {}

        def keep(v: Verdict) -> None:
            if v.met is not None:
                got[(v.item.response_id, v.item.criterion_id)] = bool(v.met)

        budget = None if conn.max_cost is None else max(conn.max_cost - spent["usd"], 0.0)
        if budget is not None and budget <= 0.0:
            # the runner always sends a first request to learn its cost: not with nothing left
            click.echo(f"note: --max-cost reached; {label} is not run", err=True)
            return got
        done = launch_run(
            store, info, prompt, params, work, dataclasses.replace(conn, max_cost=budget),
            model_price=model_price,
            record={"kind": "align", "benchmark": benchmark, "prompt_version": prompt.content_hash},
            judgments=False, collect=keep, show_progress=not as_json, label=label,
        )  # fmt: skip
        spent["usd"] += done.stats.cost_usd
        spent["prompt_tokens"] += done.stats.prompt_tokens
        spent["completion_tokens"] += done.stats.completion_tokens
        spent["requests"] += done.stats.requests
        return got

    def as_array(frame: Any, verdicts: dict[tuple[str, str], bool]) -> Any:
        import numpy as np

        keys = zip(frame["response_id"], frame["criterion_id"], strict=True)
        return np.array([float(verdicts[k]) if k in verdicts else np.nan for k in keys])

    stored = {
        (r, c): bool(v)
        for r, c, v in zip(
            dev_units["response_id"], dev_units["criterion_id"], dev_units["judge_met"], strict=True
        )
    }
    dev_score: dict[str, float | None] = {baseline.content_hash: _kappa_of(dev_units, stored)}
    for cand in candidates:
        store.save_prompt(cand["prompt"])
        got = judged(cand["prompt"], dev_items, f"dev {cand['prompt'].short_hash}")
        dev_score[cand["prompt"].content_hash] = _kappa_of(dev_units, got)
        cand["dev_kappa"] = dev_score[cand["prompt"].content_hash]
    ranked = sorted(
        candidates, key=lambda c: -(c["dev_kappa"] if c["dev_kappa"] is not None else -2.0)
    )
    finalists = ranked[:max_candidates]
    base_held = frames.judgments.loc[frames.judgments["grader"] == judge_name]
    base_arr = al.verdicts_on(held_frame, base_held)
    held_verdicts: dict[str, Any] = {}
    for cand in finalists:
        got = judged(cand["prompt"], held_items, f"held-out {cand['prompt'].short_hash}")
        held_verdicts[cand["prompt"].content_hash] = as_array(held_frame, got)
    certificate = _align_certificate(
        frames, judge_name, split, baseline, candidates, finalists, held_frame, base_arr,
        held_verdicts, n_boot, seed, spent,
    )  # fmt: skip
    certificate["vision"] = None if source.vision is None else source.vision.to_dict()
    certificate["certificate_id"] = store.save_certificate(info, benchmark, certificate)
    if as_json:
        emit_json(certificate)
        return
    _print_align(certificate)


def _kappa_of(units: Any, verdicts: dict[tuple[str, str], bool]) -> float | None:
    """Cohen's kappa of ``verdicts`` against the consensus of ``units`` (their shared units)."""
    import numpy as np

    from gradercal.analysis.alignment import binary_figures

    keys = list(zip(units["response_id"], units["criterion_id"], strict=True))
    ok = np.array([k in verdicts for k in keys], dtype=bool)
    if not ok.any():
        return None
    j = np.array([float(verdicts.get(k, False)) for k in keys])[ok]
    c = units["consensus_met"].to_numpy(dtype=np.float64)[ok]
    k = float(binary_figures(np.array([len(j), j.sum(), c.sum(), (j * c).sum()]))["kappa"])
    return k if np.isfinite(k) else None


def _align_candidates(
    store: JudgeStore,
    frames: Any,
    judge_name: str,
    split: Any,
    dev_units: Any,
    by_key: dict[tuple[str, str], WorkItem],
    baseline: PromptTemplate,
    optimizer_model: str,
    conn: Connection,
    spent: dict[str, Any],
    benchmark: str | None = None,
) -> list[dict[str, Any]]:
    """The candidates built from the development tasks, each with its checked provenance."""
    from gradercal.analysis import alignment as al
    from gradercal.judge import align as ja
    from gradercal.judge.client import JudgeClient, JudgeParams, RetryPolicy
    from gradercal.judge.parse import ReplyParseError
    from gradercal.judge.secrets import resolve_api_key

    evidence = al.development_evidence(
        frames, judge_name, split, clarifications=_dev_clarifications(store, benchmark, split)
    )
    records: list[dict[str, Any]] = [
        {
            **{str(k): v for k, v in rec.items()},
            "response_text": getattr(
                by_key.get((rec["response_id"], rec["criterion_id"])), "response_text", ""
            ),
        }
        for rec in evidence.to_dict("records")
    ]
    texts = dict(zip(dev_units["criterion_key"], dev_units["criterion_text"], strict=True))
    out: list[dict[str, Any]] = []
    guided: PromptTemplate | None = None
    cap: int | None = None
    if records:
        messages, keys = ja.optimizer_messages(records)
        store.save_prompt(ja.OPTIMIZER_PROMPT)
        price = price_from_option(optimizer_model, conn.price)
        if conn.max_cost is not None and price is None:
            raise GradercalError(
                f"no price known for the optimizer model {optimizer_model!r}, so --max-cost "
                "cannot be enforced: add it to the price table or pass --price IN,OUT"
            )
        cap = ja.optimizer_token_cap(
            messages,
            0.0 if price is None else price.input,
            0.0 if price is None else price.output,
            None if conn.max_cost is None else conn.max_cost - spent["usd"],
        )
    if records and cap is None:
        click.echo(
            "note: the optimizer's call could exceed --max-cost: it is not made, so there is "
            "no guidance candidate",
            err=True,
        )
    elif records:
        assert cap is not None
        params = JudgeParams(model=optimizer_model, max_tokens=cap, logprobs=False)
        key = resolve_api_key(conn.api_key_env)
        client = JudgeClient(
            params, base_url=conn.base_url, api_key=key.value, concurrency=1,
            retry=RetryPolicy(max_attempts=conn.max_retries, timeout=conn.timeout),
            http_backend=conn.http,  # type: ignore[arg-type]
        )  # fmt: skip

        cache = store.cache()
        cache_key = client.cache_key(client.request_body(messages), 0)
        known = cache.get_many([cache_key])  # a re-run asks the optimizer nothing new

        async def ask() -> Any:
            async with client:
                return await client.sample(
                    messages, 0, known, check=lambda c: ja.parse_guidance(c, keys)
                )

        outcome = asyncio.run(ask())
        if outcome.cache_value is not None:
            cache.put_many([(outcome.cache_key, outcome.cache_value)], optimizer_model)
        spent["prompt_tokens"] += outcome.prompt_tokens
        spent["completion_tokens"] += outcome.completion_tokens
        spent["requests"] += outcome.attempts
        if price is not None:
            spent["usd"] += price.cost(outcome.prompt_tokens, outcome.completion_tokens)
        if outcome.status == "ok":
            try:
                g = ja.parse_guidance(outcome.raw, keys)
            except ReplyParseError:  # pragma: no cover - checked by sample()
                g = None
            if g is not None and (g.criteria or g.general):
                used = {k.split("/", 1)[0] for k in g.criteria} or {
                    str(t) for t in evidence["task_id"]
                }
                prov = al.Provenance(
                    ("guidance",),
                    frozenset(str(t) for t in evidence["task_id"]) | frozenset(used),
                    {
                        "optimizer_prompt": ja.OPTIMIZER_PROMPT.content_hash,
                        "model": optimizer_model,
                        "max_tokens": cap,
                    },
                )
                al.assert_no_leakage(prov.task_ids, split)
                guided = ja.guidance_prompt(baseline, g, texts)
                out.append({"prompt": guided, "provenance": prov})
        else:
            click.echo(f"note: the optimizer gave no usable guidance ({outcome.status})", err=True)
    pairs = al.contrastive_pairs(dev_units)
    if pairs:
        recs = dev_units.to_dict("records")
        shots = [
            [
                {
                    **recs[i],
                    "response_text": by_key[
                        (recs[i]["response_id"], recs[i]["criterion_id"])
                    ].response_text,
                }
                for i in pair
            ]
            for pair in pairs
            if all((recs[i]["response_id"], recs[i]["criterion_id"]) in by_key for i in pair)
        ]
        tasks = frozenset(str(recs[i]["task_id"]) for pair in pairs for i in pair)
        prov = al.Provenance(("examples",), tasks)
        al.assert_no_leakage(prov.task_ids, split)
        out.append({"prompt": ja.examples_prompt(baseline, shots), "provenance": prov})
        if guided is not None:
            both = out[0]["provenance"].merged(prov)
            al.assert_no_leakage(both.task_ids, split)
            out.append({"prompt": ja.examples_prompt(guided, shots), "provenance": both})
    return out


def _dev_clarifications(store: JudgeStore, benchmark: str | None, split: Any) -> Any:
    """The answered clarifications of the development tasks (``task_id``, ``criterion_id``,
    ``answer``); those of held-out tasks are never read into the evidence."""
    import pandas as pd

    from gradercal.db.clarifications import list_clarifications

    dev = set(split.development)
    rows = [
        {"task_id": c.task, "criterion_id": c.criterion, "answer": c.answer}
        for c in list_clarifications(store.db, benchmark)
        if c.answer and c.task in dev
    ]
    return pd.DataFrame(rows, columns=["task_id", "criterion_id", "answer"])


def _align_certificate(
    frames: Any,
    judge_name: str,
    split: Any,
    baseline: PromptTemplate,
    candidates: list[dict[str, Any]],
    finalists: list[dict[str, Any]],
    held_frame: Any,
    base_arr: Any,
    held_verdicts: dict[str, Any],
    n_boot: int,
    seed: int,
    spent: dict[str, Any],
) -> dict[str, Any]:
    """The JSON of ``judge align`` (docs/cli.md)."""
    from gradercal.analysis import alignment as al

    finalist_hashes = {c["prompt"].content_hash for c in finalists}
    out: dict[str, Any] = {
        "judge": judge_name,
        "split": split.as_json(),
        "baseline": {"prompt_version": baseline.content_hash},
        "candidates": [
            {
                "prompt_version": c["prompt"].content_hash,
                "built_from": list(c["provenance"].built_from),
                "provenance": c["provenance"].as_json(),
                "dev_kappa": c.get("dev_kappa"),
                "evaluated_on_held_out": c["prompt"].content_hash in finalist_hashes,
            }
            for c in candidates
        ],
        "heldout": {},
        "alt_test": {},
        "proven_better": False,
        "chosen": {"prompt_version": baseline.content_hash},
        "cost": {
            "usd": round(float(spent["usd"]), 6),
            "prompt_tokens": int(spent["prompt_tokens"]),
            "completion_tokens": int(spent["completion_tokens"]),
            "requests": int(spent["requests"]),
        },
        "note": None,
    }
    if not held_verdicts or len(held_frame) == 0:
        out["note"] = "no candidate to evaluate on the held-out tasks; the baseline is kept"
        return out
    units = al.HeldOutUnits.from_frame(held_frame)
    try:
        ev = al.evaluate_held_out(units, base_arr, held_verdicts, n_boot=n_boot, seed=seed)
    except ValueError as exc:
        out["note"] = f"no held-out proof: {exc}; the baseline is kept"
        return out
    out["heldout"][baseline.content_hash] = {"role": "baseline", **ev.baseline.as_json()}
    for c in ev.candidates:
        out["heldout"][c.name] = {"role": "candidate", **c.as_json()}
    out["heldout_design"] = {
        "n_tasks": ev.n_tasks, "n_units": units.n, "n_evaluated": ev.n_evaluated,
        "n_boot": ev.n_boot, "ci": ev.ci, "method": ev.method, "correction": "holm",
    }  # fmt: skip
    out["alt_test"] = _align_alt_tests(
        frames, judge_name, held_frame, base_arr, held_verdicts, baseline
    )
    proven = ev.proven()
    if proven:
        out["proven_better"] = True
        out["chosen"] = {"prompt_version": proven[0].name}
    else:
        out["note"] = "no candidate is proven better on the held-out tasks; the baseline is kept"
    return out


def _align_alt_tests(
    frames: Any,
    judge_name: str,
    held_frame: Any,
    base_arr: Any,
    held_verdicts: dict[str, Any],
    baseline: PromptTemplate,
) -> dict[str, Any]:
    """The alt-test of the baseline and each finalist on the held-out units."""
    import numpy as np
    import pandas as pd

    from gradercal.analysis.alt_test import AltTestRefused, alt_test

    item = [
        f"{r}\x1f{c}"
        for r, c in zip(held_frame["response_id"], held_frame["criterion_id"], strict=True)
    ]
    clusters = dict(zip(item, held_frame["task_id"], strict=True))
    j = frames.judgments
    h = j.loc[(j["grader_kind"] == "human") & j["met"].notna()]
    h = h.loc[
        h.set_index(["response_id", "criterion_id"]).index.isin(
            list(zip(held_frame["response_id"], held_frame["criterion_id"], strict=True))
        )
    ]
    humans = pd.DataFrame(
        {
            "item": [
                f"{r}\x1f{c}" for r, c in zip(h["response_id"], h["criterion_id"], strict=True)
            ],
            "annotator": h["grader"].astype(str).to_numpy(),
            "value": h["met"].astype(bool).to_numpy(),
        }
    )
    out: dict[str, Any] = {}
    for name, arr in {baseline.content_hash: base_arr, **held_verdicts}.items():
        judged = {i: bool(v) for i, v in zip(item, arr, strict=True) if not np.isnan(v)}
        try:
            res = alt_test(humans, judged, judge_name=name, clusters=clusters)
        except AltTestRefused as exc:
            out[name] = {"passed": None, "note": str(exc)}
            continue
        out[name] = {
            "passed": bool(res.passed),
            "winning_rate": float(res.winning_rate),
            "advantage_probability": float(res.advantage_probability),
        }
    return out


def _print_align(cert: dict[str, Any]) -> None:
    split = cert["split"]
    click.echo(
        f"judge align {cert['judge']!r}: {len(split['development'])} development, "
        f"{len(split['held_out'])} held-out tasks (seed {split['seed']}); "
        f"{len(cert['candidates'])} candidates, "
        f"{sum(c['evaluated_on_held_out'] for c in cert['candidates'])} evaluated on held-out"
    )
    for version, h in cert["heldout"].items():
        line = f"  {version[:12]} {h['role']:9} kappa {h['kappa']}"
        if "paired" in h:
            p = h["paired"]["kappa"]
            line += f"  Δ {p['estimate']} ci {p['ci']} corrected {p['ci_corrected']}"
        click.echo(line)
    click.echo(
        ("proven better: " + cert["chosen"]["prompt_version"][:12])
        if cert["proven_better"]
        else (cert.get("note") or "no candidate is proven better; the baseline is kept")
    )
    click.echo(f"cost: ${cert['cost']['usd']:.4f}, {cert['cost']['requests']} requests")


@judge.command("certificates")
@db_option
@click.option("--judge", "judge_name", metavar="NAME", help="Only this judge's certificates.")
@json_option
@handle_errors
def certificates(db: str | None, judge_name: str | None, as_json: bool) -> None:
    """The stored certificates of `judge align`, newest first (docs/alignment.md)."""
    rows = open_judge_store(db).certificates(judge_name)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no judge certificate stored")
    for r in rows:
        cert = r["certificate"]
        click.echo(
            f"{r['id']:>4}  {r['judge']}  {r['created_at'][:19]}  "
            f"baseline {cert['baseline']['prompt_version'][:12]} → chosen "
            f"{cert['chosen']['prompt_version'][:12]}  "
            + ("proven better" if r["proven_better"] else "not proven (baseline kept)")
        )
