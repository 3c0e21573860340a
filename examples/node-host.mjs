#!/usr/bin/env node
// A small chat host in Node.js (20 or later; plain fetch, no dependencies) that plays a whole
// chat against `mvu serve`: it registers a card, creates a session, plays three turns, swipes
// the last reply, reads the state and edits it, checking the store's answer at every step.
//
//   MVU_URL=http://127.0.0.1:8787/pmp-dsh-tavern/api/v1 MVU_TOKEN=... node examples/node-host.mjs
//
// The protocol it follows is docs/host-protocol.md. It exits non-zero with one message on the
// first answer it did not expect, and prints as its last line one JSON object naming the chat
// it played: {"sessionId", "instanceId", "revision"} (the swiped branch, after the edit).

import { createHash } from "node:crypto";

const CHARACTER_ID = "node-hero";
const FORMAT_VERSION = 4;

// A SillyTavern card as a user has it: the starting state in an [initvar] lorebook entry, the
// Zod declaration in an enabled Tavern Helper script. hp is clamped to 0..max_hp, gold may not
// go below 0, and strings are coerced to numbers.
const CARD = {
  spec: "chara_card_v3",
  spec_version: "3.0",
  data: {
    name: "Ferryman of the Grey River",
    description: "Oskar rows travellers across the Grey River and keeps their accounts.",
    first_mes: "Oskar holds out a hand for the fare. \"Thirty breaths of health and five coins, is it?\"",
    extensions: {
      tavern_helper: {
        scripts: [{
          type: "script",
          enabled: true,
          name: "MVU schema",
          id: "node-hero-schema",
          content: [
            "export const Schema = z.object({",
            "  hp: z.coerce.number(),",
            "  max_hp: z.coerce.number().int().min(1),",
            "  gold: z.coerce.number().int().min(0),",
            "  pack: z.record(z.string(), z.coerce.number().int()).prefault({}),",
            "}).transform(hero => ({ ...hero, hp: _.clamp(hero.hp, 0, hero.max_hp) }));",
            "$(() => { registerMvuSchema(Schema); });",
          ].join("\n"),
        }],
      },
    },
    character_book: {
      name: "Grey River",
      entries: [{
        id: 0,
        keys: [],
        comment: "[initvar] starting state",
        content: "hp: 30\nmax_hp: 30\ngold: 5\npack:\n  rope: 1\n  bread: 2\n",
        enabled: true,
      }],
    },
  },
};

// Three turns; after each, the state the card's declaration must leave.
const TURNS = [
  {
    user: "I pay the fare and step into the boat.",
    reply: "The river spirits snap at the oars; you beat them off.\n_.set('hp', 22);//bitten\n_.add('gold', 15);//a spirit's coin purse\n",
    expect: { hp: 22, gold: 20 },
  },
  {
    user: "I drink from the spring on the island.",
    reply: "The water is cold and every bite closes.\n_.add('hp', 50);//the spring\n_.add('pack.bread', -1);//lunch\n",
    expect: { hp: 30, gold: 20, pack: { rope: 1, bread: 1 } },
  },
  {
    user: "I haggle with the toll troll.",
    reply: "The troll wants a hundred coins and takes a swing when you refuse.\n_.add('gold', -100);//the toll\n_.set('hp', 10);//a club\n",
    // gold would go below 0: the declaration refuses that command alone (a diagnostic).
    expect: { hp: 10, gold: 20 },
    diagnostics: true,
  },
];
// The swipe regenerates the third reply: it starts from that turn's pre-turn checkpoint.
const SWIPED = {
  user: TURNS[2].user,
  reply: "You talk the troll down to a song.\n_.set('hp', 25);//a scraped knee\n_.add('pack.rope', 1);//a gift\n",
  expect: { hp: 25, gold: 20, pack: { rope: 2, bread: 1 } },
};
const EDITED_GOLD = 99;

class Failure extends Error {}

function fail(message) {
  throw new Failure(message);
}

const root = process.env.MVU_URL;
const token = process.env.MVU_TOKEN;
if (!root || !token) {
  console.error("node-host: set MVU_URL (the API root, e.g. http://127.0.0.1:8787/pmp-dsh-tavern/api/v1) and MVU_TOKEN");
  process.exit(2);
}
const api = `${root.replace(/\/+$/, "")}/mvu`;

// One request; anything but the expected status is a failure that names the problem's code.
async function call(method, path, { json, body, type, headers = {}, expect = 200 } = {}) {
  const init = { method, headers: { Authorization: `Bearer ${token}`, ...headers }, signal: AbortSignal.timeout(30_000) };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    init.body = body;
    init.headers["Content-Type"] = type;
  }
  let response;
  try {
    response = await fetch(`${api}${path}`, init);
  } catch (error) {
    fail(`${method} ${path}: no answer (${error.cause?.code ?? error.cause?.message ?? error.message})`);
  }
  const text = await response.text();
  let answer = null;
  try {
    answer = text ? JSON.parse(text) : null;
  } catch {
    fail(`${method} ${path}: ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  const expected = Array.isArray(expect) ? expect : [expect];
  if (!expected.includes(response.status)) {
    const why = answer && answer.code ? `${answer.code}: ${answer.detail ?? answer.title}` : text.slice(0, 300);
    fail(`${method} ${path}: ${response.status}, expected ${expected.join(" or ")} (${why})`);
  }
  return { status: response.status, headers: response.headers, answer };
}

function query(params) {
  return new URLSearchParams(params).toString();
}

function scopeOf(sessionId) {
  return JSON.stringify({ authority: "local", sessionId });
}

// JSON with object keys sorted and no spaces, as the store writes it for fingerprints (and
// compares states: it keeps objects in its own key order).
function canonical(value) {
  if (Array.isArray(value)) {
    return `[${value.map(canonical).join(",")}]`;
  }
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function sha256(text) {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

// The host's own copy of a session: it numbers events densely from 0 and sends them in batches,
// already in the form the store keeps (text blocks only, docs/host-protocol.md), so the chained
// fingerprint it computes is the one the store answers.
class Session {
  constructor(id, createdAt, parent = null) {
    this.id = id;
    this.createdAt = createdAt;
    this.parent = parent;
    this.events = [];
    this.chain = [sha256(JSON.stringify([id, FORMAT_VERSION, createdAt, parent, null, null]))];
  }

  add(type, data) {
    const event = { seq: this.events.length, type, data };
    this.events.push(event);
    this.chain.push(sha256(this.chain.at(-1) + canonical([event.seq, type, data])));
    return event;
  }

  // The store holds what we hold when its last event and fingerprint are ours.
  agrees(answer) {
    return answer.lastSeq === this.events.length - 1 && answer.fingerprint === this.chain.at(-1);
  }

  async create() {
    const header = { sessionId: this.id, createdAt: this.createdAt };
    if (this.parent) {
      header.parentSession = this.parent;
    }
    const { answer } = await call("POST", "/sessions", { json: header, expect: 201 });
    if (!this.agrees(answer)) {
      fail(`session ${this.id}: created as ${JSON.stringify(answer)}, expected no event and fingerprint ${this.chain[0]}`);
    }
  }

  // Sends the events from `from` on; returns the store's answer after checking it stored them.
  async send(from) {
    const batch = this.events.slice(from);
    const { answer } = await call("POST", `/sessions/${encodeURIComponent(this.id)}/events`, { json: { events: batch } });
    if (answer.error) {
      fail(`session ${this.id}: the events were stored but ${answer.error.code}: ${answer.error.detail}`);
    }
    if (!this.agrees(answer)) {
      fail(`session ${this.id}: the store ends at event ${answer.lastSeq} (${answer.fingerprint}), `
           + `we at ${this.events.length - 1} (${this.chain.at(-1)})`);
    }
    return answer;
  }

  // One whole turn in two batches: the request (turn/start freezes the pre-turn checkpoint before
  // the model is asked), then the reply and the completed turn/end (the reply is applied).
  async turn(number, user, reply) {
    const requestFrom = this.events.length;
    this.add("turn/start", { turn: number });
    this.add("user/message", { turn: number, message: { source: { kind: "user" }, content: [{ type: "text", text: user }] } });
    const started = await this.send(requestFrom);
    if (started.checkpoints.length === 0) {
      fail(`session ${this.id} turn ${number}: turn/start froze no checkpoint`);
    }
    const replyFrom = this.events.length;
    const message = this.add("assistant/message", {
      turn: number, message: { id: `${this.id}-m${number}`, content: [{ type: "text", text: reply }] },
    });
    this.add("turn/end", { turn: number, reason: { kind: "completed" } });
    const ended = await this.send(replyFrom);
    return { replySeq: message.seq, report: ended.ingest };
  }
}

async function read(instanceId, sessionId) {
  const { headers, answer } = await call("GET", `/resource?${query({ id: instanceId, scope: scopeOf(sessionId) })}`);
  // The ETag names the revision and a digest of the answer: "r<revision>-<digest>".
  if (!headers.get("etag")?.startsWith(`"r${answer.revision}-`)) {
    fail(`read ${instanceId}: ETag ${headers.get("etag")} does not name revision ${answer.revision}`);
  }
  return answer;
}

function check(what, state, expected) {
  for (const [key, value] of Object.entries(expected)) {
    if (canonical(state[key]) !== canonical(value)) {
      fail(`${what}: ${key} is ${JSON.stringify(state[key])}, expected ${JSON.stringify(value)}`);
    }
  }
}

function outcomeOf(report, instanceId, what) {
  const outcome = report?.outcomes?.find((entry) => entry.resourceId === instanceId);
  if (!outcome) {
    fail(`${what}: the ingest report has no outcome for ${instanceId}: ${JSON.stringify(report)}`);
  }
  if (outcome.status !== "committed") {
    fail(`${what}: the reply was ${outcome.status} (${outcome.error ?? "no error"})`);
  }
  return outcome;
}

async function playTurn(session, instanceId, number, turn) {
  const what = `session ${session.id} turn ${number}`;
  const { replySeq, report } = await session.turn(number, turn.user, turn.reply);
  const outcome = outcomeOf(report, instanceId, what);
  if (Boolean(turn.diagnostics) !== outcome.diagnostics.length > 0) {
    fail(`${what}: diagnostics ${JSON.stringify(outcome.diagnostics)}`);
  }
  const record = await read(instanceId, session.id);
  check(what, record.content.stat_data, turn.expect);
  return replySeq;
}

async function main() {
  // 1. The card becomes a template (nothing in it runs).
  const { answer: template } = await call("POST", `/cards?${query({ characterId: CHARACTER_ID })}`, {
    body: JSON.stringify(CARD), type: "application/json",
  });
  if (!template.id?.startsWith("mvu:character-") || template.sourceError) {
    fail(`card: ${JSON.stringify(template)}`);
  }

  // 2. A new session (a fresh id every run), and the character selected for it.
  const now = Date.now();
  const chat = new Session(`node-${now.toString(36)}-${process.pid}`, now);
  await chat.create();
  const { answer: selection } = await call("PUT", `/sessions/${chat.id}/selection`, { json: { characterId: CHARACTER_ID } });
  const instanceId = selection.instanceId;
  if (selection.templateId !== template.id || !instanceId) {
    fail(`selection: ${JSON.stringify(selection)}`);
  }
  check("the opening", (await read(instanceId, chat.id)).content.stat_data, { hp: 30, gold: 5, pack: { rope: 1, bread: 2 } });

  // 3. Three turns.
  const replies = [];
  for (const [index, turn] of TURNS.entries()) {
    replies.push(await playTurn(chat, instanceId, index + 1, turn));
  }

  // A resent batch is a replay: nothing new is stored, nothing is applied twice.
  const again = await call("POST", `/sessions/${chat.id}/events`, { json: { events: chat.events.slice(-2) } });
  if (again.answer.appended !== 0 || again.answer.replayed !== 2) {
    fail(`a resent batch: ${JSON.stringify(again.answer)}`);
  }
  const afterTurns = await read(instanceId, chat.id);
  if (afterTurns.revision !== TURNS.length) {
    fail(`after ${TURNS.length} turns (one resent) the revision is ${afterTurns.revision}`);
  }

  // 4. The user swipes the third reply. Capture the seed before the branch exists, create the
  // branch with the prefix up to the reply before (its turn ends "forked" in the branch), mark
  // the end of the copy, install the seed, then play the regenerated turn there.
  const { answer: seed } = await call("POST", "/seeds", {
    json: { sessionId: chat.id, kind: "reply-swipe", atEventId: replies[2], prefixEndEventId: replies[1] },
  });
  if (!seed.ticket) {
    fail(`the swipe seed has no ticket: ${JSON.stringify(seed)}`);
  }
  const swipe = new Session(`${chat.id}-swipe`, Date.now(), chat.id);
  await swipe.create();
  for (const event of chat.events.slice(0, replies[1] + 1)) {
    swipe.add(event.type, event.data);
  }
  swipe.add("turn/end", { turn: 2, reason: { kind: "forked" } });
  swipe.add("session/end-seed", {});
  await swipe.send(0);
  const { answer: installed } = await call("POST", "/seeds/install", { json: { ticket: seed.ticket, sessionId: swipe.id } });
  if (installed.instanceIds?.length !== 1) {
    fail(`the seed installed ${JSON.stringify(installed)}`);
  }
  const [swipeInstance] = installed.instanceIds;
  // The branch starts from the swiped turn's pre-turn checkpoint: the state after turn 2.
  check("the swipe's start", (await read(swipeInstance, swipe.id)).content.stat_data, TURNS[1].expect);
  await playTurn(swipe, swipeInstance, 3, SWIPED);
  // The original chat keeps its own third reply.
  check("the original after the swipe", (await read(instanceId, chat.id)).content.stat_data, TURNS[2].expect);

  // 5. A read and an edit of the branch's state, guarded by the read's ETag.
  const current = await read(swipeInstance, swipe.id);
  const content = { stat_data: { ...current.content.stat_data, gold: EDITED_GOLD } };
  const editHeaders = { "If-Match": `"r${current.revision}"`, "Idempotency-Key": `${swipe.id}-edit-1` };
  const edit = { id: swipeInstance, scope: { authority: "local", sessionId: swipe.id }, content };
  const { answer: receipt } = await call("POST", "/update", { json: edit, headers: editHeaders });
  if (receipt.revision !== current.revision + 1) {
    fail(`the edit answered revision ${receipt.revision}, expected ${current.revision + 1}`);
  }
  const replay = await call("POST", "/update", { json: edit, headers: editHeaders });
  if (replay.headers.get("idempotent-replayed") !== "true" || replay.answer.revision !== receipt.revision) {
    fail(`the edit sent again was not a replay: ${JSON.stringify(replay.answer)}`);
  }
  const edited = await read(swipeInstance, swipe.id);
  check("after the edit", edited.content.stat_data, { ...SWIPED.expect, gold: EDITED_GOLD });
  if (edited.revision !== receipt.revision) {
    fail(`after the edit the revision is ${edited.revision}, the receipt said ${receipt.revision}`);
  }

  console.log(JSON.stringify({ sessionId: swipe.id, instanceId: swipeInstance, revision: edited.revision }));
}

main().catch((error) => {
  console.error(`node-host: ${error instanceof Failure ? error.message : error.stack}`);
  process.exit(1);
});
