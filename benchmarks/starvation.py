"""One hostile request against a real ``mvu serve``, and what a reader of another session sees meanwhile.

The hostile card's declaration transforms ``hp`` with a loop that spends 990,930 of a
validation's 1,000,000 units of fuel (about a quarter of a second), so every single check passes.
Two hostile requests run, one after the other, each while a well-behaved client reads the state of
another session (``GET /mvu/resource``, one request at a time on one keep-alive connection):

- ``reply``: a turn whose reply is ``--commands`` ``_.set('hp', n)`` commands (a check after each);
- ``greeting``: a selection of the card's second greeting, an ``<UpdateVariable>`` block of as
  many commands;
- ``prompt``: a prompt request (``POST /mvu/prompt``) whose text is ``--macro-kib`` KiB of an
  unclosed ``{{format_message_variable::`` over and over (a pattern that scans it in quadratic
  time where the macro scanner is a backtracking regular expression).

For each it prints the hostile request's time and answer (the reply's receipt as the server
records it) and the reader's requests, median and worst latency. With ``--before DIR`` (a
checkout of an earlier commit, e.g. ``git archive 4951e16 | tar -x -C DIR``) the same runs
against that code first, and the ratios of the two are printed side by side.

It also times what a process pool would add per call (pickling a state in and its result out,
both ways), the alternative to the worker threads the service uses (``mvu_store/service/offload.py``).

Human lines first; the LAST line is one JSON object.

    python benchmarks/starvation.py [--commands 40] [--macro-kib 48] [--before DIR] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from misbehaving import MVU, TOKEN, Connection, GoodClient, answer_of, served

BURNING = """import { registerMvuSchema } from 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
export const Schema = z.object({ hp: z.number().transform(v => {
  let i = 0; while (i < 900) { let j = 0; while (j < 120) { j += 1; } i += 1; } return v; }) });
$(() => { registerMvuSchema(Schema); });
"""


def _card(name: str, initvar: str, schema: str | None = None, greetings: tuple[str, ...] = ()) -> bytes:
    entries = [{"comment": "[initvar]", "content": initvar, "enabled": True}]
    if schema is not None:
        entries.append({"comment": "schema", "content": schema, "enabled": True})
    return json.dumps({"spec": "chara_card_v3", "spec_version": "3.0", "data": {
        "name": name, "first_mes": "Hello.", "alternate_greetings": list(greetings),
        "character_book": {"entries": entries}}}).encode()


def _sets(count: int) -> str:
    return "".join(f"_.set('hp', {value});" for value in range(2, count + 2))


def _call(connection: Connection, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    status, fields, answer = connection.request(method, path, token=TOKEN,
                                                body=None if body is None else json.dumps(body).encode())
    parsed: dict[str, Any] = json.loads(answer) if answer else {}
    if status >= 400:
        parsed["answer"] = answer_of(status, fields, answer)
    return status, parsed


def _session(connection: Connection, session: str, character: str) -> str:
    _call(connection, "POST", f"{MVU}/sessions", {"sessionId": session, "createdAt": 1000})
    status, selected = _call(connection, "PUT", f"{MVU}/sessions/{session}/selection", {"characterId": character})
    assert status == 200, selected
    return str(selected["instanceId"])


def _timed(reader: GoodClient, hostile: Any) -> dict[str, Any]:
    """Run ``hostile()`` while ``reader`` reads; its time, its answer and the latencies of the
    reader's requests that were under way at some moment of it (one held up by the hostile
    request may end after it: it counts)."""
    started = time.perf_counter()
    answer = hostile()
    ended = time.perf_counter()
    reader.wait_for(len(reader.latencies) + 2)  # whatever was under way at the end has ended
    during = [latency for sent, latency in zip(reader.started, reader.latencies, strict=False)
              if sent < ended and sent + latency > started]
    return {"seconds": round(ended - started, 2), "answer": answer, "readerRequests": len(during),
            "readerMedianMs": round(statistics.median(during) * 1000, 1) if during else None,
            "readerWorstMs": round(max(during) * 1000, 1) if during else None}


def run(commands: int, macro_kib: int, source: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory, served(Path(directory), source=source) as server:
        connection = Connection(server.address)
        try:
            connection.request("POST", f"{MVU}/cards?characterId=plain", token=TOKEN,
                               body=_card("Plain", "hp: 10\n"))
            connection.request("POST", f"{MVU}/cards?characterId=burner", token=TOKEN,
                               body=_card("Burner", "hp: 1\n", BURNING, (f"<UpdateVariable>{_sets(commands)}"
                                                                         "</UpdateVariable>",)))
            good = _session(connection, "good", "plain")
            _session(connection, "bad", "burner")
            scope = json.dumps({"authority": "local", "sessionId": "good"}, separators=(",", ":"))
            figures: dict[str, Any] = {}
            with GoodClient(server.address, TOKEN, f"{MVU}/resource?id={good}&scope={scope}") as reader:
                reader.wait_for(50)

                def reply() -> Any:
                    seq = _call(connection, "GET", f"{MVU}/sessions/bad")[1]["lastSeq"] + 1
                    events = [{"seq": seq, "type": "turn/start", "data": {"turn": 1}},
                              {"seq": seq + 1, "type": "user/message", "data": {"turn": 1, "message": {
                                  "source": {"kind": "user"}, "content": "go"}}}]
                    _call(connection, "POST", f"{MVU}/sessions/bad/events", {"events": events})
                    events = [{"seq": seq + 2, "type": "assistant/message", "data": {"turn": 1, "message": {
                        "id": "m1", "content": _sets(commands)}}},
                        {"seq": seq + 3, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}]
                    _, answer = _call(connection, "POST", f"{MVU}/sessions/bad/events", {"events": events})
                    outcomes = answer.get("ingest", {}).get("outcomes", [])
                    return answer.get("answer") or [(o["status"], o.get("error")) for o in outcomes]

                def greeting() -> Any:
                    _call(connection, "POST", f"{MVU}/sessions", {"sessionId": "bad2", "createdAt": 1000})
                    status, answer = _call(connection, "PUT", f"{MVU}/sessions/bad2/selection",
                                           {"characterId": "burner", "greetingIndex": 1})
                    return answer.get("answer") or status

                def prompt() -> Any:
                    text = "{{format_message_variable::" * (macro_kib * 1024 // 28)
                    status, answer = _call(connection, "POST", f"{MVU}/prompt", {
                        "scope": {"authority": "local", "sessionId": "good"}, "id": good, "text": text})
                    return answer.get("answer") or status

                figures["reply"] = _timed(reader, reply)
                figures["greeting"] = _timed(reader, greeting)
                figures["prompt"] = _timed(reader, prompt)
            figures["readerAnswers"] = dict(reader.answers)
            figures["tracebacks"] = sum("Traceback" in line for line in server.log)
            return figures
        finally:
            connection.close()


def pickling_cost() -> dict[str, float]:
    """What a process pool would pay per call, in and out: a 2 MiB state pickled and read back."""
    state = {"stat_data": {f"key{n}": {"text": "x" * 200, "values": list(range(10))} for n in range(8000)}}
    rounds = 10
    started = time.perf_counter()
    for _ in range(rounds):
        pickle.loads(pickle.dumps(state))
    per_trip = (time.perf_counter() - started) / rounds
    return {"stateBytes": len(json.dumps(state)), "roundTripMs": round(per_trip * 2 * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=40, help="commands of the hostile reply and greeting")
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--macro-kib", type=int, default=48, help="KiB of the hostile prompt's text")
    parser.add_argument("--quick", action="store_true", help="12 commands (past the allowance all the same), "
                                                             "a prompt of 8 KiB")
    options = parser.parse_args()
    if options.quick:
        options.commands, options.macro_kib = 12, 8
    figures: dict[str, Any] = {"commands": options.commands, "macroKib": options.macro_kib, "quick": options.quick}
    if options.before is not None:
        figures["before"] = run(options.commands, options.macro_kib, options.before.resolve())
        print(f"before: {figures['before']}")
    figures["after"] = run(options.commands, options.macro_kib, None)
    print(f"after:  {figures['after']}")
    figures["tracebacks"] = figures["after"]["tracebacks"]
    if options.before is not None:
        for kind in ("reply", "greeting", "prompt"):
            was, now = figures["before"][kind], figures["after"][kind]
            print(f"{kind}: hostile {was['seconds']} s -> {now['seconds']} s ({was['answer']} -> {now['answer']}); "
                  f"reader worst {was['readerWorstMs']} -> {now['readerWorstMs']} ms "
                  f"(x{was['readerWorstMs'] / now['readerWorstMs']:.0f}), median "
                  f"{was['readerMedianMs']} -> {now['readerMedianMs']} ms")
    figures["processPool"] = pickling_cost()
    print(f"a process pool's pickling per call: {figures['processPool']}")
    figures["loadAverage"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
