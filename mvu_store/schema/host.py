"""The Tavern Helper host API a card script calls beside its schema, inert in the store.

A card's variable-structure script is a bundle: next to ``registerMvuSchema(Schema)`` it wraps
its entry in ``errorCatched(fn)()``, names the ``Vue`` global its bundler kept external, shows
``toastr`` notices, listens to chat events (``eventOn``) and edits the chat's variables
(``updateVariablesWith``). None of that changes the schema, and the store has no chat page to
act on, so these calls do nothing here: they let the declaration load as it does in the host.
The host's data (``getVariables``, ``Mvu``) stays undefined: a schema must not depend on it.
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.values import UNDEFINED, Budget, Builtin, JsCallable, Namespace, arg, fail
from mvu_store.schema.promises import JsPromise

_NOTHING = Builtin("host call", lambda budget, args: UNDEFINED)
_LISTENER = Namespace("EventOnReturn", {"stop": _NOTHING})  # what eventOn returns: its stop()


def _error_catched(budget: Budget, args: list[Any]) -> Builtin:
    """``errorCatched(fn)``: the host shows fn's errors as a notice and rethrows them, so here
    it is fn itself (the error still reaches the caller)."""
    fn = arg(args, 0)
    if not isinstance(fn, JsCallable):
        raise fail("errorCatched expects a function")
    return Builtin("errorCatched", fn.call)


def _on(budget: Budget, args: list[Any]) -> Namespace:
    return _LISTENER


HOST_GLOBALS: dict[str, Any] = {
    "errorCatched": Builtin("errorCatched", _error_catched),
    # Globals a bundle names but a schema never reads: member reads of them are refused.
    "Vue": Namespace("Vue", {}),
    "Pinia": Namespace("Pinia", {}),
    "toastr": Namespace("toastr", {name: _NOTHING for name in ("success", "info", "warning", "error", "clear")}),
    **{name: Builtin(name, _on) for name in ("eventOn", "eventOnce", "eventMakeFirst", "eventMakeLast")},
    **{name: _NOTHING for name in ("eventEmit", "eventRemoveListener", "eventClearEvent", "updateVariablesWith",
                                   "insertOrAssignVariables", "insertVariables", "replaceVariables",
                                   "deleteVariable")},
    # The MVU runtime the script waits for is never loaded here: the wait is already over.
    "waitGlobalInitialized": Builtin("waitGlobalInitialized", lambda budget, args: JsPromise(True)),
}
