/** `verifySignature` accepts what the server signs (HMAC-SHA256 of "<t>.<body>"), either secret during a rotation. */

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";

import { SignatureVerificationError, verifySignature } from "../src/index.js";

const NOW = 1_765_000_000;
const BODY = '{"job": {"id": "job_1"}, "delivery": 1}';
const now = (): number => NOW + 10;

function signed(secrets: string[], at = NOW, body = BODY): Record<string, string> {
  const v1 = secrets.map((secret) => `v1=${createHmac("sha256", secret).update(`${at}.${body}`).digest("hex")}`);
  return { "QueueFlow-Signature": [`t=${at}`, ...v1].join(",") };
}

test("a delivery signed with the secret verifies, from text, bytes or Headers", () => {
  verifySignature("qfsec_one", signed(["qfsec_one"]), BODY, { now });
  verifySignature("qfsec_one", signed(["qfsec_one"]), new TextEncoder().encode(BODY), { now });
  verifySignature("qfsec_one", new Headers(signed(["qfsec_one"])), BODY, { now });
  verifySignature("qfsec_one", { "queueflow-signature": signed(["qfsec_one"])["QueueFlow-Signature"] }, BODY, { now });
});

test("during a rotation either secret verifies", () => {
  const headers = signed(["qfsec_new", "qfsec_old"]);
  verifySignature("qfsec_new", headers, BODY, { now });
  verifySignature("qfsec_old", headers, BODY, { now });
  verifySignature(["qfsec_other", "qfsec_old"], headers, BODY, { now });
});

const REFUSED: [string, string, Record<string, string>, string, RegExp][] = [
  ["a wrong secret", "qfsec_wrong", signed(["qfsec_one"]), BODY, /no signature matches/],
  ["an altered body", "qfsec_one", signed(["qfsec_one"]), BODY + " ", /no signature matches/],
  ["an old time", "qfsec_one", signed(["qfsec_one"], NOW - 300), BODY, /more than 300 s/],
  ["a future time", "qfsec_one", signed(["qfsec_one"], NOW + 400), BODY, /more than 300 s/],
  ["no header", "qfsec_one", {}, BODY, /no QueueFlow-Signature header/],
  ["no time", "qfsec_one", { "QueueFlow-Signature": "v1=abcd" }, BODY, /malformed/],
  ["no signature", "qfsec_one", { "QueueFlow-Signature": `t=${NOW}` }, BODY, /malformed/],
];

for (const [what, secret, headers, body, message] of REFUSED) {
  test(`${what} is refused`, () => {
    assert.throws(() => verifySignature(secret, headers, body, { now }), (error: unknown) => {
      assert.ok(error instanceof SignatureVerificationError);
      assert.match(error.message, message);
      return true;
    });
  });
}

test("the tolerance is the caller's", () => {
  verifySignature("qfsec_one", signed(["qfsec_one"], NOW - 3000), BODY, { now, toleranceSeconds: 3600 });
});
