// The enrolment page's script: served from the binary, never inline.
"use strict";

async function enroll() {
  const base = location.pathname;
  try {
    say("Follow your device's prompt…");
    const opts = (await post(base + "/begin", {})).publicKey;
    opts.challenge = unb64url(opts.challenge);
    opts.user.id = unb64url(opts.user.id);
    if (opts.excludeCredentials) for (const c of opts.excludeCredentials) c.id = unb64url(c.id);
    const cred = await navigator.credentials.create({ publicKey: opts });
    const resp = cred.response;
    const body = {
      id: cred.id, rawId: b64url(cred.rawId), type: cred.type,
      response: {
        clientDataJSON: b64url(resp.clientDataJSON),
        attestationObject: b64url(resp.attestationObject),
        transports: resp.getTransports ? resp.getTransports() : [],
      },
      clientExtensionResults: cred.getClientExtensionResults(),
    };
    const done = await post(base + "/finish", body);
    say("Enrolled: " + done.approver + ". You can close this page.");
    document.body.dataset.enrolled = "1";
  } catch (e) {
    say("Not enrolled: " + plainError(e, true));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("enroll").addEventListener("click", enroll);
  document.body.dataset.ready = "1";
});
