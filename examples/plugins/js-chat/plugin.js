// A `chat` channel plugin for Tocsin, in JavaScript: posts each event as one line of text
// to a Slack- or Discord-compatible incoming webhook.
//
// Build: npm install && npm run build   (jco and componentize-js, from npm)

import { send } from "tocsin:plugin/http@0.3.0";

const SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "chat channel",
  type: "object",
  additionalProperties: false,
  required: ["url"],
  properties: {
    url: { type: "string", description: "The incoming webhook URL (https://, or http:// for local tests)." },
    format: { type: "string", enum: ["slack", "discord"], default: "slack",
              description: "slack posts {\"text\"}; discord posts {\"content\"}." },
  },
};

/** The configuration with defaults, or a list of field errors. */
function parse(text) {
  let config;
  try {
    config = JSON.parse(text);
  } catch (e) {
    return [null, [{ field: "config", message: `is not valid JSON: ${e.message}` }]];
  }
  if (typeof config !== "object" || config === null || Array.isArray(config)) {
    return [null, [{ field: "config", message: "must be a JSON object" }]];
  }
  const problems = [];
  for (const key of Object.keys(config)) {
    if (key !== "url" && key !== "format") {
      problems.push({ field: key, message: "is not a field of a chat channel" });
    }
  }
  if (typeof config.url !== "string" || !/^https?:\/\/[^\s]+$/.test(config.url)) {
    problems.push({ field: "url", message: "must be an http(s) URL" });
  }
  const format = config.format ?? "slack";
  if (format !== "slack" && format !== "discord") {
    problems.push({ field: "format", message: "must be slack or discord" });
  }
  return problems.length ? [null, problems] : [{ url: config.url, format }, []];
}

/** One line a person reads in the channel. */
export function summary(event) {
  const m = event.monitor ?? {};
  const target = m.url ?? m.hostname ?? "";
  const test = event.test ? " (test)" : "";
  switch (event.event) {
    case "incident.created":
      return `🔴 DOWN${test}: ${m.name} ${target} — ${event.failure?.reason ?? "check failed"}`;
    case "incident.acknowledged":
      return `👀 Acknowledged: ${m.name}`;
    case "incident.resolved": {
      const secs = event.incident?.durationSeconds ?? 0;
      return `✅ RECOVERED: ${m.name} after ${Math.max(1, Math.round(secs / 60))} min`;
    }
    case "monitor.paused":
      return `⏸️ Paused: ${m.name}`;
    case "monitor.resumed":
      return `▶️ Resumed: ${m.name}`;
    case "ssl.expiry_warning":
    case "ssl.expiry_critical":
      return `🔒 Certificate of ${m.name} (${target}) expires in ${event.ssl?.daysRemaining} days`;
    default:
      return `${event.event}: ${m.name}`;
  }
}

export const channelPlugin = {
  describe() {
    return {
      name: "chat",
      kind: "channel",
      version: "0.1.0",
      description: "Posts events to Slack- or Discord-compatible incoming webhooks.",
      configSchema: JSON.stringify(SCHEMA),
      capabilities: ["http"],
      // What a channel asks of the server beyond delivering (contract 0.3.0): nothing.
      // A pager would list "acknowledgements"; see docs/plugins.md.
      abilities: [],
      httpsOnly: [],
    };
  },

  validateConfig(text) {
    const [config, problems] = parse(text);
    if (problems.length) throw problems;
    return JSON.stringify(config);
  },

  deliver(n) {
    const [config, problems] = parse(n.config);
    if (problems.length) {
      throw { retryable: false, reason: `invalid configuration: ${problems[0].field} ${problems[0].message}`, statusCode: undefined };
    }
    const text = summary(JSON.parse(n.payload));
    const body = JSON.stringify(config.format === "discord" ? { content: text } : { text });
    let response;
    try {
      response = send({
        method: "POST",
        url: config.url,
        headers: [{ name: "content-type", value: "application/json" }],
        body: new TextEncoder().encode(body),
        timeoutMs: n.timeoutMs,
        followRedirects: false,
        maxRedirects: 0,
        maxBodyBytes: 4096,
        version: "any",
      });
    } catch (e) {
      const err = e.payload ?? e;
      const reason = err.tag ? `${err.tag}: ${err.val}` : String(err);
      throw { retryable: err.tag !== "invalid-request" && err.tag !== "denied", reason, statusCode: undefined };
    }
    if (response.status >= 200 && response.status < 300) {
      return { statusCode: response.status, detail: "posted" };
    }
    throw {
      retryable: response.status >= 500 || response.status === 429,
      reason: `the chat service answered ${response.status}`,
      statusCode: response.status,
    };
  },
};
