import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

import { PACKAGE_DIR } from "./live.js";

test("src/generated/ is exactly what the spec generates (run `make sdks` after changing the spec)", async () => {
  // `npm run generate -- --check` compares without writing and exits non-zero on any difference.
  await promisify(execFile)("npm", ["run", "generate", "--", "--check"], { cwd: PACKAGE_DIR });
});
