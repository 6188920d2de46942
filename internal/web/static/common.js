// What the web approver's two pages share (base64url, the status line, a
// JSON POST), loaded before each page's own script. Served from the binary,
// never inline.
"use strict";

function b64url(buf) {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function say(text) {
  document.getElementById("status").textContent = text;
}

// post sends body as JSON to path, with the extra headers, and returns
// the answer's JSON; it throws the refusal's error.
async function post(path, body, headers) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(headers || {}) },
    body: JSON.stringify(body),
    credentials: "omit",
  });
  const j = await r.json().catch(() => ({
    error: "the answer of the web approver could not be read (HTTP " + r.status + "); reload the page and try again",
  }));
  if (!r.ok) throw new Error(j.error || "the web approver refused it (HTTP " + r.status + ") without saying why; reload the page");
  return j;
}

// ENROL_HINT is the next step for a device without a passkey.
const ENROL_HINT = "To enrol one, run `sudo agent-sudo approve web enroll NAME` on the server and open the link it prints on this device.";

// plainError says in plain words why a step failed, with the next step.
// A passkey prompt's failure comes from the browser as a DOMException
// whose message names the WebAuthn specification, which tells a person
// nothing: its name says what happened. enrolling is set on the enrolment
// page, where there is no passkey yet to miss.
function plainError(e, enrolling) {
  switch (e && e.name) {
    case "NotAllowedError":
      if (enrolling) return "no passkey was made: the prompt was cancelled or timed out. Press the button to try again.";
      return "no passkey answered: this device has no passkey for this approver, or the prompt was cancelled or timed out. " +
        "Try again; if this device has none, " + ENROL_HINT.charAt(0).toLowerCase() + ENROL_HINT.slice(1);
    case "AbortError":
      return "the passkey prompt was cancelled. Try again.";
    case "InvalidStateError":
      return "this device already has a passkey for this approver: sign in with it on the web approver's page.";
    case "SecurityError":
      return "this address cannot use the approver's passkeys: open the address the web approver printed when it started.";
    case "NotSupportedError":
      return "this browser cannot use passkeys here: use a browser with passkeys (a current Chrome, Safari or Firefox).";
  }
  // Any other message, without an address the browser may have put in it.
  const m = String((e && e.message) || e).replace(/\s*(See:?\s*)?https?:\/\/\S+/g, "").trim();
  return m || "something went wrong; reload the page and try again";
}
