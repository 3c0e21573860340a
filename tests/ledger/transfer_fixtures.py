"""Builds original storage directories the way the JavaScript implementation wrote them.

Shapes follow docs/json-ledger.md: templates, instances with reply / failed / manual /
card versions, checkpoints, management operations, fork children with inherited history and
seeds, copies, discovery selections, facts and a legacy ``mvu-state.json``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

# Odd but valid whitespace: the import must keep these bytes exactly, not re-serialise them.
LEGACY_TEXT = (
    '{ "version" :1 ,\r\n\t"resources": {\n  "mvu:shared-old" : {"revision": 3, "currentKey": null,'
    ' "versions": [], "managementMode": "native",\n   "definition": {"id": "mvu:shared-old", "sessionIds": ["*"],'
    ' "initial": {"stat_data": {"hp": 7.50}}}}}   }\n\n'
)


def sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def envelope(stat: dict[str, Any]) -> dict[str, Any]:
    """A variables envelope with a native schema derived from ``stat``."""
    return {
        "stat_data": stat,
        "schema": {
            "type": "object",
            "extensible": False,
            "recursiveExtensible": False,
            "properties": {key: {"type": type(value).__name__} for key, value in stat.items()},
            "required": sorted(stat),
        },
        "initialized_lorebooks": {"world": []},
        "display_data": copy.deepcopy(stat),
        "delta_data": {},
        "mvu_schema": {"mvuSchema": 1, "interpreterVersion": 2, "source": "yaml"},
    }


class Instance:
    """One resource record, grown commit by commit as the original did."""

    def __init__(self, owner: LedgerBuilder, resource_id: str, session_id: str, definition: dict[str, Any]) -> None:
        self.owner = owner
        self.id = resource_id
        self.session_id = session_id
        self.record: dict[str, Any] = {
            "revision": 0, "currentKey": None, "versions": [], "checkpoints": [], "managementMode": "native",
            "definition": definition,
        }
        self.seq = 0
        self.last_source: dict[str, Any] | None = None

    @property
    def variables(self) -> dict[str, Any]:
        key = self.record["currentKey"]
        if key is None:
            return copy.deepcopy(self.record["definition"]["initial"])
        return copy.deepcopy(next(v for v in self.record["versions"] if v["key"] == key)["variables"])

    def _commit(self, version: dict[str, Any]) -> str:
        self.record["versions"].append(version)
        self.record["revision"] = version["revision"]
        self.record["currentKey"] = version["key"]
        return str(version["key"])

    def _reply_source(self, turn: int) -> dict[str, Any]:
        self.seq += 2
        return {"sessionId": self.session_id, "sessionFormatVersion": 1, "sessionCreatedAt": 1_700_000_000_000,
                "eventType": "assistant/message", "messageId": f"m-{self.seq}", "messageSeq": self.seq, "turn": turn,
                "step": None, "endSeq": self.seq + 1}

    def reply(self, turn: int, **stat: Any) -> str:
        source = self._reply_source(turn)
        self.last_source = source
        variables = self.variables
        variables["stat_data"].update(stat)
        variables["delta_data"] = {"changed": sorted(stat)}
        revision = self.record["revision"]
        return self._commit({
            "key": sha(source), "source": source, "fingerprint": sha(f"reply {self.seq}"), "variables": variables,
            "parentKey": self.record["currentKey"], "sourceRevision": revision, "revision": revision + 1,
            "configRevision": 0,
        })

    def failed(self, turn: int, error: str = "MVU_PARSE") -> str:
        """A poison receipt: the record's revision moves by one, ``currentKey`` does not."""
        source = self._reply_source(turn)
        revision = self.record["revision"] + 1
        self.record["versions"].append({
            "key": sha(source), "source": source, "fingerprint": sha(f"bad reply {self.seq}"),
            "revision": revision, "variables": self.variables, "error": error,
        })
        self.record["revision"] = revision
        return str(sha(source))

    def manual(self, operation_id: str, **stat: Any) -> str:
        variables = self.variables
        variables["stat_data"].update(stat)
        revision = self.record["revision"]
        base = self.last_source or {"sessionId": self.session_id, "messageId": f"manual:{operation_id}",
                                    "messageSeq": self.seq}
        scope = {"sessionId": self.session_id}
        return self._commit({
            "key": sha({"id": self.id, "operationId": operation_id}),
            "source": {**base, "manual": True, "card": False}, "variables": variables, "action": {"turn": 2},
            "operationId": operation_id,
            "fingerprint": sha({"content": stat, "scope": scope, "expectedRevision": revision}),
            "parentKey": self.record["currentKey"], "sourceFingerprint": sha("manual source"),
            "revision": revision + 1,
            "result": {"id": self.id, "type": "mvu-state", "content": variables["stat_data"],
                       "revision": revision + 1, "scope": scope, "authority": "local"},
        })

    def card(self, operation_id: str, *, opening: bool = False, **stat: Any) -> str:
        variables = self.variables
        variables["stat_data"].update(stat)
        revision = self.record["revision"]
        base = ({"sessionId": self.session_id, "playthroughId": "p-1", "characterId": "alice",
                 "sessionFormatVersion": 1, "initial": True} if opening else dict(self.last_source or {}))
        scope = {"sessionId": self.session_id}
        return self._commit({
            "key": sha({"id": self.id, "operationId": operation_id}),
            "source": {**base, "manual": True, "card": True}, "variables": variables, "action": {},
            "operationId": operation_id, "fingerprint": sha({"content": stat, "expectedRevision": revision}),
            "parentKey": self.record["currentKey"], "revision": revision + 1, "configRevision": None,
            "result": {"version": 1, "scope": scope, "revision": revision + 1, "currentRevision": revision + 1,
                       "status": "available", "variables": variables, "resourceId": self.id},
        })

    def checkpoint(self, turn: int) -> None:
        self.record["checkpoints"].append({
            "sessionId": self.session_id, "turn": turn, "seq": self.seq, "revision": self.record["revision"],
            "versionKey": self.record["currentKey"], "variables": self.variables,
        })

    def manage(self, operation_id: str, mode: str) -> None:
        self.record["revision"] += 1
        self.record["managementMode"] = mode
        self.record.setdefault("managementOperations", []).append({
            "id": operation_id, "fingerprint": sha({"mode": mode}),
            "result": {"id": self.id, "managementMode": mode, "revision": self.record["revision"]},
        })

    def fork(self, child_session: str, ticket: str) -> Instance:
        """A fork child: the parent's history copied as inherited versions, and its seed."""
        definition = copy.deepcopy(self.record["definition"])
        identity = {"sessionId": child_session, "createdAt": 1_700_000_100_000}
        definition["instance"] = identity
        child_id = "mvu:instance-" + sha([definition["templateId"], identity])[:48]
        definition["id"] = child_id
        definition.pop("activationSeqs", None)
        child = self.owner.add(Instance(self.owner, child_id, child_session, definition))
        for version in self.record["versions"]:
            if "error" in version:
                continue
            source = {**version["source"], "sessionId": child_session, "inherited": True, "manual": False,
                      "card": False}
            inherited_from = {"versionKey": version["key"], "revision": version["revision"],
                              "sessionId": self.session_id}
            child.record["versions"].append({
                "key": sha([source, inherited_from]), "variables": version["variables"], "revision": 0,
                "fingerprint": version.get("fingerprint"), "source": source, "inheritedFrom": inherited_from,
            })
        child.record["currentKey"] = child.record["versions"][-1]["key"] if child.record["versions"] else None
        child.record["checkpoints"] = [
            {**point, "sessionId": child_session, "revision": 0, "versionKey": None,
             "inheritedFrom": {"id": self.id, "revision": point["revision"], "versionKey": point["versionKey"]}}
            for point in self.record["checkpoints"]
        ]
        source = {"id": self.id, "identity": {"sessionId": self.session_id, "createdAt": 1_700_000_000_000},
                  "versionKey": self.record["currentKey"], "revision": self.record["revision"],
                  "contentHash": sha(self.variables), "atEventId": f"e-{self.seq}"}
        child.record["seed"] = {"kind": "fork", "ticket": ticket, "anchorKey": self.record["currentKey"],
                                "source": source}
        self.owner.seeds[ticket] = {
            "ticket": ticket, "kind": "fork", "sourceSessionId": self.session_id,
            "sourceIdentity": source["identity"], "atEventId": source["atEventId"], "prefixEndEventId": "e-1",
            "targetSessionId": child_session,
            "items": [{"templateId": definition["templateId"], "managementMode": "native", "variables": self.variables,
                       "history": copy.deepcopy(self.record["versions"]),
                       "checkpoints": copy.deepcopy(self.record["checkpoints"]),
                       "prefixVersionKey": self.record["currentKey"], "source": source}],
            "installed": True, "targetIdentity": identity,
        }
        return child


class LedgerBuilder:
    """A whole storage directory: ``mvu-instances.json``, ``mvu-facts.json``, ``mvu-state.json``."""

    def __init__(self) -> None:
        self.templates: dict[str, Any] = {}
        self.instances: list[Instance] = []
        self.seeds: dict[str, Any] = {}
        self.selections: dict[str, str | None] = {}
        self.facts: list[dict[str, Any]] = []
        self.legacy: str | None = None

    def add(self, instance: Instance) -> Instance:
        self.instances.append(instance)
        return instance

    def template(self, character: str, **stat: Any) -> str:
        template_id = "mvu:character-" + hashlib.sha256(character.encode()).hexdigest()[:32]
        self.templates[template_id] = {
            "id": template_id, "name": character.title(), "characterId": character, "sessionIds": ["*"],
            "initial": envelope(stat), "managementMode": "native", "discovered": True,
            "instructions": "Keep the numbers honest.", "activationSeqs": {"s-old": 4},
        }
        return template_id

    def instance(self, template_id: str, session_id: str) -> Instance:
        identity = {"sessionId": session_id, "createdAt": 1_700_000_000_000}
        resource_id = "mvu:instance-" + sha([template_id, identity])[:48]
        definition = {**copy.deepcopy(self.templates[template_id]), "id": resource_id, "templateId": template_id,
                      "instance": identity, "sessionIds": [session_id], "activationSeqs": {session_id: 3}}
        return self.add(Instance(self, resource_id, session_id, definition))

    def fact(self, **fields: Any) -> None:
        self.facts.append({"phase": "commit", "recordedAt": 1_700_000_000_000 + len(self.facts), **fields})

    def instances_document(self) -> dict[str, Any]:
        return {"version": 1, "resources": {i.id: i.record for i in self.instances}, "templates": self.templates,
                "seeds": self.seeds, "discoverySelections": self.selections}

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "mvu-instances.json").write_text(json.dumps(self.instances_document(), indent=2))
        if self.facts:
            (directory / "mvu-facts.json").write_text(json.dumps({"version": 1, "records": self.facts}))
        if self.legacy is not None:
            (directory / "mvu-state.json").write_bytes(self.legacy.encode())
        return directory


def realistic() -> LedgerBuilder:
    """Every record shape at least once, consistent as the original would have left it."""
    build = LedgerBuilder()
    alice = build.template("alice", hp=10, mood="calm", inventory=["rope"])
    bob = build.template("bob", gold=3)
    play = build.instance(alice, "s-1")
    play.card("op-open", opening=True, hp=10)
    play.checkpoint(1)
    play.reply(1, hp=9)
    play.failed(2)
    play.checkpoint(2)
    play.reply(2, mood="tense", hp=8.5)
    play.manual("op-manual-1", hp=12)
    play.card("op-card-1", mood="brave")
    play.manage("op-manage-1", "managed")
    play.reply(3, inventory=["rope", "lamp"])
    child = play.fork("s-2", "11111111-2222-4333-8444-555555555555")
    child.reply(4, hp=1)
    child.record["futureField"] = {"kept": [1, 2.5, None, True]}
    untouched = build.instance(bob, "s-3")
    untouched.record["checkpoints"] = []
    untouched.record["recoveryError"] = {"sessionId": "s-3", "code": "MVU_READ_FAILED"}
    copied = build.instance(bob, "s-4")
    copied.reply(1, gold=4)
    copied.record["copiedFrom"] = {"id": untouched.id, "revision": 0}
    build.selections.update({"s-1": alice, "s-9": None})
    build.fact(id=play.id, sessionId="s-1", eventId="e-3", on="assistant_message_committed",
               detail="state-committed", turn=1, revision=1, configRevision=0)
    build.fact(id=play.id, sessionId="s-1", on="manual_update", detail="manual-update", requestId="r-1")
    build.fact(phase="observe", id=play.id, sessionId="s-1", reason="x" * 300, detail="MVU_PARSE")
    build.legacy = LEGACY_TEXT
    return build
