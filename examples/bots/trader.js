#!/usr/bin/env node
// A tiny guild seat in JavaScript, speaking the exec: seat protocol (docs/leagues.md, "Seats
// that run apart"): one JSON request per line on standard input, one JSON answer per line on
// standard output.
//   guild league --policies "exec:node examples/bots/trader.js,factor,magpie" --episodes 12 --out runs/js
// It hands in commission goods and buys goods its commissions still owe (beyond what it
// carries), one unit a turn; picks goods up; walks the shortest way to where its commissions
// are settled once it carries all they owe, and otherwise at random. Every answer is one of
// the seat's own admissible sentences, so it never faults.
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
let seed = 1;

function random() {  // a small deterministic generator, seeded by the reset request
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

// The goods the seat's commissions still owe, beyond what it carries: the act request's
// observation lists its commissions ("quests": item, count, delivered) and its pack ("items").
function owed(observation) {
  const held = {};
  for (const i of observation.items) held[i.item] = i.count;
  return observation.quests
    .filter((q) => q.count - q.delivered > (held[q.item] || 0))
    .map((q) => q.item);
}

// The first room on a shortest way from here to the room named `goal`, by the observation's
// map (each room's name and the names of its exits); undefined when here or out of reach.
function stepToward(observation, goal) {
  const exits = new Map(observation.map.map((room) => [room.name, room.exits]));
  const first = new Map([[observation.room.name, null]]);  // room -> the step that reaches it
  let frontier = [observation.room.name];
  while (frontier.length > 0 && !first.has(goal)) {
    const next = [];
    for (const room of frontier) {
      for (const to of exits.get(room) || []) {
        if (first.has(to)) continue;
        first.set(to, first.get(room) === null ? to : first.get(room));
        next.push(to);
      }
    }
    frontier = next;
  }
  return first.get(goal) || undefined;
}

function choose(request) {
  const said = request.admissible;
  const me = request.observation;
  for (const q of me.quests) {  // "I hand Guildmaster Vell 1 salt.": one unit a turn
    const hand = `I hand ${q.settledBy} 1 ${q.item}.`;
    if (q.delivered < q.count && said.includes(hand)) return hand;
  }
  const want = owed(me);
  for (const item of want) {  // "I buy 1 salt from Keeper Nesh."
    const buy = said.find((s) => s.startsWith(`I buy 1 ${item} from `));
    if (buy !== undefined) return buy;
  }
  const pick = said.find((s) => s.startsWith("I pick up"));
  if (pick !== undefined) return pick;
  const open = me.quests.find((q) => q.delivered < q.count);
  if (want.length === 0 && open !== undefined) {  // carrying all it owes: go and hand it in
    const step = stepToward(me, open.at);
    if (step !== undefined && said.includes(`I walk to ${step}.`)) return `I walk to ${step}.`;
  }
  const walks = said.filter((s) => s.startsWith("I walk"));
  if (walks.length > 0) return walks[Math.floor(random() * walks.length)];
  return said[0];  // waiting is always admissible
}

rl.on("line", (line) => {
  const request = JSON.parse(line);
  let answer = {};
  if (request.type === "reset") {
    seed = request.seed % 2147483648;
    answer = { ok: true };
  } else if (request.type === "act") {
    answer = { action: choose(request), say: "", notes: "" };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
