// Keep the overview live: poll /api/status and redraw the counters, platforms and chats.
// Ask before a form that pops or forgets is sent (its data-confirm says what it does).
// No framework and no inline script (the CSP forbids it); text goes in as textContent,
// in the words the page hands over (data-words on <body>, in bot.language).
"use strict";

const POLL_MS = 1500;
const WORDS = JSON.parse(document.body.dataset.words || "{}");

function say(name, fields = {}) {
  const template = WORDS[name] || name;
  return template.replace(/\{(\w+)\}/g, (whole, key) => (key in fields ? String(fields[key]) : whole));
}

function chatUrl(chat) {
  return "/chats/" + encodeURIComponent(chat).replace(/%3A/g, ":");
}

// Times as the server renders them: in the bot's zone, "YYYY-MM-DD HH:MM:SS" (Sweden's form).
const ZONE = document.querySelector('meta[name="time-zone"]')?.content || undefined;
const TIME_FORMAT = new Intl.DateTimeFormat("sv-SE", {
  timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit",
  hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
});

function localTime(iso) {
  return iso ? TIME_FORMAT.format(new Date(iso)) : "—";
}

function cell(row, content) {
  const td = document.createElement("td");
  if (content instanceof Node) td.appendChild(content); else td.textContent = content;
  row.appendChild(td);
}

// A chat is named by its title first (a group's title, a private chatter's name), its key second.
function chatName(c) {
  const named = document.createDocumentFragment();
  const link = document.createElement("a");
  link.href = chatUrl(c.chat);
  link.textContent = c.name || c.chat;
  named.append(link);
  if (c.name) {
    const key = document.createElement("span");
    key.className = "key";
    key.textContent = c.chat;
    named.append(" ", key);
  }
  return named;
}

function drawChats(chats) {
  const body = document.querySelector("#chats tbody");
  const rows = chats.map((c) => {
    const row = document.createElement("tr");
    row.dataset.chat = c.chat;
    cell(row, chatName(c));
    const phase = document.createElement("span");
    phase.className = "phase " + c.phase;
    phase.textContent = say("phase_" + c.phase);
    cell(row, phase);
    cell(row, String(c.message_count));
    cell(row, localTime(c.last_message_at));
    return row;
  });
  if (rows.length === 0) {
    const row = document.createElement("tr");
    row.className = "empty";
    const td = document.createElement("td");
    td.colSpan = 4;
    td.textContent = say("no_chat_yet");
    row.appendChild(td);
    rows.push(row);
  }
  body.replaceChildren(...rows);
}

function drawPlatforms(platforms) {
  const items = platforms.map((p) => {
    const li = document.createElement("li");
    const state = p.connected === true ? "up" : p.connected === false ? "down" : "unknown";
    li.className = state;
    li.textContent = `${p.name}: ${say("platform_" + state)}`;
    return li;
  });
  document.getElementById("platforms").replaceChildren(...items);
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const response = await fetch("/api/status", { credentials: "same-origin", cache: "no-store" });
    if (response.status === 401) {
      live.textContent = say("live_logged_out");
      return;
    }
    const status = await response.json();
    for (const field of ["waiting_messages", "queued_replies", "llm_errors_last_hour"]) {
      document.querySelector(`[data-field="${field}"]`).textContent = String(status[field]);
    }
    for (const cell of document.querySelectorAll("[data-sent]")) {
      cell.textContent = String(status.sent_today[cell.dataset.sent] || 0);
    }
    const bot = status.llm_today.bot;
    document.querySelector('[data-llm="total_tokens"]').textContent = bot.total_tokens.toLocaleString("en-US");
    // Without prices the page says so in its own words; a cost is redrawn only when there is one.
    if (bot.priced) document.querySelector('[data-llm="cost_text"]').textContent = bot.cost_text;
    document.getElementById("hard-cap").hidden = !status.llm_today.hard_cap_reached;
    drawPlatforms(status.platforms);
    drawChats(status.chats);
    live.textContent = say("live_at", { time: localTime(new Date().toISOString()) });
  } catch (error) {
    live.textContent = say("live_unreachable");
  }
  setTimeout(poll, POLL_MS);
}

// Pop, forget, forget-this-person, the switch and a reset say what they will do and wait
// for a yes: a form by its own data-confirm, or the button that sent it by its.
for (const form of document.querySelectorAll("form")) {
  form.addEventListener("submit", (event) => {
    const asked = event.submitter?.dataset.confirm ?? form.dataset.confirm;
    if (asked && !window.confirm(asked)) event.preventDefault();
  });
}

if (document.body.dataset.page === "overview") {
  setTimeout(poll, POLL_MS);
}
