"""The judge's core pieces without a server: prompts, parsing, prices, secrets, artifacts, probes."""

from __future__ import annotations

import json
import math
from email.utils import formatdate
from pathlib import Path

import pandas as pd
import pytest

from gradercal.errors import GradercalError, ValidationError
from gradercal.judge import (
    DEFAULT_PROMPT,
    ArtifactInput,
    JudgeClient,
    JudgeParams,
    Price,
    PromptContext,
    PromptTemplate,
    Redactor,
    ReplyParseError,
    RetryPolicy,
    SampleOutcome,
    WorkItem,
    aggregate,
    apply_probe,
    artifact_context,
    expert_reference,
    flip_stats,
    length_bias,
    load_prices,
    p_met_from_logprobs,
    parse_reply,
    price_for,
    prompt_from_dict,
    public_url,
    resolve_api_key,
    retry_after_seconds,
    wilson_interval,
)
from gradercal.judge.parse import TokenLogprob
from gradercal.judge.probes import INJECTION, sections

# -- prompts ------------------------------------------------------------------------------


def test_content_hash_covers_content_not_label_or_lineage() -> None:
    a = PromptTemplate(system="S", user="{{response}} / {{criterion}}", name="a")
    b = PromptTemplate(system="S", user="{{response}} / {{criterion}}", name="b", parent_hash="x")
    c = PromptTemplate(system="S!", user="{{response}} / {{criterion}}")
    assert a.content_hash == b.content_hash != c.content_hash
    d = a.derive(system="S2")
    assert d.parent_hash == a.content_hash and d.system == "S2" and d.name == "a"
    assert prompt_from_dict(json.loads(json.dumps(d.to_dict()))).content_hash == d.content_hash


def test_render_substitutes_once_and_keeps_braces_of_the_response() -> None:
    ctx = PromptContext(
        response="I write {{criterion}} and {json: 1}",
        criterion="Mentions X",
        points=-4,
        task_prompt="Do the task",
        criterion_tags=("axis:accuracy",),
        artifacts="",
    )
    messages = DEFAULT_PROMPT.render(ctx)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "<response>\nI write {{criterion}} and {json: 1}\n</response>" in user
    assert '<criterion points="-4">\nMentions X\n</criterion>' in user
    assert "<attachments>\n(none)\n</attachments>" in user
    assert "Do the task" in user


def test_few_shot_examples_become_user_assistant_pairs() -> None:
    p = PromptTemplate(
        system="sys",
        user="R={{response}} C={{criterion}} P={{points}}",
        few_shot=({"response": "r1", "criterion": "c1", "points": 2, "criteria_met": True,
                   "explanation": "yes"},),
    )  # fmt: skip
    msgs = p.render(PromptContext(response="r", criterion="c", points=1))
    assert msgs[1] == {"role": "user", "content": "R=r1 C=c1 P=+2"}
    assert json.loads(msgs[2]["content"]) == {"explanation": "yes", "criteria_met": True}
    assert msgs[3] == {"role": "user", "content": "R=r C=c P=+1"}


def test_invalid_prompts_list_every_problem() -> None:
    with pytest.raises(ValidationError) as err:
        PromptTemplate(
            system="{{nonsense}}",
            user="only {{criterion}}",
            options={"colour": 1},
            few_shot=({"response": "r", "criterion": "c", "criteria_met": "yes"},),
        )
    text = str(err.value)
    assert "system: unknown placeholder(s) nonsense" in text
    assert "user: must use {{response}}" in text
    assert "unknown option(s) ['colour']" in text
    assert "few_shot[0].criteria_met: must be true or false" in text
    with pytest.raises(ValidationError, match="user: required"):
        prompt_from_dict({"system": "s"})


def test_artifact_budget_is_zero_when_the_prompt_sends_no_artifacts() -> None:
    assert DEFAULT_PROMPT.artifact_budget_tokens == 2000
    bare = PromptTemplate(system="s", user="{{response}} {{criterion}}")
    assert bare.artifact_budget_tokens == 0


# -- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "met", "explanation"),
    [
        ('{"explanation": "ok", "criteria_met": true}', True, "ok"),
        ('```json\n{"explanation": "no", "criteria_met": false}\n```', False, "no"),
        ('Sure! {"criteria_met": false, "explanation": "x"} Hope this helps.', False, "x"),
        ('{"criteria_met": true}', True, ""),
        # reasoning models: braces and a draft verdict in the reasoning are not the answer
        (
            '<think>Is {x} there? Draft: {"criteria_met": true}. {a, b}</think>\n'
            '{"explanation": "absent", "criteria_met": false}',
            False,
            "absent",
        ),
        ('<thinking>{"criteria_met": false}</thinking>{"criteria_met": true}', True, ""),
        (
            '<think>\n{"criteria_met": false}\n</think>\n```json\n{"criteria_met": true}\n```',
            True,
            "",
        ),
        (
            '{"explanation": "e", "criteria_met": true}\n\nI checked {the dose} {as asked}.',
            True,
            "e",
        ),
        (
            'Draft {"criteria_met": false} then final: {"criteria_met": true, "explanation": "f"}',
            True,
            "f",
        ),
        (
            '{"explanation": {"nested": 1}, "criteria_met": false} trailing }',
            False,
            '{"nested": 1}',
        ),
    ],
)
def test_replies_that_parse(content: str, met: bool, explanation: str) -> None:
    parsed = parse_reply(content)
    assert (parsed.met, parsed.explanation) == (met, explanation)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "empty reply"),
        ("   ", "empty reply"),
        ("The criterion is met.", "no JSON object"),
        ('{"explanation": "the response cov', "no JSON object"),
        ('{"explanation": "x", "criteria_met": "yes"}', "not a boolean"),
        ('{"explanation": "x", "criteria_met": 1}', "not a boolean"),
        ('{"explanation": "x"}', "lacks criteria_met"),
        ("[true]", "no JSON object"),
        # the only verdict is inside the reasoning (an unclosed block runs to the end)
        ('<think>{"criteria_met": true}</think>The criterion is met.', "no JSON object"),
        ('<think>so {"criteria_met": true} ... (cut off', "no JSON object"),
        ('{"criteria_met": true', "no JSON object"),
    ],
)
def test_replies_without_a_boolean_verdict_are_parse_errors(
    content: str | None, message: str
) -> None:
    with pytest.raises(ReplyParseError, match=message):
        parse_reply(content)


def _tokens(*parts: str | tuple[str, float, list[tuple[str, float]]]) -> list[TokenLogprob]:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(TokenLogprob(p, 0.0))
        else:
            out.append(TokenLogprob(p[0], p[1], tuple(p[2])))
    return out


def test_p_met_from_the_verdict_token() -> None:
    toks = _tokens(
        '{"', "explanation", '":', ' "', "true", " story", '",', ' "', "criteria", "_met", '":', " ",
        ("false", math.log(0.7), [("false", math.log(0.7)), ("true", math.log(0.2)), ("x", -1)]),
        "}",
    )  # fmt: skip
    # "true" inside the explanation is not the verdict; mass renormalised over true/false
    assert p_met_from_logprobs(toks) == pytest.approx(0.2 / 0.9)
    merged = _tokens('{"criteria_met', ('": true', math.log(0.8), []), "}")
    assert p_met_from_logprobs(merged) == pytest.approx(0.8)
    assert p_met_from_logprobs(_tokens('{"criteria_met": ', "maybe", "}")) is None
    assert p_met_from_logprobs([]) is None


def test_skipping_tokens_before_the_verdict_key_gives_the_same_p_met() -> None:
    # The client hands p_met_from_logprobs only the tokens from the one where
    # "criteria_met" begins; on every split of a reply the answer must be unchanged.
    import random

    from gradercal.judge.client import _verdict_key_token

    text = '{"explanation": "criteria_met is true here", "criteria_met": false}'
    rng = random.Random(3)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(3, 25)))
        parts = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        raw = [
            {"token": t, "logprob": math.log(0.6),
             "top_logprobs": [{"token": t, "logprob": math.log(0.6)},
                              {"token": t.replace("false", "true"), "logprob": math.log(0.3)}]}
            for t in parts
        ]  # fmt: skip
        toks = [
            TokenLogprob(r["token"], r["logprob"],
                         tuple((a["token"], a["logprob"]) for a in r["top_logprobs"]))
            for r in raw
        ]  # fmt: skip
        start = _verdict_key_token(raw)
        pos = text.find("criteria_met")  # its first character is in token ``start``
        assert len("".join(parts[:start])) <= pos < len("".join(parts[: start + 1]))
        assert p_met_from_logprobs(toks[start:]) == p_met_from_logprobs(toks)
    assert _verdict_key_token([{"token": '{"a": 1}'}]) == 1  # no key: nothing to scan


# -- retries ------------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    now = 1_800_000_000.0
    assert retry_after_seconds({"retry-after": formatdate(now + 7, usegmt=True)}, now) == 7.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_is_exponential_with_jitter_and_honours_retry_after() -> None:
    client = JudgeClient(
        JudgeParams(model="m"), retry=RetryPolicy(base_delay=1.0, max_delay=10.0), seed=1
    )
    for attempt, full in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 10.0)]:
        delays = [client.backoff_delay(attempt) for _ in range(200)]
        assert full / 2 <= min(delays) and max(delays) <= full
        assert max(delays) - min(delays) > full / 4  # jittered, not constant
    waits = [client.backoff_delay(1, retry_after=5.0) for _ in range(100)]
    assert min(waits) >= 5.0 and max(waits) <= 5.5


# -- prices, secrets ----------------------------------------------------------------------


def test_prices_by_name_prefix_and_user_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_prices(tmp_path / "absent.json")
    assert price_for("gpt-4o-mini-2024-07-18", table) == Price(0.15, 0.60)
    assert price_for("openai/gpt-4.1", table) == Price(2.0, 8.0)
    assert price_for("llama-3-70b", table) is None
    user = tmp_path / "prices.json"
    user.write_text(
        json.dumps(
            {"llama-3-70b": {"input": 0.5, "output": 1}, "gpt-4o": {"input": 1, "output": 2}}
        )
    )
    monkeypatch.setenv("GRADERCAL_PRICES", str(user))
    table = load_prices()
    assert price_for("llama-3-70b", table) == Price(0.5, 1.0)
    assert price_for("gpt-4o", table) == Price(1.0, 2.0)
    assert Price(2.0, 8.0).cost(1_000_000, 500_000) == pytest.approx(6.0)
    user.write_text(json.dumps({"m": {"input": "cheap"}}))
    with pytest.raises(GradercalError, match="m: expected"):
        load_prices()


def test_keys_are_redacted_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("GC_KEY", secret)
    key = resolve_api_key("GC_KEY")
    assert key.value == secret and key.source == "env"
    assert secret not in repr(key) and secret not in str(key)
    monkeypatch.delenv("GC_KEY")
    assert resolve_api_key("GC_KEY").value is None
    r = Redactor(secret, None, "short")
    assert r(f"Bearer {secret} failed") == "Bearer [REDACTED] failed"
    # a key is redacted whatever its length: a leaked short key costs more than a word
    assert r("a short word") == "a [REDACTED] word"
    assert r.deep({"a": [f"x{secret}"], secret: 1}) == {"a": ["x[REDACTED]"], "[REDACTED]": 1}
    assert public_url("https://user:pw@api.example.com:8443/v1?api-key=zz") == (
        "https://api.example.com:8443/v1"
    )


# -- artifacts ----------------------------------------------------------------------------


def _pdf(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def test_artifact_context_reads_pdfs_tables_and_text_within_the_budget() -> None:
    csv = "dose,response\n" + "".join(f"{i},{i * i}\n" for i in range(100))
    arts = [
        ArtifactInput("pdf", "Paper", "paper.pdf", "application/pdf", None, _pdf("Kd is 4.2 nM")),
        ArtifactInput("table", "Dose", "dose.csv", "text/csv", None, csv.encode()),
        ArtifactInput("sequence", "Construct", "c.fasta", None, None, b">c\nATGTAG\n"),
        ArtifactInput("image", "Gel", "gel.png", "image/png", None, b"\x89PNG..."),
        ArtifactInput("url", "Map", None, None, "https://example.org/map", None),
    ]
    text = artifact_context(arts, 1000)
    assert "### Paper (pdf)\nKd is 4.2 nM" in text
    assert "### Dose (table)\ndose,response\n0,0\n1,1" in text
    assert "19,361" in text and "20,400" not in text  # the head: 20 rows
    assert ">c\nATGTAG" in text
    assert "[image gel.png: not shown to the judge]" in text
    assert "[link, not opened: https://example.org/map]" in text
    small = artifact_context(arts[1:2], 20)
    assert len(small) <= 20 * 4 + 40 and small.endswith("[… cut to fit the token budget]")
    assert artifact_context(arts, 0) == ""
    broken = artifact_context([ArtifactInput("pdf", "Bad", "bad.pdf", None, None, b"nope")], 100)
    assert "[could not read bad.pdf:" in broken


# -- probes -------------------------------------------------------------------------------

LONG = (
    "# Findings\nThe stop codon is premature.\n\n"
    "# Next steps\nRe-sequence the junction.\n\n"
    "# Caveats\nThe read depth is low."
)


def test_probes_alter_without_changing_content() -> None:
    injected = apply_probe("injection", LONG)
    assert injected == LONG + INJECTION
    padded = apply_probe("padding", LONG, 3)
    assert padded is not None and len(padded) >= 2 * len(LONG)
    for paragraph in LONG.split("\n\n"):
        assert paragraph in padded
    reordered = apply_probe("reorder", LONG, 0)
    assert reordered is not None and reordered != LONG
    assert sorted(sections(reordered)) == sorted(sections(LONG))
    assert apply_probe("reorder", "A single sentence.") is None
    assert sections("One. Two! Three?") == ["One.", "Two!", "Three?"]
    with pytest.raises(ValueError, match="unknown probe"):
        apply_probe("shouting", LONG)


def test_wilson_interval_and_flip_stats() -> None:
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson_interval(0, 0) == (0.0, 1.0)
    s = flip_stats(
        "injection",
        [(False, True), (False, True), (True, True), (False, None), (True, False)],
        skipped=2,
    )
    assert (s.n, s.flips, s.to_met, s.to_not_met, s.failed, s.skipped) == (4, 3, 2, 1, 1, 2)
    assert s.rate == 0.75


def test_expert_reference_majority_ties_and_adjudication() -> None:
    j = pd.DataFrame(
        [
            ("r1", "c1", "ana", "human", True),
            ("r1", "c1", "ben", "human", True),
            ("r1", "c1", "zed", "human", False),
            ("r1", "c2", "ana", "human", True),
            ("r1", "c2", "ben", "human", False),  # tie: left out
            ("r2", "c1", "ana", "human", False),
            ("r2", "c1", "jj", "judge", True),  # judges do not vote
            ("r2", "c2", "ana", "human", False),
        ],
        columns=["response_id", "criterion_id", "grader", "grader_kind", "met"],
    ).astype({"met": "boolean"})
    adj = pd.DataFrame(
        [("r2", "c2", True, None, "lead", None)],
        columns=["response_id", "criterion_id", "met", "level", "adjudicator", "note"],
    )
    ref = expert_reference(j, adj).set_index(["response_id", "criterion_id"])["expert_met"]
    assert ref.to_dict() == {("r1", "c1"): True, ("r2", "c1"): False, ("r2", "c2"): True}


def test_length_bias_finds_a_judge_lenient_on_long_responses() -> None:
    rows = []
    for r in range(40):
        words = 20 * 2 ** (r % 4)  # 20, 40, 80, 160 words
        for c in range(5):
            expert = c < 2
            judge = expert or (words >= 160 and c < 4)  # lenient only on the longest
            rows.append((f"r{r}", f"c{c}", words, judge, expert))
    frame = pd.DataFrame(
        rows, columns=["response_id", "criterion_id", "words", "judge_met", "expert_met"]
    )
    out = length_bias(frame, bins=4, n_boot=200)
    assert out["n"] == 200 and out["n_responses"] == 40
    assert [b["leniency"] for b in out["bins"]] == [0.0, 0.0, 0.0, pytest.approx(0.4)]
    assert out["bins"][-1]["false_met_rate"] == pytest.approx(2 / 3)
    assert out["slope_per_doubling"] > 0.1
    lo, hi = out["slope_ci"]
    assert 0 < lo <= out["slope_per_doubling"] <= hi
    assert length_bias(frame.iloc[:0])["slope_per_doubling"] is None


# -- aggregation ------------------------------------------------------------------------------


def _outcome(met: bool | None, p: float | None = None, status: str = "ok") -> SampleOutcome:
    return SampleOutcome(
        status=status,  # type: ignore[arg-type]
        cache_key="k",
        met=met,
        p_met=p,
        explanation=f"says {met}",
        prompt_tokens=10,
        completion_tokens=2,
        attempts=1,
    )


def test_aggregate_samples_logprobs_ties_and_failures() -> None:
    client = JudgeClient(JudgeParams(model="m", samples=3))
    item = WorkItem(ref=1, task_id="t", response_id="r", criterion_id="c", response_text="x",
                    criterion_text="y")  # fmt: skip
    price = Price(1.0, 2.0)

    def agg(*outs: SampleOutcome) -> tuple[object, ...]:
        v = aggregate(item, outs, prompt=DEFAULT_PROMPT, client=client, price=price)
        return v.status, v.met, v.p_met, v.confidence, v.provenance["confidence_source"]

    assert agg(_outcome(True), _outcome(True), _outcome(False)) == (
        "ok",
        True,
        2 / 3,
        pytest.approx(2 / 3),
        "samples",
    )
    assert agg(_outcome(False), _outcome(True), _outcome(False)) == (
        "ok",
        False,
        1 / 3,
        pytest.approx(2 / 3),
        "samples",
    )
    assert agg(_outcome(True, 0.8), _outcome(True, 0.6)) == (
        "ok",
        True,
        pytest.approx(0.7),
        pytest.approx(0.7),
        "logprobs",
    )
    assert agg(_outcome(False), _outcome(True)) == ("ok", False, 0.5, 0.5, "samples")  # tie: first
    assert agg(_outcome(None, status="parse_failure"), _outcome(None, status="error")) == (
        "parse_failure",
        None,
        None,
        None,
        None,
    )
    assert agg(_outcome(None, status="error")) == ("error", None, None, None, None)
    v = aggregate(
        item,
        [_outcome(True), _outcome(None, status="parse_failure")],
        prompt=DEFAULT_PROMPT,
        client=client,
        price=price,
    )
    assert v.met is True and v.prompt_tokens == 20 and v.cost_usd == pytest.approx(28 / 1e6)
    assert v.rationale == "says True" and len(v.provenance["samples"]) == 2


def test_the_direct_path_builds_the_sdk_request_url_and_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gradercal.judge.client import _DirectTransport

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.delenv("OPENAI_PROJECT_ID", raising=False)
    t = _DirectTransport("http://127.0.0.1:8000/v1/", "sk-abc", {"X-Extra": "1"}, 5.0, 4)
    assert t.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert t.headers["Authorization"] == "Bearer sk-abc"
    assert t.headers["OpenAI-Organization"] == "org-123" and "OpenAI-Project" not in t.headers
    assert t.headers["X-Extra"] == "1"
    azure = _DirectTransport("https://r.openai.azure.com/openai/v1?api-version=preview",
                             None, None, 5.0, 4)  # fmt: skip
    assert azure.url == "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview"
    assert azure.headers["Authorization"] == "Bearer no-key"  # local servers ignore it
    assert _DirectTransport(None, None, None, 5.0, 4).url == (
        "https://api.openai.com/v1/chat/completions"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-host/v1")
    assert _DirectTransport(None, None, None, 5.0, 4).url == "http://env-host/v1/chat/completions"


def test_the_confidence_is_read_from_the_final_answer_not_the_reasoning() -> None:
    from gradercal.judge.parse import answer_offset, tokens_from
    from gradercal.prompt_package.kernel import read_reply

    reply = '<think>draft {"criteria_met": false}</think>{"criteria_met": true}'
    pieces = ["<think>draft {", '"criteria_met": ', "false", "}</think>", "{", '"criteria_met": ']
    pieces += ["true", "}"]
    assert "".join(pieces) == reply
    logprobs = [
        {"token": t, "logprob": math.log(0.8) if t in ("true", "false") else 0.0,
         "top_logprobs": [{"token": "true" if t == "false" else "false",
                           "logprob": math.log(0.2)}] if t in ("true", "false") else []}
        for t in pieces
    ]  # fmt: skip
    met, p_met, _why = read_reply(reply, logprobs)
    assert met is True and p_met == pytest.approx(0.8)  # not 0.2, the draft's
    tokens = [TokenLogprob(t, 0.0) for t in pieces]
    assert answer_offset(reply) == reply.index("</think>") + len("</think>")
    assert tokens_from(tokens, answer_offset(reply))[0].token == "{"
    assert list(tokens_from(tokens, 0)) == tokens
