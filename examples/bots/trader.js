#!/usr/bin/env node
// A tiny guild seat in JavaScript, speaking the seat protocol (README, "Seats that run apart"):
// one JSON request per line on standard input, one JSON answer per line on standard output.
//   guild league --policies "exec:node examples/bots/trader.js,factor,magpie" --episodes 12
// It hands in commission goods, buys what a commission names, picks goods up, and otherwise
// walks; every answer is one of the seat's own admissible sentences, so it never faults.
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
let seed = 1;

function random() {  // a small deterministic generator, seeded by the reset request
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

function choose(request) {
  const said = request.admissible;
  for (const start of ["I hand Guildmaster", "I buy", "I pick up"]) {
    const hit = said.find((s) => s.startsWith(start));
    if (hit !== undefined) return hit;
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
