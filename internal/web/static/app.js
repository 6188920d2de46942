// The web approver's page script. It is served from the binary, never
// inline (the Content-Security-Policy forbids inline script). It never
// turns text into HTML itself: what it shows a signed-in browser is the
// page fragment the web approver renders with html/template (every string
// escaped as text), fetched with the session from /api/page and parsed
// into inert nodes (DOMParser runs no script, and the CSP forbids inline
// script anyway), which it merges into the page in place.
"use strict";

// How long the allow button stays disabled after a request first appears
// on this page, and how long it must be held down: as the console's key
// guard, a tap that was meant for something else never allows.
const ARM_DELAY_MS = 1500;
const HOLD_MS = 1000;
const POLL_MS = 2000;

// sessionToken is the session, kept in this page's memory only: never a
// cookie (the browser would send it to every port of the host) and never
// in the origin's storage, which whatever page is served at this origin
// later could read (an agent holding the ssh tunnel's local port while
// the tunnel is down). A reload or a new tab signs in again.
let sessionToken = "";

// busy is set while a decision is under way, holding while an allow
// button is held: the list is not updated under either.
let busy = false;
let holding = false;

// firstSeen is when each request (by its element id and hash) first
// appeared on this page: its allow guard runs from then, however often
// the list changes around it.
const firstSeen = new Map();
// rendered is, per section on the page, the markup it was made from
// (without its time left), so that a section that did not change is kept
// as it is, with its buttons.
const rendered = new WeakMap();
let focused = false;

function sessionHeaders() {
  return sessionToken ? { "Agent-Sudo-Session": sessionToken } : {};
}

// assert asks the passkey to sign challenge (base64url), the user verified.
async function assert(challenge, rpId, timeout) {
  const cred = await navigator.credentials.get({
    publicKey: { challenge: unb64url(challenge), rpId: rpId, userVerification: "required", timeout: timeout },
  });
  const resp = cred.response;
  return {
    id: b64url(cred.rawId),
    authenticatorData: b64url(resp.authenticatorData),
    clientDataJSON: b64url(resp.clientDataJSON),
    signature: b64url(resp.signature),
    userHandle: resp.userHandle ? b64url(resp.userHandle) : "",
  };
}

async function signIn() {
  try {
    say("Touch your passkey to sign in…");
    const begin = await post("/api/login/begin", {});
    const a = await assert(begin.challenge, begin.rpId, begin.timeout);
    const done = await post("/api/login/finish", { challenge: begin.challenge, assertion: a });
    sessionToken = done.session;
    document.body.dataset.conn = "ok";
    say("");
    await refresh();
  } catch (e) {
    say("Not signed in: " + plainError(e));
  }
}

// showSignIn shows the sign-in button alone: no session, or it ended.
function showSignIn() {
  sessionToken = "";
  document.getElementById("app").hidden = true;
  document.getElementById("who").replaceChildren();
  document.getElementById("daemons").replaceChildren();
  document.getElementById("requests").replaceChildren();
  document.getElementById("notes").replaceChildren();
  document.getElementById("signin-box").hidden = false;
  document.body.dataset.version = "";
}

async function decide(section, decision) {
  if (busy) return;
  busy = true;
  const words = decision === "deny" ? "deny" : "allow once";
  try {
    say("Touch your passkey to " + words + "…");
    const begin = await post("/api/decide/begin", {
      daemon: Number(section.dataset.daemon), id: section.dataset.id, hash: section.dataset.hash, decision: decision,
    }, sessionHeaders());
    const a = await assert(begin.challenge, begin.rpId, begin.timeout);
    const done = await post("/api/decide/finish", { nonce: begin.statement.nonce, assertion: a }, sessionHeaders());
    if (done.note) {
      // The two-person rule: this allow counted; another person must too.
      say("Waiting for another person: " + section.dataset.id + " (" + done.note + ")");
      addReceipt(section, "counted", done.note);
      section.dataset.decided = "partial";
      const allow = section.querySelector("button.allow");
      if (allow) allow.disabled = true;
      return;
    }
    say((decision === "deny" ? "Denied" : "Allowed") + ": " + section.dataset.id);
    addReceipt(section, decision === "deny" ? "denied" : "allowed", "");
    section.dataset.decided = decision;
    for (const b of section.querySelectorAll("button")) b.disabled = true;
  } catch (e) {
    say("Not decided: " + plainError(e));
  } finally {
    busy = false;
  }
}

// lastEnded are the lists of resolved and finished messages the page was
// last given (updateReceipts).
let lastEnded = [null, null];

// seenFor is the highest seq of the messages the page was last given for
// daemon: those came before a decision made now.
function seenFor(daemon) {
  let max = 0;
  for (const list of lastEnded) {
    if (!list) continue;
    for (const r of list.children) if (r.dataset.daemon === daemon) max = Math.max(max, Number(r.dataset.seq));
  }
  return max;
}

// MAX_RECEIPTS is how many decisions made on this page the receipts keep.
const MAX_RECEIPTS = 5;

// addReceipt records a decision this page made and the daemon took, at
// the top of the receipts, where it stays until MAX_RECEIPTS newer ones
// push it out: outcome is "allowed", "denied" or "counted" (the
// two-person rule: this allow counted, another person must allow too),
// note the daemon's note. Everything in it is set as text.
function addReceipt(section, outcome, note) {
  const li = document.createElement("li");
  li.className = "receipt";
  li.dataset.daemon = section.dataset.daemon;
  li.dataset.id = section.dataset.id;
  li.dataset.outcome = outcome;
  li.dataset.after = String(seenFor(section.dataset.daemon));
  const head = document.createElement("strong");
  head.className = "outcome";
  const what = document.createElement("span");
  what.className = "what mono";
  const cmd = section.querySelector(".command");
  let text = cmd ? cmd.textContent : "";
  if (text.length > 120) text = text.slice(0, 119) + "…";
  what.textContent = text;
  const where = document.createElement("span");
  where.className = "where";
  const from = section.querySelector(".from");
  where.textContent = "request " + section.dataset.id + " on " + (from ? from.textContent : "its daemon") +
    " · " + new Date().toLocaleTimeString();
  const detail = document.createElement("span");
  detail.className = "detail";
  li.append(head, what, where, detail);
  const list = document.getElementById("receipt-list");
  list.prepend(li);
  while (list.children.length > MAX_RECEIPTS) list.lastElementChild.remove();
  document.getElementById("receipts").hidden = false;
  if (note) li.dataset.note = note;
  receiptWords(li);
}

// receiptWords writes a receipt's outcome and detail from what is known
// of its request (the receipt's data): the answer to the decision
// (outcome, note), then how the daemon resolved it (verdict, by) and, once
// an allowed command ran, how it ended (status, exit: each stage's exit
// code), which the daemon sends the web approver.
function receiptWords(li) {
  const head = li.querySelector(".outcome"), detail = li.querySelector(".detail");
  const d = li.dataset;
  const gone = "It will not run.";
  if (d.verdict && d.verdict !== "allowed") {
    head.textContent = {
      denied: d.outcome === "denied" ? "Denied" : "Denied — by " + d.by,
      timeout: "Timed out — no one else allowed it in time",
      withdrawn: "Withdrawn — the agent stopped waiting",
      error: "Not run — the daemon was shutting down",
    }[d.verdict] || "Not run (" + d.verdict + ")";
    detail.textContent = gone;
    return;
  }
  if (d.outcome === "denied") {
    head.textContent = "Denied";
    detail.textContent = gone;
    return;
  }
  if (d.outcome === "counted" && !d.verdict) {
    head.textContent = "Your allow counted; waiting for another person";
    detail.textContent = d.note ? "The daemon says: " + d.note + "." : "";
    return;
  }
  // Allowed (by this page, or by the other person too).
  const who = d.outcome === "counted" ? "Allowed by you and " + d.by : "Allowed";
  if (d.status === undefined) {
    head.textContent = who + " — running";
    detail.textContent = d.by ? "Allowed by " + d.by + "." : "";
    return;
  }
  const codes = d.exit ? d.exit.split(" ") : [];
  const exit = codes.length === 1 ? "exit " + codes[0] : codes.length ? "exit codes " + codes.join(", ") : "";
  const how = {
    ok: "ran, " + exit,
    timeout: "stopped: it ran out of time or an approver stopped it" + (exit ? " (" + exit + ")" : ""),
    error: "did not run: it failed to start",
  }[d.status] || d.status + (exit ? ", " + exit : "");
  head.textContent = who + " — " + how;
  detail.textContent = (d.by ? "Allowed by " + d.by + ". " : "") +
    "`sudo agent-sudo audit show " + d.id + "` on the server has the whole record.";
}

// updateReceipts brings the receipts up to date with how the daemons say
// their requests ended: the page's lists of the latest resolved and
// finished messages, each naming its daemon and request.
function updateReceipts(resolvedList, finishedList) {
  lastEnded = [resolvedList, finishedList];
  // Only what came after the decision (a higher seq than the receipt's
  // after): an earlier request with the same id ended before it.
  const find = (list, li) => list && [...list.children].find((r) => r.dataset.daemon === li.dataset.daemon &&
    r.dataset.id === li.dataset.id && Number(r.dataset.seq) > Number(li.dataset.after));
  for (const li of document.querySelectorAll("#receipt-list > li.receipt")) {
    const r = find(resolvedList, li);
    if (r && !li.dataset.verdict) {
      li.dataset.verdict = r.dataset.verdict;
      li.dataset.by = r.dataset.by;
    }
    const f = li.dataset.verdict === "allowed" ? find(finishedList, li) : null;
    if (f && li.dataset.status === undefined) {
      li.dataset.status = f.dataset.status;
      li.dataset.exit = f.dataset.exit;
    }
    receiptWords(li);
  }
}

// setTitle names the daemons' hosts in the page's title, as the page
// lists them.
function setTitle() {
  const hosts = [...document.querySelectorAll("#daemons .label")].map((e) => e.textContent);
  document.title = hosts.length ? "agent-sudo · " + hosts.join(", ") : "agent-sudo approver";
}

// wrongAddress tells a page opened at another address than the one its
// passkeys sign for (an ssh tunnel on another local port) which address
// to open, in place of a sign-in that could only fail; it reports whether
// it did. The web approver refuses every call from such a page as well.
function wrongAddress() {
  const want = document.body.dataset.origin;
  if (!want || location.origin === want) return false;
  document.getElementById("signin-box").hidden = true;
  const box = document.getElementById("wrong-address");
  box.querySelector(".here").textContent = location.origin;
  box.querySelector(".there").textContent = want;
  const a = box.querySelector("a.open");
  a.href = want + "/";
  a.textContent = want + "/";
  box.hidden = false;
  return true;
}

// setupAllow wires an allow button: held for HOLD_MS, and enabled only
// ARM_DELAY_MS after seen, when its request first appeared on this page.
function setupAllow(section, button, seen) {
  let timer = null;
  const cancel = () => {
    holding = false;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (button.dataset.armed === "1") return;
    button.textContent = "Allow once (hold)";
  };
  button.addEventListener("pointerdown", (ev) => {
    if (button.disabled) return;
    ev.preventDefault();
    holding = true;
    button.textContent = "keep holding…";
    timer = setTimeout(() => {
      timer = null;
      button.dataset.armed = "1";
      button.textContent = "release to allow";
    }, HOLD_MS);
  });
  button.addEventListener("pointerup", () => {
    if (button.dataset.armed === "1") {
      holding = false;
      delete button.dataset.armed;
      button.textContent = "Allow once (hold)";
      decide(section, "allow_once");
      return;
    }
    cancel();
  });
  button.addEventListener("pointerleave", () => {
    delete button.dataset.armed;
    cancel();
  });
  // A click alone (a keyboard's Enter or Space, a stray tap) never allows.
  button.addEventListener("click", (ev) => ev.preventDefault());
  const arm = () => {
    if (section.dataset.summary !== "1" && section.dataset.decided === undefined) {
      button.disabled = false;
      button.dataset.ready = "1";
    }
  };
  setTimeout(arm, Math.max(0, seen + ARM_DELAY_MS - performance.now()));
}

// markup is what a section was rendered as, without its time left, which
// changes at every render.
function markup(section) {
  const c = section.cloneNode(true);
  const left = c.querySelector(".left");
  if (left) left.textContent = "";
  return c.outerHTML;
}

// apply merges the rendered page into this one: the header's parts are
// replaced; a request whose section did not change keeps its node (its
// buttons, its guard, what was decided on it), only its time left set; a
// new or changed one gets a new node whose guard runs from when the
// request first appeared; one no longer listed leaves.
function apply(next) {
  for (const id of ["who", "daemons", "notes"]) {
    document.getElementById(id).replaceWith(document.importNode(next.querySelector("#" + id), true));
  }
  const live = document.getElementById("requests");
  const old = new Map();
  for (const s of live.querySelectorAll("section.request")) old.set(s.id, s);
  const now = performance.now();
  const keys = new Set();
  const nodes = [];
  for (const ns of next.querySelectorAll("#requests > section.request")) {
    const key = ns.id + "/" + ns.dataset.hash;
    keys.add(key);
    if (!firstSeen.has(key)) firstSeen.set(key, now);
    const m = markup(ns);
    const prev = old.get(ns.id);
    if (prev && rendered.get(prev) === m) {
      const left = prev.querySelector(".left"), nleft = ns.querySelector(".left");
      if (left && nleft) left.textContent = nleft.textContent;
      nodes.push(prev);
      continue;
    }
    const node = document.importNode(ns, true);
    rendered.set(node, m);
    node.querySelector("button.deny").addEventListener("click", () => decide(node, "deny"));
    // A request this passkey's person already allowed (the two-person
    // rule) has no allow button: the daemon would refuse a second allow.
    const allow = node.querySelector("button.allow");
    if (allow) setupAllow(node, allow, firstSeen.get(key));
    nodes.push(node);
  }
  for (const k of firstSeen.keys()) if (!keys.has(k)) firstSeen.delete(k);
  live.replaceChildren(...nodes);
  document.body.dataset.version = next.dataset.version;
  updateReceipts(next.querySelector("#resolved"), next.querySelector("#finished"));
  setTitle();
  document.getElementById("signin-box").hidden = true;
  document.getElementById("app").hidden = false;
  const focus = next.dataset.focus;
  if (focus && !focused) {
    focused = true;
    const el = document.getElementById(focus);
    if (el) el.scrollIntoView();
  }
}

// refresh fetches what this session sees and merges it in; without a
// session, or when it ended, it shows the sign-in.
async function refresh() {
  const h = sessionHeaders();
  if (!h["Agent-Sudo-Session"]) {
    showSignIn();
    return;
  }
  const id = new URLSearchParams(location.search).get("id");
  const r = await fetch("/api/page" + (id ? "?id=" + encodeURIComponent(id) : ""), { headers: h, credentials: "omit" });
  if (r.status === 401) {
    // Signed out: the passkey was revoked, or no daemon that knew it is
    // left, or the web approver restarted.
    showSignIn();
    return;
  }
  if (!r.ok) throw new Error("the web approver answered " + r.status);
  const doc = new DOMParser().parseFromString(await r.text(), "text/html");
  const next = doc.getElementById("page");
  if (!next) throw new Error("the web approver sent no page");
  // A button pressed, or a decision begun, while the list was on its way:
  // leave the list as it is; the next poll brings it.
  if (busy || holding) return;
  apply(next);
}

// unreachable says that the web approver cannot be reached (it exited
// when its daemon went away, and its service starts it again): no daemon
// is shown as connected and no request can be decided until it answers
// again; the next answer brings the list back, or the sign-in when the
// web approver restarted (its sessions are in its memory).
function unreachable(why) {
  document.body.dataset.conn = "lost";
  for (const li of document.querySelectorAll("#daemons li")) {
    li.classList.add("down");
    const st = li.querySelector(".state");
    if (st) st.textContent = "reconnecting… (the web approver cannot be reached)";
  }
  document.getElementById("requests").replaceChildren();
  document.body.dataset.version = "";
  say("The web approver cannot be reached (" + why + "): reconnecting…");
}

// reached undoes unreachable once the web approver answers.
function reached() {
  if (document.body.dataset.conn !== "lost") return;
  document.body.dataset.conn = "ok";
  say("");
}

async function poll() {
  try {
    const h = sessionHeaders();
    if (h["Agent-Sudo-Session"] && !busy && !holding) {
      const r = await fetch("/api/state", { headers: h, credentials: "omit" });
      if (r.status === 401) {
        const lost = document.body.dataset.conn === "lost";
        reached();
        showSignIn();
        if (lost) say("The web approver restarted: sign in again.");
      } else if (r.ok) {
        reached();
        const j = await r.json();
        if (String(j.version) !== document.body.dataset.version && !busy && !holding) await refresh();
      } else {
        unreachable("it answered " + r.status);
      }
    }
  } catch (e) {
    unreachable(e.message);
  }
  setTimeout(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("signin").addEventListener("click", signIn);
  if (wrongAddress()) {
    document.body.dataset.ready = "1";
    return;
  }
  try {
    await refresh();
  } catch (e) {
    say("The web approver cannot be reached: " + e.message);
  }
  document.body.dataset.ready = "1";
  setTimeout(poll, POLL_MS);
});
