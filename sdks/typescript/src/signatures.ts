/**
 * Verifying push deliveries: the server signs each POST to an endpoint the way Stripe signs its webhooks,
 * `QueueFlow-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>[,v1=…]` — one `v1=` per secret
 * that signs, so during a rotation a receiver that knows either secret verifies.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

import { SignatureVerificationError } from "./errors.js";

export const SIGNATURE_HEADER = "QueueFlow-Signature";

export interface VerifyOptions {
  /** How far the signature's time may be from now, in seconds (default 300): older is a replay. */
  toleranceSeconds?: number;
  /** Now, in Unix seconds (for tests; default the system clock). */
  now?: () => number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/**
 * Return if `body` (the request's raw bytes or text, exactly as received) was signed by the QueueFlow server holding
 * `secret` (or one of several) within the tolerance; throw `SignatureVerificationError` otherwise. Every `v1=` is
 * compared with `timingSafeEqual`.
 */
export function verifySignature(
  secret: string | readonly string[],
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): void {
  const header = headerOf(headers);
  if (header === undefined) throw new SignatureVerificationError(`no ${SIGNATURE_HEADER} header`);
  const { timestamp, signatures } = parse(header);
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? (() => Date.now() / 1000);
  if (Math.abs(now() - timestamp) > tolerance) {
    throw new SignatureVerificationError(`the signature's time is more than ${tolerance} s from now`);
  }
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const signed = Buffer.concat([Buffer.from(`${timestamp}.`, "utf8"), raw]);
  const expected = (typeof secret === "string" ? [secret] : [...secret]).map((key) =>
    createHmac("sha256", key).update(signed).digest(),
  );
  let matched = false;
  for (const signature of signatures) {
    const given = Buffer.from(signature, "hex");
    for (const candidate of expected) {
      // Every pair is compared, so the time taken says nothing of which one matched.
      if (given.length === candidate.length && timingSafeEqual(given, candidate)) matched = true;
    }
  }
  if (!matched) throw new SignatureVerificationError("no signature matches the secret");
}

function headerOf(headers: HeaderSource): string | undefined {
  if (headers instanceof Headers) return headers.get(SIGNATURE_HEADER) ?? undefined;
  const wanted = SIGNATURE_HEADER.toLowerCase();
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === wanted) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function parse(header: string): { timestamp: number; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const [key, ...rest] = part.trim().split("=");
    const value = rest.join("=");
    if (key === "t" && /^\d+$/.test(value)) timestamp = Number(value);
    else if (key === "v1" && /^[0-9a-f]+$/i.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) {
    throw new SignatureVerificationError(`a malformed ${SIGNATURE_HEADER} header: expected t=…,v1=…`);
  }
  return { timestamp, signatures };
}
