"""The service puts the host's names into macros (per session through session/names events, per
call through ``names``) and gives a declaration the turn's time as its clock, never the machine's."""

from __future__ import annotations

from typing import Any

from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import scope, stat_data, text_message, turn_end, user_message

ZOD = "https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js"
CLOCK_SCHEMA = f"""
import {{ registerMvuSchema }} from '{ZOD}';
export const Schema = z.object({{
  hp: z.number(),
  上次: z.number().prefault(() => Date.now()),
  日志: z.array(z.string()).prefault([]),
}}).transform(v => ({{ ...v, 日期: new Date(v.上次).toISOString().slice(0, 10) }}));
$(() => {{ registerMvuSchema(Schema); }});
"""
NAMED: dict[str, Any] = {"character_id": "named", "name": "白雪",
                         "initvar": ["{{user}}:\n  好感度: 10\n同伴: {{char}}\n备注: <user>的旅伴是<char>\n"]}
TIMED: dict[str, Any] = {"character_id": "timed", "initvar": ["hp: 5\n"], "schema_source": CLOCK_SCHEMA,
                         "at": 1_748_822_400_000}  # registered 2025-06-02


async def _select(service: MvuService, host: MemoryHost, card: dict[str, Any], session_id: str = "s1",
                  names: dict[str, str] | None = None) -> str:
    await service.discover(definition=card)
    host.create_session(session_id, created_at=1000)
    selection = await service.select_character(session_id=session_id, character_id=card["character_id"],
                                               names=names)
    assert selection.instance_id is not None
    return selection.instance_id


async def _turn(host: MemoryHost, turn: int, reply: str, *, at: int | None = None, session_id: str = "s1") -> None:
    host.append(session_id, "turn/start", {"turn": turn})
    host.append(session_id, "user/message", user_message(turn))
    await host.drain()
    host.append(session_id, "assistant/message", text_message(turn, f"m{turn}", reply))
    host.append(session_id, "turn/end", {**turn_end(turn), **({} if at is None else {"at": at})})
    await host.drain()


async def test_without_names_macros_stay_as_written(service: MvuService, host: MemoryHost) -> None:
    instance = await _select(service, host, NAMED)
    assert await stat_data(service, instance) == {"{{user}}": {"好感度": 10}, "同伴": "{{char}}",
                                                  "备注": "<user>的旅伴是<char>"}
    await _turn(host, 1, "_.add('{{user}}.好感度', 5);")
    assert (await stat_data(service, instance))["{{user}}"] == {"好感度": 15}


async def test_the_sessions_names_fill_initial_data_and_replies(service: MvuService, host: MemoryHost) -> None:
    await service.discover(definition=NAMED)
    host.create_session("s1", created_at=1000)
    host.append("s1", "session/names", {"user": "爱丽丝", "char": "白雪"})
    selection = await service.select_character(session_id="s1", character_id="named")
    instance = selection.instance_id
    assert instance is not None
    assert await stat_data(service, instance) == {"爱丽丝": {"好感度": 10}, "同伴": "白雪",
                                                  "备注": "爱丽丝的旅伴是白雪"}
    await _turn(host, 1, "她笑了。_.add('{{user}}.好感度', 5);//{{char}}很开心\n_.set('同伴', '<CHAR>');")
    data = await stat_data(service, instance)
    assert (data["爱丽丝"], data["同伴"]) == ({"好感度": 15}, "白雪")
    # The persona is renamed: later replies read the new name, the state keeps what it had.
    host.append("s1", "session/names", {"user": "Alice", "char": "白雪"})
    await _turn(host, 2, "_.set('同伴', '{{user}}');")
    data = await stat_data(service, instance)
    assert (data["同伴"], data["爱丽丝"]) == ("Alice", {"好感度": 15})


async def test_a_calls_names_go_over_the_sessions(service: MvuService, host: MemoryHost) -> None:
    instance = await _select(service, host, NAMED, names={"user": "Bob"})
    assert "Bob" in await stat_data(service, instance)
    host.attach(None)  # this test calls the service itself, with its names
    start = host.append("s1", "turn/start", {"turn": 1})
    await service.checkpoint(session_id="s1", turn_start_seq=start)
    host.append("s1", "user/message", user_message(1))
    host.append("s1", "assistant/message", text_message(1, "m1", "_.set('同伴', '{{char}}');"))
    host.append("s1", "turn/end", turn_end(1))
    report = await service.ingest(session_id="s1", names={"char": "Snow"})
    assert [outcome.status for outcome in report.outcomes] == ["committed"]
    assert (await stat_data(service, instance))["同伴"] == "Snow"


async def test_the_reply_is_stored_as_sent(service: MvuService, host: MemoryHost) -> None:
    instance = await _select(service, host, NAMED, names={"user": "Bob", "char": "Snow"})
    await _turn(host, 1, "_.set('同伴', '{{char}}');")
    [entry] = await service.history(id=instance, scope=scope("s1"))
    assert entry.revision == 1
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    assert "{{char}}" in str(snapshot.events[-2].data)  # the host's event is untouched


async def test_the_declaration_reads_the_registration_time_then_the_turns(service: MvuService,
                                                                         host: MemoryHost) -> None:
    instance = await _select(service, host, TIMED)
    assert await stat_data(service, instance) == {"hp": 5, "上次": 1_748_822_400_000, "日志": [],
                                                  "日期": "2025-06-02"}
    await _turn(host, 1, "_.set('上次', 0);\n_.unset('上次');", at=1_748_908_800_000)  # 2025-06-03
    data = await stat_data(service, instance)
    assert (data["上次"], data["日期"]) == (1_748_908_800_000, "2025-06-03")


async def test_a_turn_without_a_time_refuses_only_what_reads_the_clock(service: MvuService,
                                                                      host: MemoryHost) -> None:
    instance = await _select(service, host, TIMED)
    await _turn(host, 1, "_.set('hp', 9);\n_.unset('上次');")
    record = await service.read(id=instance, scope=scope("s1"))
    assert record is not None
    assert record.content["stat_data"]["hp"] == 9  # type: ignore[index,call-overload]
    assert record.content["stat_data"]["上次"] == 1_748_822_400_000  # type: ignore[index,call-overload]
    [diagnostic] = record.content["update_diagnostics"]  # type: ignore[index,call-overload]
    assert diagnostic["code"] == "MVU_SCHEMA" and "clock" in diagnostic["message"]


async def test_a_card_registered_without_a_time_cannot_start_a_clock_reading_default(service: MvuService) -> None:
    template = await service.discover(definition={**TIMED, "at": None})
    assert template.source_error == "MVU_SCHEMA"
