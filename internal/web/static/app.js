// The web approver's page script. It is served from the binary, never
// inline (the Content-Security-Policy forbids inline script), and it never
// puts text into the page as HTML: only textContent and attributes.
"use strict";

// How long the allow button stays disabled after the page shows a request,
// and how long it must be held down: as the console's key guard, a tap
// that was meant for something else never allows.
const ARM_DELAY_MS = 1500;
const HOLD_MS = 1000;
const POLL_MS = 2000;

// busy is set while a decision is under way, holding while an allow
// button is held: the page does not reload under either.
let busy = false;
let holding = false;

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
    await post("/api/login/finish", { challenge: begin.challenge, assertion: a });
    location.reload();
  } catch (e) {
    say("Not signed in: " + e.message);
  }
}

async function decide(section, decision) {
  if (busy) return;
  busy = true;
  const words = decision === "deny" ? "deny" : "allow once";
  try {
    say("Touch your passkey to " + words + "…");
    const begin = await post("/api/decide/begin", {
      daemon: Number(section.dataset.daemon), id: section.dataset.id, hash: section.dataset.hash, decision: decision,
    });
    const a = await assert(begin.challenge, begin.rpId, begin.timeout);
    const done = await post("/api/decide/finish", { nonce: begin.statement.nonce, assertion: a });
    if (done.note) {
      // The two-person rule: this allow counted; another person must too.
      say("Waiting for another person: " + section.dataset.id + " (" + done.note + ")");
      section.dataset.decided = "partial";
      const allow = section.querySelector("button.allow");
      if (allow) allow.disabled = true;
      return;
    }
    say((decision === "deny" ? "Denied" : "Allowed") + ": " + section.dataset.id);
    section.dataset.decided = decision;
    for (const b of section.querySelectorAll("button")) b.disabled = true;
  } catch (e) {
    say("Not decided: " + e.message);
  } finally {
    busy = false;
  }
}

function setupAllow(section, button) {
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
  setTimeout(() => {
    if (section.dataset.summary !== "1") {
      button.disabled = false;
      button.dataset.ready = "1";
    }
  }, ARM_DELAY_MS);
}

async function poll() {
  const mine = document.body.dataset.version;
  try {
    const r = await fetch("/api/state", { credentials: "same-origin" });
    if (r.status === 401 && !busy && !holding) {
      // Signed out: the passkey was revoked, or no daemon that knew it
      // is left.
      location.reload();
      return;
    }
    if (r.ok) {
      const j = await r.json();
      if (String(j.version) !== mine && !busy && !holding) {
        location.reload();
        return;
      }
    }
  } catch (e) {
    say("The web approver cannot be reached: " + e.message);
  }
  setTimeout(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  const signin = document.getElementById("signin");
  if (signin) {
    signin.addEventListener("click", signIn);
    document.body.dataset.ready = "1";
    return;
  }
  for (const section of document.querySelectorAll("section.request")) {
    section.querySelector("button.deny").addEventListener("click", () => decide(section, "deny"));
    // A request this passkey's person already allowed (the two-person
    // rule) has no allow button: the daemon would refuse a second allow.
    const allow = section.querySelector("button.allow");
    if (allow) setupAllow(section, allow);
  }
  const focus = document.body.dataset.focus;
  if (focus) {
    const el = document.getElementById(focus);
    if (el) el.scrollIntoView();
  }
  document.body.dataset.ready = "1";
  setTimeout(poll, POLL_MS);
});
