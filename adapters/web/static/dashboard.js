// Keep the overview live: poll /api/status and redraw the counters, platforms and chats.
// No framework and no inline script (the CSP forbids it); text goes in as textContent.
"use strict";

const POLL_MS = 1500;

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

function drawChats(chats) {
  const body = document.querySelector("#chats tbody");
  const rows = chats.map((c) => {
    const row = document.createElement("tr");
    row.dataset.chat = c.chat;
    const link = document.createElement("a");
    link.href = chatUrl(c.chat);
    link.textContent = c.chat;
    const named = document.createDocumentFragment();
    named.append(link);
    if (c.name) {
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = c.name;
      named.append(" ", name);
    }
    cell(row, named);
    const phase = document.createElement("span");
    phase.className = "phase " + c.phase;
    phase.textContent = c.phase;
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
    td.textContent = "No chat has written yet.";
    row.appendChild(td);
    rows.push(row);
  }
  body.replaceChildren(...rows);
}

function drawPlatforms(platforms) {
  const items = platforms.map((p) => {
    const li = document.createElement("li");
    const state = p.connected === true ? "connected" : p.connected === false ? "not connected" : "unknown";
    li.className = p.connected === true ? "up" : p.connected === false ? "down" : "unknown";
    li.textContent = `${p.name}: ${state}`;
    return li;
  });
  document.getElementById("platforms").replaceChildren(...items);
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const response = await fetch("/api/status", { credentials: "same-origin", cache: "no-store" });
    if (response.status === 401) {
      live.textContent = "Logged out: log in again to see live updates.";
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
    document.querySelector('[data-llm="cost_text"]').textContent = bot.cost_text;
    document.getElementById("hard-cap").hidden = !status.llm_today.hard_cap_reached;
    drawPlatforms(status.platforms);
    drawChats(status.chats);
    live.textContent = "Live: updated " + localTime(new Date().toISOString()) + ".";
  } catch (error) {
    live.textContent = "Cannot reach pacebot; retrying.";
  }
  setTimeout(poll, POLL_MS);
}

if (document.body.dataset.page === "overview") {
  setTimeout(poll, POLL_MS);
}
