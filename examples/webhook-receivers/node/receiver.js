// A Tocsin webhook receiver using only Node.js's standard library (Node 18 or newer).
//
// It checks the signature and the timestamp of every delivery, answers at once, and
// ignores deliveries it has already seen (retries keep their webhookId).
//
//     TOCSIN_WEBHOOK_SECRET=whsec_... node receiver.js
//
// During a secret rotation, give both secrets, new first: TOCSIN_WEBHOOK_SECRET=new,old.

"use strict";

const crypto = require("node:crypto");
const http = require("node:http");

const TOLERANCE_SECONDS = 300;
const REMEMBERED_IDS = 10000;

const secrets = (process.env.TOCSIN_WEBHOOK_SECRET || "")
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
if (secrets.length === 0) {
  console.error("set TOCSIN_WEBHOOK_SECRET to the workspace's webhook secret (whsec_...)");
  process.exit(1);
}

// Webhook ids already handled, oldest first. A real service keeps these in its database.
const seen = new Set();

/** Why the delivery must be refused, or null when it is genuine. */
function verify(timestamp, rawBody, signature) {
  const sent = Number.parseInt(timestamp, 10);
  if (!/^\d+$/.test(timestamp || "")) return "missing or malformed X-Service-Timestamp";
  if (Math.abs(Date.now() / 1000 - sent) > TOLERANCE_SECONDS) return "stale timestamp";
  const given = Buffer.from(signature || "");
  for (const secret of secrets) {
    const expected = Buffer.from(
      "sha256=" +
        crypto.createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest("hex"),
    );
    if (expected.length === given.length && crypto.timingSafeEqual(expected, given)) return null;
  }
  return "signature does not match";
}

function firstTime(webhookId) {
  if (seen.has(webhookId)) return false;
  seen.add(webhookId);
  if (seen.size > REMEMBERED_IDS) seen.delete(seen.values().next().value);
  return true;
}

/** Do the real work here (after answering): page someone, open a ticket, ... */
function handle(event) {
  console.log(`accepted ${event.webhookId} ${event.event}`);
}

function answer(res, status, payload) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(payload));
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") return answer(res, 405, { error: "POST only" });
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const rawBody = Buffer.concat(chunks);
    const problem = verify(
      req.headers["x-service-timestamp"],
      rawBody,
      req.headers["x-service-signature"],
    );
    if (problem) {
      console.log(`rejected ${problem}`);
      return answer(res, problem === "stale timestamp" ? 400 : 401, { error: problem });
    }
    const event = JSON.parse(rawBody.toString("utf8"));
    if (!firstTime(event.webhookId)) {
      console.log(`duplicate ${event.webhookId}`);
      return answer(res, 200, { status: "duplicate" });
    }
    answer(res, 200, { status: "accepted" });
    handle(event);
  });
});

const host = process.env.HOST || "127.0.0.1";
server.listen(Number(process.env.PORT || 8000), host, () => {
  console.log(`listening on http://${host}:${server.address().port}`);
});
