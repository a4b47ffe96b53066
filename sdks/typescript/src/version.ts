/** The package's version: one per release, shared with the server and the Python SDK (`make release` sets all). */
export const VERSION = "0.2.0";

/** Sent with every request (where the runtime lets a request set it: Node does, browsers may not). */
export const USER_AGENT = `queueflow-ts/${VERSION}`;
