"""Running a reply's commands against a variables envelope (DIGEST P-3, U-1, U-3, U-6).

Commands run one by one on a private copy of the envelope. A command refused for an ordinary
reason (a missing path: ``MVU_PATH_MISSING``; the native schema or a value that does not fit:
``MVU_SCHEMA``; ``move`` without a declaration: ``MVU_UNSUPPORTED``) becomes an entry of ``update_diagnostics`` and
the run continues, as in MagVarUpdate, where such errors are logged and skipped. Anything else
(limits, an unsafe path or value, a malformed envelope) raises :class:`MvuError` and nothing is
applied. The semantics of each command are MagVarUpdate's as observed by running it (the
docs/compatibility.md); the executors live in :mod:`mvu_store.lang.executors`. Under a
card's interpreter-v2 declaration they are the ``mvu_zod`` helper's (:mod:`mvu_store.lang.declared`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, find_unsafe_key, json_pointer, measure_state, normalize
from mvu_store.lang.command_outcomes import merged_outcomes, refused_outcome, run_outcome, update_diagnostics
from mvu_store.lang.commands import Command, scan_commands
from mvu_store.lang.creation import CandidateValidator, validated
from mvu_store.lang.declared import Parse, execute_declared
from mvu_store.lang.executors import EXECUTORS, Run
from mvu_store.lang.jsvalues import same
from mvu_store.lang.meta import reconcile
from mvu_store.lang.outcomes import EMPTY_NOTES, NO_OP, STRIPPED, CommandOutcome, ReplyNotes
from mvu_store.lang.paths import lookup, parse_pointer

# Refusals that MagVarUpdate logs and skips; every other MvuError aborts the whole update.
DIAGNOSTIC_CODES = frozenset({Code.PATH_MISSING.value, Code.SCHEMA.value, Code.UNSUPPORTED.value})


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """The new envelope, the per-command diagnostics and whether ``stat_data`` changed."""

    variables: dict[str, Any]
    diagnostics: tuple[dict[str, Any], ...]
    changed: bool
    encoded: bytes
    """The canonical JSON of ``variables`` (UTF-8), as the state budget check measured it: a
    store can keep these bytes instead of encoding the state a second time."""
    outcomes: tuple[CommandOutcome, ...] = ()
    """Every command of the reply and what became of it (applied, refused, ignored), in text
    order; the reading's near-misses are in ``notes``."""
    notes: ReplyNotes = EMPTY_NOTES


def private_envelope(variables: JsonValue) -> dict[str, Any]:
    """A normalised private copy of an envelope with an object ``stat_data`` (else ``MVU_JSON``)."""
    if not isinstance(variables, dict):
        raise MvuError(Code.JSON, "variables must be an object")
    normalized, _, _ = normalize(variables)
    envelope: dict[str, Any] = normalized
    stat_data = envelope.setdefault("stat_data", {})
    if not isinstance(stat_data, dict):
        raise MvuError(Code.JSON, "stat_data must be an object")
    unsafe = find_unsafe_key(stat_data)
    if unsafe is not None:
        raise MvuError(Code.PATH, "stat_data carries a prototype key", path=json_pointer(unsafe))
    return envelope


ZOD_PLACEHOLDER = "没有用别管这个"
"""What newer MagVarUpdate stores as ``schema`` while a card's Zod schema governs; it keeps it as is."""


def native_schema(envelope: dict[str, Any]) -> dict[str, Any] | None:
    """The stored ``$meta`` schema, or None (U-8): MagVarUpdate ignores a ``schema`` that is not an object
    (newer versions store a placeholder string under a Zod schema), so it refuses nothing here."""
    schema = envelope.get("schema")
    return schema if isinstance(schema, dict) else None


def _interpreter_version(envelope: dict[str, Any]) -> int:
    descriptor = envelope.get("mvu_schema")
    version = descriptor.get("interpreterVersion") if isinstance(descriptor, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


StateCheck = Callable[[JsonValue], JsonValue]
"""Validates a whole candidate ``stat_data`` after a command and returns it, possibly
transformed (a card's declared schema); raises :class:`MvuError` to refuse it.

The state passed to ``check`` is never mutated afterwards, nor is the one it returns: commands
build each new state by copying only the containers on the changed path and share the rest
(so a check may remember values by identity, as the schema's memo does). ``check`` must not
mutate its argument either."""


def declared_parse(check: StateCheck | None, validator: CandidateValidator | None) -> Parse:
    """How a declared (interpreter v2) state parses a candidate: ``check``, else ``validator``,
    else nothing refuses it (the language alone, without a schema interpreter)."""
    if check is not None:
        return check
    if validator is None:
        return lambda candidate: candidate

    def parse(candidate: JsonValue) -> JsonValue:
        accepted = validated(validator, candidate)
        if accepted is None:
            raise MvuError(Code.SCHEMA, "the schema refuses the result")
        return accepted

    return parse


def _settle(changes: list[dict[str, Any]], stat_data: JsonValue) -> None:
    """Give set/add records the value the checked state ended with (a clamp, a transform)."""
    for change in changes:
        if change["op"] in ("set", "add") and "value" in change and change["path"]:
            found, final = lookup(stat_data, parse_pointer(change["path"]))
            if found:
                change["value"] = final


def _diagnostic(command: Command, index: int, error: MvuError) -> dict[str, Any]:
    diagnostic = {"command": command.full_match, "index": index, "code": error.code, "message": error.message}
    if command.patch_index is not None:
        diagnostic["patchIndex"] = command.patch_index  # the operation's place in its block
    return diagnostic


def _real_changes(changes: list[dict[str, Any]], stat_data: JsonValue, checked: bool, settled: bool) -> str | None:
    """Drop from ``changes`` (one command's) those that changed nothing; why none is left, if so.

    A set or add whose value was already there is a no-op; one whose path the checked state no
    longer has was stripped by the card's declaration (a key its ``z.object`` root drops). Without
    a check (``checked`` false) nothing strips: the executors' writes stand as recorded. The
    declared executors (``settled``) read each set's and add's value back from the checked state
    and record none when the path is gone, so their records need no second lookup."""
    reason = None
    kept = 0
    for change in changes:
        op = change["op"]
        if op in ("set", "add") and change["path"] and "value" in change:
            if checked and not settled and not lookup(stat_data, parse_pointer(change["path"]))[0]:
                reason = STRIPPED
                continue
            if "previous" in change and same(change["previous"], change["value"]):
                reason = reason or NO_OP
                continue
        elif op in ("set", "add") and change["path"] and "previous" not in change:
            reason = STRIPPED  # a declared set recorded without the value it ended with: none is left
            continue
        elif checked and op == "insert" and "key" in change and _key_gone(stat_data, change["path"], change["key"]):
            reason = STRIPPED
            continue
        changes[kept] = change
        kept += 1
    del changes[kept:]
    return None if kept else reason


def _key_gone(stat_data: JsonValue, container: str, key: JsonValue) -> bool:
    """An insert's key that the object it was written to no longer has (the declaration dropped it)."""
    found, value = lookup(stat_data, parse_pointer(container))
    return found and isinstance(value, dict) and isinstance(key, str) and key not in value


def execute_commands(
    envelope: dict[str, Any],
    commands: list[Command],
    validator: CandidateValidator | None,
    check: StateCheck | None = None,
    outcomes: list[CommandOutcome] | None = None,
) -> tuple[Run, list[dict[str, Any]]]:
    """Run ``commands`` on a private envelope: the run (its ``stat_data`` and changes) and the
    diagnostics of the commands refused. The envelope is not finished (no schema reconciled, no
    budget measured): :func:`run_commands` does that; a check that only compares the resulting
    ``stat_data`` (an imported chat's recorded transitions) needs no more. ``outcomes``, when
    given, receives each command's outcome."""
    run = Run(envelope["stat_data"], native_schema(envelope))
    # With a declaration (mvu_schema) the declaration decides, as in the original: the native
    # $meta schema is neither checked nor re-derived (its root flags, strictSet..., still apply).
    if isinstance(envelope.get("mvu_schema"), dict):
        run.schema, run.declared = None, True
    # Interpreter v2 runs the commands as the card's helper does (declared.py); v1 stays v1 (S-1).
    parse = declared_parse(check, validator) if run.declared and _interpreter_version(envelope) == 2 else None
    diagnostics: list[dict[str, Any]] = []
    for index, command in enumerate(commands):
        # A refused command leaves no trace: the previous state is kept by reference (executors
        # never mutate a state, they build the next one), and restored if the check refuses.
        saved = run.stat_data, run.schema, len(run.changes)
        try:
            if parse is not None:
                execute_declared(run, command, parse)
            else:
                EXECUTORS[command.type](run, command)
                if check is not None:
                    run.stat_data = check(run.stat_data)
                    _settle(run.changes[saved[2] :], run.stat_data)
        except MvuError as error:
            if error.code not in DIAGNOSTIC_CODES:
                raise
            run.stat_data, run.schema = saved[0], saved[1]
            del run.changes[saved[2] :]
            diagnostics.append(_diagnostic(command, index, error))
            if outcomes is not None:
                outcomes.append(refused_outcome(command, index, error))
            continue
        mine = run.changes[saved[2] :]
        ignored = _real_changes(mine, run.stat_data, parse is not None or check is not None, parse is not None)
        run.changes[saved[2] :] = mine
        if outcomes is not None:
            outcomes.append(run_outcome(command, index, mine, ignored))
    return run, diagnostics


def run_commands(
    envelope: dict[str, Any],
    commands: list[Command],
    validator: CandidateValidator | None,
    check: StateCheck | None = None,
    notes: ReplyNotes = EMPTY_NOTES,
) -> UpdateResult:
    """Apply ``commands`` to a private envelope (see :func:`apply_update`); ``notes`` is what
    reading the reply noted (:func:`~mvu_store.lang.commands.scan_commands`)."""
    before = envelope["stat_data"]  # states are persistent: nothing mutates it
    outcomes: list[CommandOutcome] = []
    run, diagnostics = execute_commands(envelope, commands, validator, check, outcomes)
    declared = run.declared
    changed = not same(before, run.stat_data)
    envelope["stat_data"] = run.stat_data
    if not declared and changed and envelope.get("schema") != ZOD_PLACEHOLDER:
        # MagVarUpdate regenerates the schema after a change, except over its placeholder.
        envelope["schema"] = reconcile(run.stat_data, run.schema)
    elif not declared and run.schema is not None:
        envelope["schema"] = run.schema
    # Shared, not copied: measure_state below returns a fresh copy of the whole envelope.
    envelope["display_data"] = run.stat_data
    envelope["delta_data"] = {"changes": run.changes}
    every = merged_outcomes(outcomes, notes)
    envelope["update_diagnostics"] = update_diagnostics(every, notes)
    checked, encoded, _ = measure_state(envelope)
    return UpdateResult(checked, tuple(diagnostics), changed, encoded, every, notes)


def apply_update(
    variables: JsonValue,
    text: str,
    *,
    validator: CandidateValidator | None = None,
    check: StateCheck | None = None,
) -> UpdateResult:
    """Run every command of the reply ``text`` on a private copy of ``variables``.

    ``check`` runs after each command on the whole ``stat_data`` (the card's declared schema, as
    the original applies it after every command): a refusal with a diagnostic code
    (``MVU_SCHEMA``) undoes that command only and becomes its diagnostic; a value it returns
    replaces ``stat_data`` (a transform; under interpreter v2 it is merged at the top level, see
    :mod:`mvu_store.lang.declared`). ``validator`` stands in for ``check`` under interpreter v2
    when no ``check`` is given.
    The input is never mutated. Raises :class:`MvuError` (``MVU_LIMIT``, ``MVU_PATH``,
    ``MVU_JSON`` ...) when the update as a whole is refused; ordinary per-command refusals are
    in ``diagnostics``.
    """
    scanned = scan_commands(text)
    return run_commands(private_envelope(variables), list(scanned.commands), validator, check, scanned.notes)
