"""``validate_config``: the assembly configuration of an ``mvu-state`` source (DIGEST A-3).

Only the chains the store and retrieve sides implement are accepted, in their order: a strategy
is a list of operation names or of ``{operation}`` objects, and anything else (another event,
another order, extra parameters) is ``MVU_CONFIG``.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError

CHAINS: dict[str, tuple[str, ...]] = {
    "assistant_message_committed": ("parse_mvu_update", "validate_update", "apply_update"),
    "before_model_request": ("read_content", "render_state_and_update_instructions", "provide_to_model"),
}
# card_variable_update is a source execution fact, not a manager's store trigger.
_EVENTS = {"store": ("assistant_message_committed",), "retrieve": ("before_model_request",)}


def validate_config(config: Any) -> bool:
    if not isinstance(config, dict) or config.get("type") != "mvu-state":
        raise MvuError(Code.CONFIG, "the configuration's type must be 'mvu-state'")
    for side, events in _EVENTS.items():
        trigger = config.get(side)
        if trigger is None:
            continue
        if not isinstance(trigger, dict) or trigger.get("on") not in events:
            raise MvuError(Code.CONFIG, f"unsupported {side} event", side=side)
        unknown = sorted(set(trigger) - {"on", "strategy"})
        if unknown:
            raise MvuError(Code.CONFIG, f"unsupported {side} parameters: {', '.join(map(str, unknown))}", side=side)
        validate_strategy(trigger["on"], trigger.get("strategy"))
    return True


def validate_strategy(on: str, strategy: Any) -> None:
    """A strategy must name exactly the supported chain of ``on``, in order, without parameters."""
    if strategy is None:
        return
    names = []
    for step in strategy if isinstance(strategy, list) else [strategy]:
        if isinstance(step, str):
            names.append(step)
        elif isinstance(step, dict) and set(step) == {"operation"} and isinstance(step["operation"], str):
            names.append(step["operation"])
        else:
            raise MvuError(Code.CONFIG, "unsupported strategy parameters")
    if tuple(names) != CHAINS.get(on):
        raise MvuError(Code.CONFIG, "MVU requires the ordered parse/validate/apply or read/render/provide chain",
                       on=on)
