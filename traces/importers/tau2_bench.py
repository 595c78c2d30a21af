"""tau2-bench ``Results`` files: one JSON object ``{timestamp, info, tasks[], simulations[]}``.

Each simulation is one trace (chat messages with tool calls; ``reward_info.reward`` gives the
outcome). Simulations are streamed one at a time; tasks come first in the file and are few,
so a task id -> description map is kept to fill ``TraceRecord.task``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._chat import chat_steps
from ._json import first_char, has_key, iter_paths
from ._util import Ctx, as_int, compact, outcome_from_reward, text_of
from .records import TraceRecord

FORMAT = "tau2_bench"
LABEL = "tau2-bench results (tasks + simulations)"


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    if has_key(head, "simulations") and has_key(head, "tasks"):
        return True
    return has_key(head, "user_info", "agent_info") and (
        has_key(head, "tasks") or has_key(head, "environment_info")
    )


def task_text(task: dict) -> str:
    """Best human-readable statement of a tau2 task (descriptions are often all-null)."""
    desc = task.get("description")
    if isinstance(desc, dict):
        for key in ("purpose", "notes"):
            if isinstance(desc.get(key), str) and desc[key].strip():
                return desc[key]
    elif isinstance(desc, str) and desc.strip():
        return desc
    scenario = task.get("user_scenario")
    instr = scenario.get("instructions") if isinstance(scenario, dict) else None
    if isinstance(instr, dict):
        parts = [instr.get(k) for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions")]
        return "\n".join(p for p in parts if isinstance(p, str) and p.strip() and p.strip() != ".")
    if isinstance(instr, str):
        return instr
    return text_of(task.get("ticket")) if task.get("ticket") else ""


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    tasks: dict[str, str] = {}
    info: dict = {}
    model = ""
    domain = ""
    for path, n, value in iter_paths(stream, filename, ("info", "tasks.item", "simulations.item")):
        if path == "info":
            info = value if isinstance(value, dict) else {}
            agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
            model = agent.get("llm") if isinstance(agent.get("llm"), str) else ""
            env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
            domain = env.get("domain_name") if isinstance(env.get("domain_name"), str) else ""
        elif path == "tasks.item":
            task = Ctx(filename, record=n).obj(value, f"tasks[{n - 1}]")
            tasks[str(task.get("id"))] = task_text(task)
        else:
            yield _simulation(value, Ctx(filename, record=n), n, tasks, model, domain, info)


def _simulation(obj: Any, ctx: Ctx, n: int, tasks: dict, model: str, domain: str, info: dict) -> TraceRecord:
    s = ctx.obj(obj, f"simulations[{n - 1}]")
    path = f"simulations[{n - 1}]"
    task_id = ctx.get(s, "task_id", (str, int), f"{path}.task_id", required=True)
    messages = ctx.get(s, "messages", list, f"{path}.messages", required=True)
    steps = chat_steps(messages, ctx, f"{path}.messages")
    reward_info = ctx.get(s, "reward_info", dict, f"{path}.reward_info") or {}
    outcome, score = outcome_from_reward(reward_info.get("reward"))
    trial = as_int(s.get("trial"))
    user = info.get("user_info") if isinstance(info.get("user_info"), dict) else {}
    meta = compact(
        {
            "simulation_id": s.get("id"),
            "task_id": task_id,
            "trial": trial,
            "domain": domain,
            "termination_reason": s.get("termination_reason"),
            "duration": s.get("duration"),
            "agent_cost": s.get("agent_cost"),
            "user_cost": s.get("user_cost"),
            "user_llm": user.get("llm"),
            "reward_info": reward_info,
        }
    )
    return TraceRecord(
        external_id=f"{task_id}-{trial if trial is not None else 0}",
        steps=steps,
        task=tasks.get(str(task_id), ""),
        system="tau2-bench",
        model=model,
        benchmark=f"tau2-bench/{domain}" if domain else "tau2-bench",
        outcome=outcome,
        score=score,
        metadata=meta,
        raw=s,
        record_no=n,
    )
