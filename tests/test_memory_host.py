"""The reference host: snapshots, leases, identity drift, durable logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import Host, has_tool_call, message_text
from mvu_store.memory_host import MemoryHost


def reply(text: str, *, tool: bool = False) -> dict[str, object]:
    content: list[dict[str, object]] = [{"type": "text", "text": line} for line in text.split("|")]
    if tool:
        content.append({"type": "tool-call", "name": "search"})
    return {"turn": 1, "message": {"id": "m1", "content": content}}


async def test_snapshot_is_isolated_from_later_appends() -> None:
    host = MemoryHost()
    assert isinstance(host, Host)
    host.create_session("s1", created_at=1000)
    assert host.append("s1", "turn/start", {"turn": 1}) == 0
    snapshot = await host.inspect("s1")
    host.append("s1", "assistant/message", reply("a"))
    assert snapshot is not None
    assert [e.type for e in snapshot.events] == ["turn/start"]
    assert snapshot.header.identity() == {"sessionId": "s1", "createdAt": 1000}
    assert await host.inspect("nope") is None


async def test_leases_end_with_any_change() -> None:
    host = MemoryHost()
    host.create_session("s1", created_at="2026-01-01T00:00:00Z")
    lease = await host.capture_session_lease("s1")
    assert lease()
    host.append("s1", "user/message", {"message": {"source": {"kind": "user"}}})
    assert not lease()
    fresh = await host.capture_session_lease("s1")
    host.invalidate_leases("s1")
    assert not fresh()
    drift = await host.capture_session_lease("s1")
    host.set_created_at("s1", 5)
    assert not drift()
    assert (await host.inspect("s1")).header.created_at == 5  # type: ignore[union-attr]


def test_refusals() -> None:
    host = MemoryHost()
    host.create_session("s1", created_at=1)
    with pytest.raises(MvuError) as duplicate:
        host.create_session("s1", created_at=2)
    assert duplicate.value.code == "MVU_ID_CONFLICT"
    with pytest.raises(MvuError) as bad_id:
        host.create_session("../etc", created_at=2)
    assert bad_id.value.code == "MVU_SCOPE"
    with pytest.raises(MvuError) as missing:
        host.append("nope", "turn/start", {})
    assert missing.value.code == "MVU_MISSING"
    with pytest.raises(MvuError) as not_json:
        host.append("s1", "turn/start", {"x": float("nan")})
    assert not_json.value.code == "MVU_JSON"


async def test_durable_logs_survive_a_restart(tmp_path: Path) -> None:
    host = MemoryHost(tmp_path)
    host.create_session("s1", created_at=7, parent_session="s0")
    host.append("s1", "turn/start", {"turn": 1})
    host.append("s1", "assistant/message", reply("hello|world"))
    host.set_created_at("s1", 8)
    again = await MemoryHost(tmp_path).inspect("s1")
    assert again is not None
    assert (again.header.created_at, again.header.parent_session) == (8, "s0")
    assert [(e.seq, e.type) for e in again.events] == [(0, "turn/start"), (1, "assistant/message")]
    assert message_text(again.events[1]) == "hello\nworld"


def test_message_helpers() -> None:
    host = MemoryHost()
    host.create_session("s1", created_at=1)
    host.append("s1", "assistant/message", reply("x|y", tool=True))
    event = host._sessions["s1"].events[0]
    assert message_text(event) == "x\ny"
    assert has_tool_call(event)


async def test_a_torn_last_line_is_dropped_and_the_log_stays_usable(tmp_path: Path) -> None:
    host = MemoryHost(tmp_path)
    host.create_session("s1", created_at=1)
    host.append("s1", "turn/start", {"turn": 1})
    log = tmp_path / "s1.jsonl"
    log.write_text(log.read_text(encoding="utf-8") + '{"seq": 1, "type": "turn/en', encoding="utf-8")  # torn
    reopened = MemoryHost(tmp_path)
    assert reopened.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "completed"}}) == 1
    again = await MemoryHost(tmp_path).inspect("s1")
    assert again is not None and [e.type for e in again.events] == ["turn/start", "turn/end"]


def _log(folder: Path, name: str, header: object, *lines: str) -> Path:
    path = folder / name
    path.write_text("\n".join([header if isinstance(header, str) else json.dumps(header), *lines]) + "\n",
                    encoding="utf-8")
    return path


async def test_hostile_logs_are_refused_by_name_and_the_others_serve(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    outside = tmp_path / "escaped.jsonl"
    good = MemoryHost(folder)
    good.create_session("s1", created_at=1000)
    good.append("s1", "user/message", {"text": "hi"})
    _log(folder, "dotdot.jsonl", {"id": "../escaped", "version": 1, "createdAt": 1}, '{"seq": 0, "type": "x"')
    _log(folder, "absolute.jsonl", {"id": str(outside.with_suffix("")), "version": 1, "createdAt": 1})
    _log(folder, "other.jsonl", {"id": "s1", "version": 1, "createdAt": 1}, '{"seq": 0, "typ')  # claims s1, torn
    _log(folder, "badjson.jsonl", "{not json")
    _log(folder, "noid.jsonl", {"version": 1, "createdAt": 1})
    _log(folder, "s9.jsonl", {"id": "s9", "version": 1, "createdAt": 1}, '{"type": "user/message"}', "{}")
    (folder / "latin1.jsonl").write_bytes(b'{"id": "caf\\xe9"}\n\xe9\xff\n')
    (folder / "passwd.jsonl").symlink_to("/etc/passwd")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    s1_before = (folder / "s1.jsonl").read_bytes()

    host = MemoryHost(folder)

    assert set(host.refused) == {"dotdot.jsonl", "absolute.jsonl", "other.jsonl", "badjson.jsonl", "noid.jsonl",
                                 "s9.jsonl", "latin1.jsonl", "passwd.jsonl", "zero.jsonl"}
    assert host.refused["noid.jsonl"].startswith("MVU_JSON")
    assert host.refused["passwd.jsonl"].startswith("MVU_SCOPE")
    assert not outside.exists() and not (tmp_path / "escaped").exists()  # nothing written outside the folder
    assert (folder / "s1.jsonl").read_bytes() == s1_before  # the torn impostor did not rewrite the real s1
    snapshot = await host.inspect("s1")
    assert snapshot is not None and [event.type for event in snapshot.events] == ["user/message"]
    assert host.session_ids() == ["s1"]
