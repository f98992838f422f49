"""A responsive loopback judge for ``gradercal judge align`` (known truth over HTTP).

:class:`AlignJudgeServer` is :class:`~tests.support.judge_server.JudgeServer` with its own
reply rule:

* **Verdicts** follow an answer book (``(response text, criterion text) → met``, e.g. the
  experts' consensus), except on criteria with negative points, where the judge is
  *confused* and answers the opposite — unless its prompt addresses that confusion: the
  ``<guidance>`` block of the request mentions "negative points", or an earlier (few-shot)
  user message of the request shows a negative-point criterion. With ``null`` the judge
  ignores its prompt (always confused).
* **Optimizer requests** (the system message of
  :data:`gradercal.judge.align.OPTIMIZER_PROMPT`) are answered with prose around
  ``{"guidance": [...], "general": "..."}``: guidance for every negative-point criterion of
  the evidence, and the general note about negative points only when the evidence holds
  one. So only evidence from the development set can produce the improvement.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tests.support.judge_server import JudgeServer, ServerConfig, message_text, split_prompt

OPTIMIZER_MARK = "You improve the instructions of an LLM judge"
_POINTS = re.compile(r'<criterion points="([+-]?\d+)">')
_EVIDENCE = re.compile(r"^## criterion (\S+) \(points ([+-]\d+)\): (.*)$", re.MULTILINE)
_GUIDANCE = re.compile(r"<guidance>(.*?)</guidance>", re.DOTALL)


class AlignJudgeServer(JudgeServer):
    """The responsive (or, with ``null``, prompt-ignoring) judge; see the module docstring."""

    def __init__(
        self,
        answers: dict[tuple[str, str], bool],
        *,
        null: bool = False,
        config: ServerConfig | None = None,
    ) -> None:
        super().__init__(config or ServerConfig())
        self.answers = answers
        self.null = null
        self.optimizer_calls = 0
        self.optimizer_prompts: list[str] = []  # the user message of every optimizer call
        self.optimizer_limits: list[int | None] = []  # their completion limits
        self.image_requests = 0  # verdict requests carrying image parts

    async def _reply(
        self, body: dict[str, Any], auth: str
    ) -> tuple[int, dict[str, str], bytes, str]:
        msgs = body["messages"]
        system = next((message_text(m["content"]) for m in msgs if m["role"] == "system"), "")
        user_msgs = [message_text(m["content"]) for m in msgs if m["role"] == "user"]
        user = user_msgs[-1] if user_msgs else ""
        if OPTIMIZER_MARK in system:
            self.optimizer_calls += 1
            self.optimizer_prompts.append(user)
            self.optimizer_limits.append(body.get("max_tokens", body.get("max_completion_tokens")))
            content = "Here is my proposal.\n" + json.dumps(_guidance(user)) + "\nDone."
        else:
            self.image_requests += any(
                isinstance(m["content"], list)
                and any(p.get("type") == "image_url" for p in m["content"])
                for m in msgs
            )
            response, criterion = split_prompt(user)
            m = _POINTS.search(user)
            points = int(m.group(1)) if m else 0
            truth = self.answers.get((response, criterion), False)
            confused = points < 0 and not (not self.null and _addressed(user, user_msgs[:-1]))
            met = (not truth) if confused else truth
            content = json.dumps({"explanation": "simulated", "criteria_met": met})
        chars = sum(len(message_text(m["content"])) for m in msgs)
        reply = {
            "id": "chatcmpl-align",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content},
                 "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": math.ceil(chars / 4),
                "completion_tokens": math.ceil(len(content) / 4),
                "total_tokens": math.ceil(chars / 4) + math.ceil(len(content) / 4),
            },
        }  # fmt: skip
        return 200, {}, json.dumps(reply).encode(), "ok"


def _addressed(user: str, earlier: list[str]) -> bool:
    g = _GUIDANCE.search(user)
    if g and "negative points" in g.group(1).lower():
        return True
    return any(_POINTS.search(u) and int(_POINTS.search(u).group(1)) < 0 for u in earlier)  # type: ignore[union-attr]


def _guidance(user: str) -> dict[str, Any]:
    found = _EVIDENCE.findall(user)
    negative = [(key, text) for key, pts, text in found if int(pts) < 0]
    return {
        "guidance": [
            {"criterion": key, "text": "This criterion has negative points: answer whether "
             "the response does the undesirable thing it describes."}
            for key, _ in negative
        ],
        "general": (
            "Criteria with negative points describe undesirable behaviour: answer true only "
            "when the response does it."
            if negative
            else ""
        ),
    }  # fmt: skip
